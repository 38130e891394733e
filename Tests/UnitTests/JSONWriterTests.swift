import Foundation
import XCTest

@testable import JSON

/// ``JSONWriter``: the text Foundation's `JSONEncoder` wrote (sorted keys), byte for byte.
final class JSONWriterTests: XCTestCase {
    private func written(_ value: JSONValue, escapingSlashes: Bool = false) throws -> String {
        String(decoding: try JSONWriter.text(of: value, escapingSlashes: escapingSlashes), as: UTF8.self)
    }

    /// What the earlier versions wrote: `JSONEncoder`, sorted keys, slashes escaped or not.
    private func foundation(_ value: JSONValue, escapingSlashes: Bool = false) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = escapingSlashes ? [.sortedKeys] : [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(FoundationJSON(value)), as: UTF8.self)
    }

    func testStringsEscapeExactlyQuotesBackslashesAndControlCharacters() throws {
        XCTAssertEqual(try written(.string("a\"b\\c/d")), #""a\"b\\c/d""#)
        XCTAssertEqual(try written(.string("a/b"), escapingSlashes: true), #""a\/b""#)
        XCTAssertEqual(
            try written(.string("\u{8}\u{C}\n\r\t\u{0}\u{1F}\u{7F}")), #""\b\f\n\r\t\u0000\u001f"# + "\u{7F}\"")
        XCTAssertEqual(try written(.string("é😀\u{2028}")), "\"é😀\u{2028}\"", "non-ASCII as UTF-8")
        var everyByte = ""
        for scalar in 0..<0x80 { everyByte.unicodeScalars.append(Unicode.Scalar(UInt8(scalar))) }
        everyByte += "é\u{2028}\u{FEFF}😀"
        for slashes in [false, true] {
            XCTAssertEqual(
                try written(.string(everyByte), escapingSlashes: slashes),
                try foundation(.string(everyByte), escapingSlashes: slashes))
        }
    }

    func testNumbersAreWrittenAsJSONEncoderWroteThem() throws {
        let numbers: [Double] = [
            0, -0.0, 1, -1, 0.5, 0.1, 100, 1e15, 1e16, 1e20, 1e21, 1e300, 1e-7, 1e-6, .leastNonzeroMagnitude,
            123_456_789_012_345_680,
            .greatestFiniteMagnitude, -2.5e-3, 1.0 / 3,
        ]
        for number in numbers {
            XCTAssertEqual(try written(.number(number)), try foundation(.number(number)), "\(number)")
        }
        XCTAssertEqual(try written(.number(1)), "1")
        XCTAssertEqual(try written(.number(1e300)), "1e+300")
        for whole: Int64 in [0, -1, 42, .max, .min] {
            XCTAssertEqual(try written(.integer(whole)), String(whole))
        }
        XCTAssertThrowsError(try written(.number(.nan)))
        XCTAssertThrowsError(try written(.array([.number(.infinity)])))
    }

    func testObjectsAreCompactWithMembersSortedByName() throws {
        let value: JSONValue = [
            "b": 1, "a": [true, false, nil], "B": ["z": "", "y": [:]], "a10": [], "a9": 0.25, "_": "x", "é": 2, "": 3,
        ]
        let text = try written(value)
        XCTAssertEqual(
            text, #"{"":3,"B":{"y":{},"z":""},"_":"x","a":[true,false,null],"a10":[],"a9":0.25,"b":1,"é":2}"#)
        XCTAssertEqual(text, try foundation(value))
        XCTAssertEqual(try StrictJSON.parse(Array(text.utf8)), value, "reads back equal")
    }

    func testMembersAndElementsWrittenOneByOneGetTheirCommas() {
        var writer = JSONWriter()
        writer.beginObject()
        writer.member("a")
        writer.strings(["x", "y"])
        writer.member("b")
        writer.beginArray()
        writer.element()
        writer.beginObject()
        writer.endObject()
        writer.element()
        writer.integer(UInt64.max)
        writer.endArray()
        writer.member("c")
        writer.string(nil as String?)
        writer.endObject()
        XCTAssertEqual(
            String(decoding: writer.bytes, as: UTF8.self), #"{"a":["x","y"],"b":[{},18446744073709551615],"c":null}"#)
    }

    func testWhatTheReaderGivesIsWrittenAsFoundationWroteItAndReadsBackEqual() throws {
        let text =
            #"{"list": [1, -0, 2.50, 1e-3, "a\u002fb\u0001", {"k": [null, true]}], "n": 12345678901234567890, "#
            + #""s": "\ud834\udd1e\r"}"#
        let value = try StrictJSON.parse(Array(text.utf8))
        for slashes in [false, true] {
            let again = try written(value, escapingSlashes: slashes)
            XCTAssertEqual(again, try foundation(value, escapingSlashes: slashes))
            XCTAssertEqual(try StrictJSON.parse(Array(again.utf8)), value)
        }
    }
}

/// A ``JSONValue`` as the earlier versions encoded it with Foundation (its old `Codable` conformance).
struct FoundationJSON: Encodable {
    let value: JSONValue
    init(_ value: JSONValue) { self.value = value }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch value {
        case .null: try container.encodeNil()
        case .bool(let flag): try container.encode(flag)
        case .integer(let whole): try container.encode(whole)
        case .number(let number): try container.encode(number)
        case .string(let text): try container.encode(text)
        case .array(let elements): try container.encode(elements.map(FoundationJSON.init))
        case .object(let members): try container.encode(members.mapValues(FoundationJSON.init))
        }
    }
}
