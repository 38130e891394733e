import Foundation
import XCTest

@testable import Control
@testable import JSON
@testable import Sessions

final class ControlProtocolTests: XCTestCase {
    private func decode(_ text: String) throws -> ControlRequest {
        try ControlRequest.decode(line: Array(text.utf8))
    }

    private func decodeError(_ text: String, file: StaticString = #filePath, line: UInt = #line)
        -> ControlProtocolError?
    {
        do {
            let request = try decode(text)
            XCTFail("decoded \(request) from \(text)", file: file, line: line)
            return nil
        } catch let error as ControlProtocolError {
            XCTAssertEqual(error.code, .badRequest, file: file, line: line)
            return error
        } catch {
            XCTFail("unexpected error \(error)", file: file, line: line)
            return nil
        }
    }

    private func jsonObject(_ bytes: [UInt8]) throws -> [String: Any] {
        XCTAssertEqual(bytes.last, UInt8(ascii: "\n"))
        XCTAssertEqual(bytes.filter { $0 == UInt8(ascii: "\n") }.count, 1, "exactly one line")
        return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(bytes.dropLast())) as? [String: Any])
    }

    // MARK: Requests

    func testEveryRequestRoundTrips() throws {
        let requests: [ControlRequest] = [
            .register(key: SessionKey("s3cr3t/+&=?é"), endpoints: ["auth", "billing"], label: "web app"),
            .register(key: SessionKey("k"), endpoints: ["auth"], label: nil),
            .unregister(id: "0123456789abcdef"),
            .list,
            .status,
            .end(.session(id: "0123456789abcdef")),
            .end(.all),
            .reload,
            .report(runID: nil),
            .report(runID: "0123456789abcdef0123456789abcdef"),
        ]
        for request in requests {
            let line = request.encodedLine()
            XCTAssertEqual(line.last, UInt8(ascii: "\n"))
            XCTAssertEqual(try ControlRequest.decode(line: line.dropLast()), request, "\(request)")
        }
    }

    func testRegisterDecodesTheDocumentedShape() throws {
        let request = try decode(#"{"op":"register","key":"abc","endpoints":["auth"],"label":"x"}"#)
        guard case .register(let key, let endpoints, let label) = request else { return XCTFail("\(request)") }
        XCTAssertEqual(key.exposedSecret, "abc")
        XCTAssertEqual(endpoints, ["auth"])
        XCTAssertEqual(label, "x")
        XCTAssertEqual(
            try decode(#"{"op":"register","key":"abc","endpoints":["a"],"label":null}"#),
            .register(key: SessionKey("abc"), endpoints: ["a"], label: nil))
        XCTAssertEqual(try decode(#" { "all" : true , "op" : "end" } "#), .end(.all))
    }

    func testMalformedInputIsABadRequestNotACrash() {
        for text in [
            "", "{", "not json", "[1,2]", "\"list\"", "42", "null", #"{"op":"list""#, "{\"op\":\"li\u{1}st\"}",
        ] {
            XCTAssertNotNil(decodeError(text), text)
        }
        XCTAssertEqual(decodeError("{}")?.message, "missing field 'op'")
        XCTAssertEqual(decodeError(#"{"op":7}"#)?.message, "field 'op' must be a string")
    }

    func testAnUnknownOpIsRefusedWithoutQuotingIt() {
        let error = decodeError(#"{"op":"explode"}"#)
        XCTAssertEqual(
            error?.message, "unknown op (expected register, unregister, list, status, end, reload or report)")
    }

    func testMissingAndWrongTypedFieldsAreNamed() {
        XCTAssertEqual(decodeError(#"{"op":"register","endpoints":["a"]}"#)?.message, "op 'register' needs field 'key'")
        XCTAssertEqual(decodeError(#"{"op":"register","key":"k"}"#)?.message, "op 'register' needs field 'endpoints'")
        XCTAssertEqual(
            decodeError(#"{"op":"register","key":5,"endpoints":["a"]}"#)?.message, "field 'key' must be a string")
        XCTAssertEqual(
            decodeError(#"{"op":"register","key":"k","endpoints":"a"}"#)?.message,
            "field 'endpoints' must be an array of strings")
        XCTAssertEqual(
            decodeError(#"{"op":"register","key":"k","endpoints":[1]}"#)?.message,
            "field 'endpoints' must be an array of strings")
        XCTAssertNotNil(decodeError(#"{"op":"register","key":"k","endpoints":[]}"#))
        XCTAssertNotNil(decodeError(#"{"op":"register","key":"k","endpoints":["a","a"]}"#))
        XCTAssertNotNil(decodeError(#"{"op":"register","key":"","endpoints":["a"]}"#))
        XCTAssertNotNil(decodeError(#"{"op":"register","key":"k","endpoints":["a"],"label":3}"#))
        XCTAssertEqual(decodeError(#"{"op":"unregister"}"#)?.message, "op 'unregister' needs field 'id'")
        XCTAssertEqual(decodeError(#"{"op":"unregister","id":12}"#)?.message, "field 'id' must be a string")
        XCTAssertNotNil(decodeError(#"{"op":"end"}"#))
        XCTAssertNotNil(decodeError(#"{"op":"end","all":false}"#))
        XCTAssertNotNil(decodeError(#"{"op":"end","all":"yes"}"#))
        XCTAssertNotNil(decodeError(#"{"op":"end","all":true,"id":"0123456789abcdef"}"#))
    }

    func testUnknownFieldsAreRefusedNamingWhatTheOpTakesNeverTheirText() {
        XCTAssertEqual(
            decodeError(#"{"op":"list","verbose":true}"#)?.message,
            "a field op 'list' does not take (it takes none but 'op')")
        XCTAssertEqual(
            decodeError(#"{"op":"register","key":"k","endpoints":["a"],"lable":"x"}"#)?.message,
            "a field op 'register' does not take (it takes 'op', 'key', 'endpoints', 'label')")
        // A key pasted where a name goes is not sent back.
        let secret = "s3cr3t-session-key-0123456789"
        let message = decodeError(#"{"op":"report","\#(secret)":1}"#)?.message ?? ""
        XCTAssertFalse(message.contains(secret), message)
        XCTAssertFalse(decodeError(#"{"op":"\#(secret)"}"#)?.message.contains(secret) ?? true)
    }

    func testAFieldGivenTwiceOrInvalidUTF8IsRefusedNotGuessedAt() {
        // JSONDecoder would keep one of the two ids without a word: which session is meant?
        XCTAssertEqual(
            decodeError(#"{"op":"unregister","id":"aaaa","id":"bbbb"}"#)?.message,
            "the request is not valid JSON (duplicate member name at byte 31)")
        XCTAssertNotNil(decodeError(#"{"op":"register","key":"k","key":"TOPSECRET","endpoints":["a"]}"#))
        let invalidUTF8 = Array(#"{"op":"list","x":""#.utf8) + [0xFF] + Array(#""}"#.utf8)
        XCTAssertThrowsError(try ControlRequest.decode(line: invalidUTF8))
    }

    func testKeyLimitsAndNoKeyInAnyErrorMessage() {
        let secret = "TOPSECRET-" + String(repeating: "x", count: ControlRequest.maxKeyBytes)
        let tooLong = decodeError(#"{"op":"register","key":"\#(secret)","endpoints":["a"]}"#)
        XCTAssertNotNil(tooLong)
        XCTAssertFalse(tooLong?.message.contains("TOPSECRET") ?? true)
        // Wrong types and syntax errors next to the key do not quote it either.
        for text in [
            #"{"op":"register","key":"TOPSECRET","endpoints":"TOPSECRET"}"#,
            #"{"op":"register","key":"TOPSECRET","endpoints":["a"],"extra":1}"#,
            #"{"op":"register","key":"TOPSECRET"  x }"#,
            #"{"op":"register","key":"TOPSECRET\u0001","endpoints":["a"]}"#,
        ] {
            let error = decodeError(text)
            XCTAssertFalse(error?.message.contains("TOPSECRET") ?? true, "\(String(describing: error))")
        }
        let exact = String(repeating: "k", count: ControlRequest.maxKeyBytes)
        XCTAssertNoThrow(try decode(#"{"op":"register","key":"\#(exact)","endpoints":["a"]}"#))
    }

    func testTheKeyNeverPrints() {
        let request = ControlRequest.register(key: SessionKey("TOPSECRET"), endpoints: ["a"], label: "l")
        var dumped = ""
        dump(request, to: &dumped)
        for text in ["\(request)", String(describing: request), String(reflecting: request), dumped] {
            XCTAssertFalse(text.contains("TOPSECRET"), text)
        }
        XCTAssertTrue("\(request)".contains("<redacted>"))
    }

    // MARK: Responses

    func testResponsesRoundTrip() throws {
        let sessions = [
            ControlSessionInfo(
                id: "0123456789abcdef", label: "web", endpoints: ["auth"], ownerUID: 1000,
                registeredAt: 1_700_000_000_123_456, ageSeconds: 42, attempts: 0, lastOutcome: nil)
        ]
        let responses: [ControlResponse] = [
            .success, .registered(id: "0123456789abcdef"), .sessions(sessions), .sessions([]),
            .status(["state": "running", "counts": ["sessions": 3], "ratio": 0.5, "last_run": nil]),
            .ended(report: ["ended": 1, "failed": 0]),
            .failure(.notFound, "no session 0123456789abcdef"),
            .failure(ControlErrorCode(rawValue: "from-the-future"), "x"),
        ]
        for response in responses {
            let line = response.encodedLine()
            XCTAssertEqual(try ControlResponse.decode(line: line.dropLast()), response)
        }
    }

    func testResponsesHaveTheDocumentedShape() throws {
        XCTAssertEqual(String(decoding: ControlResponse.success.encodedLine(), as: UTF8.self), "{\"ok\":true}\n")
        XCTAssertEqual(
            String(decoding: ControlResponse.registered(id: "00000000000000ff").encodedLine(), as: UTF8.self),
            "{\"id\":\"00000000000000ff\",\"ok\":true}\n")
        let failure = try jsonObject(ControlResponse.failure(.tooLarge, "too long").encodedLine())
        XCTAssertEqual(failure["ok"] as? Bool, false)
        XCTAssertEqual(failure["code"] as? String, "too-large")
        XCTAssertEqual(failure["error"] as? String, "too long")
    }

    func testListItemsCarryExactlyTheDocumentedKeysAndNoSessionKey() throws {
        let info = ControlSessionInfo(
            id: "0123456789abcdef", label: nil, endpoints: ["auth", "billing"], ownerUID: 1000,
            registeredAt: 1_700_000_000_000_000, ageSeconds: 5, attempts: 2, lastOutcome: "failed")
        let object = try jsonObject(ControlResponse.sessions([info]).encodedLine())
        let items = try XCTUnwrap(object["sessions"] as? [[String: Any]])
        XCTAssertEqual(
            Set(items[0].keys),
            [
                "id", "label", "endpoints", "owner_uid", "registered_at", "age_sec", "attempts", "last_outcome",
                "unconfigured_endpoints",
            ])
        XCTAssertTrue(items[0]["label"] is NSNull, "absent label is an explicit null")
        XCTAssertEqual(items[0]["registered_at"] as? Int, 1_700_000_000_000_000)
        XCTAssertFalse(items[0].keys.contains("key"))
        let mirrorLabels = Mirror(reflecting: info).children.compactMap(\.label)
        XCTAssertFalse(mirrorLabels.contains { $0.lowercased().contains("key") }, "the type has no key field")
    }

    func testAnUnencodableStatusBecomesAnInternalError() throws {
        let object = try jsonObject(ControlResponse.status(["x": .number(.nan)]).encodedLine())
        XCTAssertEqual(object["ok"] as? Bool, false)
        XCTAssertEqual(object["code"] as? String, "internal")
    }

    func testGarbageRepliesAreErrorsForTheClient() {
        for text in ["", "{", "[]", #"{"id":"x"}"#, #"{"ok":"yes"}"#] {
            XCTAssertThrowsError(try ControlResponse.decode(line: Array(text.utf8)), text)
        }
    }

    // MARK: The wire format, byte for byte

    func testRequestsAreWrittenAsTheEarlierVersionsWroteThem() {
        let lines: [(ControlRequest, String)] = [
            (
                .register(key: SessionKey("s3cr3t/+\"é\u{1}"), endpoints: ["auth", "a/b"], label: "web app"),
                #"{"endpoints":["auth","a/b"],"key":"s3cr3t/+\"é\u0001","label":"web app","op":"register"}"#
            ),
            (
                .register(key: SessionKey("k"), endpoints: ["auth"], label: nil),
                #"{"endpoints":["auth"],"key":"k","op":"register"}"#
            ),
            (.unregister(id: "0123456789abcdef"), #"{"id":"0123456789abcdef","op":"unregister"}"#),
            (.list, #"{"op":"list"}"#), (.status, #"{"op":"status"}"#), (.reload, #"{"op":"reload"}"#),
            (.end(.session(id: "00000000000000ff")), #"{"id":"00000000000000ff","op":"end"}"#),
            (.end(.all), #"{"all":true,"op":"end"}"#),
            (.report(runID: nil), #"{"op":"report"}"#), (.report(runID: "ab"), #"{"op":"report","run_id":"ab"}"#),
        ]
        for (request, text) in lines {
            XCTAssertEqual(String(decoding: request.encodedLine(), as: UTF8.self), text + "\n")
        }
    }

    func testResponsesAreWrittenAsTheEarlierVersionsWroteThem() throws {
        let info = ControlSessionInfo(
            id: "0123456789abcdef", label: nil, endpoints: ["auth", "billing"], ownerUID: 1000,
            registeredAt: 1_700_000_000_000_000, ageSeconds: 5, attempts: 2, lastOutcome: "failed",
            unconfiguredEndpoints: ["billing"])
        let lines: [(ControlResponse, String)] = [
            (.success, #"{"ok":true}"#),
            (.registered(id: "00000000000000ff"), #"{"id":"00000000000000ff","ok":true}"#),
            (
                .failure(.notFound, "no session \"x\"\n"),
                #"{"code":"not-found","error":"no session \"x\"\n","ok":false}"#
            ),
            (.sessions([]), #"{"ok":true,"sessions":[]}"#),
            (
                .sessions([info, info]),
                #"{"ok":true,"sessions":[{"age_sec":5,"attempts":2,"endpoints":["auth","billing"],"id":"0123456789abcdef","#
                    + #""label":null,"last_outcome":"failed","owner_uid":1000,"registered_at":1700000000000000,"#
                    + #""unconfigured_endpoints":["billing"]},"#
                    + #"{"age_sec":5,"attempts":2,"endpoints":["auth","billing"],"#
                    + #""id":"0123456789abcdef","label":null,"last_outcome":"failed","owner_uid":1000,"#
                    + #""registered_at":1700000000000000,"unconfigured_endpoints":["billing"]}]}"#
            ),
            (
                .status(["state": "running", "counts": ["sessions": 3], "path": "/run/x", "ratio": 0.5, "none": nil]),
                #"{"ok":true,"status":{"counts":{"sessions":3},"none":null,"path":"/run/x","ratio":0.5,"state":"running"}}"#
            ),
            (
                .reloaded(files: ["/etc/a.conf"], notes: []),
                #"{"ok":true,"report":{"files":["/etc/a.conf"],"notes":[]}}"#
            ),
        ]
        for (response, text) in lines {
            XCTAssertEqual(String(decoding: response.encodedLine(), as: UTF8.self), text + "\n")
            XCTAssertEqual(try ControlResponse.decode(line: Array(text.utf8)), response, text)
        }
        // The same text as Foundation's JSONEncoder gives for the members the old Codable conformance wrote.
        let legacy: JSONValue = [
            "ok": true,
            "sessions": [
                [
                    "age_sec": 5, "attempts": 2, "endpoints": ["auth", "billing"], "id": "0123456789abcdef",
                    "label": nil,
                    "last_outcome": "failed", "owner_uid": 1000, "registered_at": 1_700_000_000_000_000,
                    "unconfigured_endpoints": ["billing"],
                ]
            ],
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        XCTAssertEqual(
            String(decoding: ControlResponse.sessions([info]).encodedLine(), as: UTF8.self),
            String(decoding: try encoder.encode(FoundationJSON(legacy)), as: UTF8.self) + "\n")
    }

    func testRepliesOfANewerDaemonAreReadAndWhatIsMissingOrWrongIsRefused() throws {
        let newer = try ControlResponse.decode(
            line: Array(
                #"{"ok":true,"extra":{"x":1},"sessions":[{"id":"a","endpoints":[],"owner_uid":0,"registered_at":1,"#
                    .utf8)
                + Array(
                    #""age_sec":2,"attempts":3,"label":null,"last_outcome":null,"colour":"red"}],"code":null}"#.utf8))
        XCTAssertEqual(
            newer,
            .sessions([
                ControlSessionInfo(
                    id: "a", label: nil, endpoints: [], ownerUID: 0, registeredAt: 1, ageSeconds: 2, attempts: 3,
                    lastOutcome: nil, unconfiguredEndpoints: [])
            ]).with(unconfiguredEndpoints: nil))
        for text in [
            #"{"ok":true,"sessions":[{"id":"a"}]}"#, #"{"ok":true,"sessions":{}}"#, #"{"ok":true,"id":1}"#,
            #"{"ok":true,"sessions":[{"id":"a","endpoints":[],"owner_uid":-1,"registered_at":1,"age_sec":2,"attempts":3}]}"#,
            #"{"ok":true,"ok":false}"#, #"{"ok":null}"#, #"{"ok":true,"status":1e999}"#,
        ] {
            XCTAssertThrowsError(try ControlResponse.decode(line: Array(text.utf8)), text)
        }
    }

    func testANullFieldCountsAsAbsentAndAnUnknownOneIsRefused() {
        XCTAssertEqual(try decode(#"{"op":"report","run_id":null}"#), .report(runID: nil))
        XCTAssertEqual(decodeError(#"{"op":null}"#)?.message, "missing field 'op'")
        XCTAssertEqual(
            decodeError(#"{"op":"register","key":null,"endpoints":["a"]}"#)?.message, "op 'register' needs field 'key'")
        XCTAssertEqual(
            decodeError(#"{"op":"list","zz":1,"aa":null}"#)?.message,
            "a field op 'list' does not take (it takes none but 'op')")
        XCTAssertEqual(decodeError(#"[{"op":"list"}]"#)?.message, "a request must be a JSON object")
        XCTAssertEqual(decodeError(#"{"op":"end","all":1}"#)?.message, "field 'all' must be true or false")
        XCTAssertEqual(
            decodeError(#"{"op":"list","x":[[[[[[[[1]]]]]]]]}"#)?.message,
            "the request is not valid JSON (nested deeper than 8 at byte 24)")
        XCTAssertEqual(
            decodeError(#"{"op":"list","x":1e400}"#)?.message,
            "the request is not valid JSON (number out of range at byte 17)")
    }
}

extension ControlResponse {
    fileprivate func with(unconfiguredEndpoints: [String]?) -> ControlResponse {
        var copy = self
        copy.sessions = copy.sessions?.map { info in
            var info = info
            info.unconfiguredEndpoints = unconfiguredEndpoints
            return info
        }
        return copy
    }
}
