import XCTest

@testable import Configuration
@testable import Endpoints
@testable import Sessions
@testable import Vocabulary

final class ReplyJudgeTests: XCTestCase {
    private let endpoint = EndpointConfiguration(name: "auth", url: "http://h/{session}")

    private func judge(_ status: Int, _ body: String, truncated: Bool = false, rule: SuccessRule = .jsonSuccess)
        -> ReplyJudge.Verdict
    {
        var endpoint = self.endpoint
        endpoint.success = rule
        let result = HTTPResult(
            outcome: .response(status: status, body: Array(body.utf8), truncated: truncated, retryAfter: nil),
            duration: .zero, reusedConnection: false)
        return ReplyJudge.judge(result, endpoint: endpoint)
    }

    func testTrueOrANonZeroIntegerEndsTheSession() {
        XCTAssertEqual(judge(200, #"{"success": true}"#), .ended(status: 200))
        XCTAssertEqual(judge(200, #"{"success": 1, "other": [1,2]}"#), .ended(status: 200))
        XCTAssertEqual(judge(200, #"{"success": -2}"#), .ended(status: 200))
        XCTAssertEqual(judge(200, #" {"data": {"success": false}, "succ\u0065ss": true} "#), .ended(status: 200))
        XCTAssertEqual(judge(200, "{\"success\":true}\r\n"), .ended(status: 200), "the fast path")
        XCTAssertEqual(judge(200, #"{"success": true}x"#).isRejected, true, "not JSON, fast path or not")
    }

    /// Each of these was counted as ended before: a session deleted on a guess.
    func testAmbiguousRepliesAreRejectedWithAReason() {
        let cases: [(String, String)] = [
            (#"{"success":"false"}"#, #"reply's "success" is a string, not true or a non-zero integer"#),
            (#"{"success":"yes"}"#, #"reply's "success" is a string, not true or a non-zero integer"#),
            (#""0""#, "reply is a string, not a JSON object"),
            (#"{"ok":false}"#, #"reply has no "success" key"#),
            ("[false]", "reply is an array, not a JSON object"),
            ("[true]", "reply is an array, not a JSON object"),
            ("1e-400", "reply is a number with a fraction or exponent, not a JSON object"),
            (
                #"{"success":1e-400}"#,
                #"reply's "success" is a number with a fraction or exponent, not true or a non-zero integer"#
            ),
            (
                #"{"success":1.0}"#,
                #"reply's "success" is a number with a fraction or exponent, not true or a non-zero integer"#
            ),
            (#"{"success":{}}"#, #"reply's "success" is an object, not true or a non-zero integer"#),
            (#"{"success":[true]}"#, #"reply's "success" is an array, not true or a non-zero integer"#),
            (#"{"success":null}"#, #"reply's "success" is null, not true or a non-zero integer"#),
            (#"{"success":0}"#, #"reply says "success": 0"#),
            (#"{"success":-0}"#, #"reply says "success": 0"#),
            (#"{"success":true,"success":false}"#, "reply is not valid JSON (duplicate member name at byte 16)"),
            (#"{"success":false,"success":true}"#, "reply is not valid JSON (duplicate member name at byte 17)"),
            (#"{"success":true,"data":{"a":1,"a":2}}"#, "reply is not valid JSON (duplicate member name at byte 30)"),
        ]
        for (body, reason) in cases {
            XCTAssertEqual(judge(200, body), .rejected(status: 200, reason: reason), body)
        }
    }

    func testFalseMissingOrInvalidIsRejected() {
        XCTAssertEqual(
            judge(200, #"{"success": false}"#), .rejected(status: 200, reason: "reply says \"success\": false"))
        XCTAssertEqual(judge(200, #"{"ok": true}"#), .rejected(status: 200, reason: "reply has no \"success\" key"))
        XCTAssertEqual(
            judge(200, "not json{"),
            .rejected(status: 200, reason: "reply is not valid JSON (invalid literal at byte 0)"))
        XCTAssertEqual(
            judge(200, ""), .rejected(status: 200, reason: "reply is not valid JSON (unexpected end of text at byte 0)")
        )
        XCTAssertEqual(judge(200, #"{"success": true}"#, truncated: true).isRejected, true)
    }

    func testAReasonNeverQuotesTheReply() {
        for body in [#"{"success":"KEY-Kq7s3cr3t"}"#, #"KEY-Kq7s3cr3t"#, #"{"KEY-Kq7s3cr3t":1,"KEY-Kq7s3cr3t":2}"#] {
            guard case .rejected(_, let reason) = judge(200, body) else { return XCTFail(body) }
            XCTAssertFalse(reason.contains("Kq7s3cr3t"), reason)
        }
    }

    func testGoneStatusesCountAsEnded() {
        XCTAssertEqual(judge(404, "nope"), .ended(status: 404))
        XCTAssertEqual(judge(410, ""), .ended(status: 410))
    }

    func testServerErrorsAndThrottlingAreRetryable() {
        if case .retryable(_, let status, _) = judge(503, "") { XCTAssertEqual(status, 503) } else { XCTFail() }
        if case .retryable = judge(429, "") {} else { XCTFail() }
        XCTAssertEqual(judge(401, "").isRejected, true)
    }

    func testAny2xxRule() {
        XCTAssertEqual(judge(204, "", rule: .anyTwoHundred), .ended(status: 204))
        XCTAssertEqual(judge(200, "not json", rule: .anyTwoHundred), .ended(status: 200))
        XCTAssertEqual(judge(403, "", rule: .anyTwoHundred).isRejected, true)
    }

    func testTransportFailures() {
        func failure(_ kind: TransportFailure.Kind) -> ReplyJudge.Verdict {
            ReplyJudge.judge(
                HTTPResult(
                    outcome: .failure(TransportFailure(kind: kind, peer: "h:80", detail: "x")), duration: .zero,
                    reusedConnection: false), endpoint: endpoint)
        }
        if case .retryable = failure(.connect) {} else { XCTFail() }
        if case .retryable = failure(.timeout) {} else { XCTFail() }
        if case .failed = failure(.tls) {} else { XCTFail("a certificate problem does not fix itself") }
    }
}

extension ReplyJudge.Verdict {
    var isRejected: Bool {
        if case .rejected = self { return true }
        return false
    }
}

final class EndSessionCallTests: XCTestCase {
    private func call(url: String, body: String? = nil, headers: [String] = [], key: String) -> EndSessionCall {
        var endpoint = EndpointConfiguration(name: "e", url: url)
        endpoint.body = body
        endpoint.headers = headers
        return EndSessionCall(
            session: Session(id: .random(), key: SessionKey(key), endpoints: ["e"], ownerUID: 0, registeredAt: 0),
            endpoint: endpoint)
    }

    func testKeyIsPercentEncodedInTheURLAndHiddenInTheRedactedOne() {
        let c = call(url: "https://h.example/user/{session}/endsession", key: "a b/c?d&é")
        let request = c.request(timeout: .seconds(1), token: nil)
        XCTAssertEqual(request.url, "https://h.example/user/a%20b%2Fc%3Fd%26%C3%A9/endsession")
        XCTAssertEqual(c.redactedURL, "https://h.example/user/<redacted>/endsession")
        XCTAssertEqual(request.redactedURL, c.redactedURL)
    }

    func testJSONBodyEscapesTheKeyAndTokenBecomesABearerHeader() {
        let c = call(
            url: "http://h/end", body: #"{"session": "{session}"}"#, headers: ["X-Session: {session}"], key: #"k"1"#)
        let request = c.request(timeout: .seconds(1), token: "tok")
        XCTAssertEqual(String(decoding: request.body ?? [], as: UTF8.self), #"{"session": "k\"1"}"#)
        XCTAssertEqual(request.headers, [#"X-Session: k"1"#, "Authorization: Bearer tok"])
    }

    func testTheTemplatesReadyMadeHeadersAreTheOnesACallWouldBuild() {
        var endpoint = EndpointConfiguration(name: "e", url: "http://h/u/{session}?again={session}")
        endpoint.headers = ["X-Static: 1"]
        endpoint.tokenCredential = "tok-name"
        endpoint.method = "DELETE"
        let template = EndpointTemplate(endpoint, credentials: ["tok-name": "tok"])
        let session = Session(id: .random(), key: SessionKey("a b"), endpoints: ["e"], ownerUID: 0, registeredAt: 0)
        let call = EndSessionCall(session: session, template: template)
        let own = call.request(timeout: .seconds(1), token: "tok")
        XCTAssertEqual(own.headers, ["X-Static: 1", "Authorization: Bearer tok"])
        XCTAssertEqual(own.url, "http://h/u/a%20b?again=a%20b")
        XCTAssertEqual(own.method, .delete)
        XCTAssertEqual(
            call.request(timeout: .seconds(1), token: "other").headers, ["X-Static: 1", "Authorization: Bearer other"])
        XCTAssertEqual(call.request(timeout: .seconds(1), token: nil).headers, ["X-Static: 1"])
    }

    func testOriginFillsDefaultPortsAndHandlesIPv6() {
        XCTAssertEqual(EndSessionCall.origin(of: "http://Example.com/x"), "http://example.com:80")
        XCTAssertEqual(EndSessionCall.origin(of: "https://example.com/x"), "https://example.com:443")
        XCTAssertEqual(EndSessionCall.origin(of: "http://[::1]:8080/u/{session}"), "http://[::1]:8080")
        XCTAssertEqual(EndSessionCall.origin(of: "https://[::1]/u"), "https://[::1]:443")
        XCTAssertEqual(EndSessionCall.origin(of: "http://127.0.0.1:9/u?{session}"), "http://127.0.0.1:9")
    }
}
