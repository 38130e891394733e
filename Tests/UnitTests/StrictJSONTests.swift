import XCTest

@testable import JSON

final class StrictJSONTests: XCTestCase {
    private func read(_ text: String, maxDepth: Int = 64) throws -> StrictJSON.Document {
        try StrictJSON.read(Array(text.utf8), maxDepth: maxDepth)
    }

    private func refusal(_ bytes: [UInt8], maxDepth: Int = 64, file: StaticString = #filePath, line: UInt = #line)
        -> String?
    {
        do {
            let document = try StrictJSON.read(bytes, maxDepth: maxDepth)
            XCTFail("read \(document) from \(bytes)", file: file, line: line)
            return nil
        } catch {
            return error.problem
        }
    }

    private func refusal(_ text: String, maxDepth: Int = 64, file: StaticString = #filePath, line: UInt = #line)
        -> String?
    {
        refusal(Array(text.utf8), maxDepth: maxDepth, file: file, line: line)
    }

    func testTopLevelMembersAndKindsAreReported() throws {
        let document = try read(
            #" { "a": true, "b": false, "c": null, "d": 0, "e": -0, "f": 12, "g": 1.5, "h": 1e-400, "#
                + #""i": "x\u00e9\ud83d\ude00", "j": [1, {"a": 2}], "k": {"l": []} } "#)
        XCTAssertEqual(document.kind, .object)
        XCTAssertEqual(
            document.members,
            [
                .init(name: "a", kind: .true), .init(name: "b", kind: .false), .init(name: "c", kind: .null),
                .init(name: "d", kind: .integer(isZero: true)), .init(name: "e", kind: .integer(isZero: true)),
                .init(name: "f", kind: .integer(isZero: false)), .init(name: "g", kind: .fraction),
                .init(name: "h", kind: .fraction), .init(name: "i", kind: .string), .init(name: "j", kind: .array),
                .init(name: "k", kind: .object),
            ])
        XCTAssertEqual(try read("[true]"), StrictJSON.Document(kind: .array, members: []))
        XCTAssertEqual(try read("\"x\""), StrictJSON.Document(kind: .string, members: []))
        XCTAssertEqual(try read("{}"), StrictJSON.Document(kind: .object, members: []))
    }

    func testEscapedMemberNamesAreDecoded() throws {
        XCTAssertEqual(try read(#"{"succ\u0065ss": true}"#).members, [.init(name: "success", kind: .true)])
    }

    func testDuplicateMemberNamesAreRefusedAtAnyDepth() {
        XCTAssertEqual(refusal(#"{"success": true, "success": false}"#), "duplicate member name")
        XCTAssertEqual(refusal(#"{"success": true, "succ\u0065ss": false}"#), "duplicate member name")
        XCTAssertEqual(refusal(#"[{"a": 1, "b": {"c": 1, "c": 2}}]"#), "duplicate member name")
        XCTAssertNoThrow(try read(#"{"a": {"a": 1}, "b": {"a": 1}}"#), "the same name in different objects")
    }

    func testWhatRFC8259DoesNotAllowIsRefused() {
        XCTAssertNotNil(refusal(""))
        XCTAssertNotNil(refusal("   "))
        XCTAssertNotNil(refusal("{"))
        XCTAssertNotNil(refusal(#"{"a":1,}"#))
        XCTAssertNotNil(refusal("[1,]"))
        XCTAssertNotNil(refusal("[1 2]"))
        XCTAssertNotNil(refusal("01"))
        XCTAssertNotNil(refusal("1."))
        XCTAssertNotNil(refusal("1e"))
        XCTAssertNotNil(refusal("+1"))
        XCTAssertNotNil(refusal("tru"))
        XCTAssertNotNil(refusal("NaN"))
        XCTAssertNotNil(refusal("{a: 1}"))
        XCTAssertNotNil(refusal("{'a': 1}"))
        XCTAssertNotNil(refusal("true false"))
        XCTAssertNotNil(refusal("\"a\u{1}\""))
        XCTAssertNotNil(refusal(#""\x""#))
        XCTAssertEqual(refusal(#""\ud800""#), "unpaired surrogate escape")
        XCTAssertEqual(refusal(#""\udc00\ud800""#), "unpaired surrogate escape")
        XCTAssertEqual(refusal([0x22, 0xC3, 0x28, 0x22]), "string is not valid UTF-8")
        XCTAssertNotNil(refusal([0xEF, 0xBB, 0xBF] + Array("{}".utf8)), "a byte-order mark")
    }

    func testNestingIsBounded() {
        XCTAssertNoThrow(try read(String(repeating: "[", count: 8) + String(repeating: "]", count: 8), maxDepth: 8))
        XCTAssertEqual(
            refusal(String(repeating: "[", count: 9) + String(repeating: "]", count: 9), maxDepth: 8),
            "nested deeper than 8")
        // Deep input costs no stack: it is refused, not overflowed.
        XCTAssertNotNil(refusal(String(repeating: "[", count: 100_000)))
    }

    func testErrorsNameTheOffsetNeverTheText() {
        do {
            _ = try StrictJSON.read(Array(#"{"token": "Kq7s3cr3t", "token": 1}"#.utf8))
            XCTFail("read a duplicate")
        } catch {
            XCTAssertEqual(error.description, "duplicate member name at byte 23")
        }
    }
}

/// ``StrictJSON/parse(_:maxDepth:)``: the whole value, as strict as ``StrictJSON/read(_:maxDepth:)``.
final class StrictJSONParseTests: XCTestCase {
    private func parse(_ text: String, maxDepth: Int = 64) throws -> JSONValue {
        try StrictJSON.parse(Array(text.utf8), maxDepth: maxDepth)
    }

    private func refusal(_ bytes: [UInt8], maxDepth: Int = 64, file: StaticString = #filePath, line: UInt = #line)
        -> StrictJSON.SyntaxError?
    {
        do {
            let value = try StrictJSON.parse(bytes, maxDepth: maxDepth)
            XCTFail("parsed \(value)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    func testEveryKindOfValueIsGivenWhole() throws {
        XCTAssertEqual(
            try parse(
                #" { "a": true, "b": false, "c": null, "d": 0, "e": -0, "f": -12, "g": 1.5, "h": 1e-400, "#
                    + #""i": "x\u00e9\ud83d\ude00\n\"\\\/", "j": [1, {"a": 2}, []], "k": {"l": {}} } "#),
            .object([
                "a": .bool(true), "b": .bool(false), "c": .null, "d": .integer(0), "e": .integer(0), "f": .integer(-12),
                "g": .number(1.5), "h": .number(0), "i": .string("xé😀\n\"\\/"),
                "j": .array([.integer(1), .object(["a": .integer(2)]), .array([])]), "k": .object(["l": .object([:])]),
            ]))
        XCTAssertEqual(try parse("[]"), .array([]))
        XCTAssertEqual(try parse(#" "\u0000\t" "#), .string("\u{0}\t"))
        XCTAssertEqual(try parse("null"), .null)
        XCTAssertEqual(try parse("[[[1]], 2]"), .array([.array([.array([.integer(1)])]), .integer(2)]))
    }

    func testIntegersUpTo64BitsStayIntegersOthersAreNumbers() throws {
        XCTAssertEqual(try parse("9223372036854775807"), .integer(.max))
        XCTAssertEqual(try parse("-9223372036854775808"), .integer(.min))
        XCTAssertEqual(try parse("9223372036854775808"), .number(9_223_372_036_854_775_808))
        XCTAssertEqual(try parse("1.0"), .number(1))
        XCTAssertEqual(try parse("1E2"), .number(100))
        XCTAssertEqual(try parse("-2.5e-3"), .number(-0.0025))
        XCTAssertEqual(refusal(Array("[1, 1e400]".utf8))?.description, "number out of range at byte 4")
        XCTAssertEqual(refusal(Array("-1e309".utf8))?.problem, StrictJSON.numberOutOfRange)
        XCTAssertEqual(
            refusal(Array("[1e400, 2e400 x".utf8))?.description, "expected ',' or ']' at byte 14", "syntax first")
    }

    func testItRefusesWhatReadRefusesWithTheSameError() {
        let inputs: [[UInt8]] =
            [
                "", "{", #"{"a":1,}"#, "[1 2]", "01", "1.", "+1", "tru", "NaN", "{a: 1}", "true false", "\"a\u{1}\"",
                #""\x""#, #""\ud800""#, #""\udc00""#, #""\ud800\u0041""#, #"{"a": 1, "a": 2}"#,
                #"[{"b": {"c": 1, "c\u0000": 2, "c": 3}}]"#, String(repeating: "[", count: 65) + "]",
            ].map { Array($0.utf8) } + [
                [0x22, 0xC3, 0x28, 0x22], [0xEF, 0xBB, 0xBF, 0x7B, 0x7D], [0x22, 0xED, 0xA0, 0x80, 0x22],
            ]
        for input in inputs {
            let expected: StrictJSON.SyntaxError?
            do {
                _ = try StrictJSON.read(input)
                expected = nil
            } catch {
                expected = error
            }
            XCTAssertNotNil(expected, "\(input)")
            XCTAssertEqual(refusal(input), expected, "\(input)")
        }
        XCTAssertEqual(
            refusal(Array(#"{"a": 1, "b": [2], "a": 3}"#.utf8))?.description, "duplicate member name at byte 19")
    }

    func testNestingIsBoundedAndCostsNoStack() throws {
        let eight = String(repeating: "[", count: 8) + String(repeating: "]", count: 8)
        var expected = JSONValue.array([])
        for _ in 1..<8 { expected = .array([expected]) }
        XCTAssertEqual(try parse(eight, maxDepth: 8), expected)
        XCTAssertEqual(refusal(Array(("[" + eight + "]").utf8), maxDepth: 8)?.problem, "nested deeper than 8")
        XCTAssertEqual(
            refusal(Array(String(repeating: "{\"a\":", count: 100_000).utf8))?.problem, "nested deeper than 64")
    }
}
