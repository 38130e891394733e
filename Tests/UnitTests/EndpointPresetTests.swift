import XCTest

@testable import Configuration
@testable import Endpoints
@testable import Sessions
@testable import Vocabulary

/// `Preset=rfc7009|keystone`: a protocol's settings fill in what the section leaves out, and
/// replies are judged as the protocol means them; `check-config` warns about an endpoint that
/// looks like one of them but would misjudge its replies.
final class EndpointPresetTests: XCTestCase {
    private func endpoint(_ url: String, _ lines: String) throws -> EndpointConfiguration {
        let text = "[Endpoint]\nName=idp\nURL=\(url)\n" + lines
        let configuration = try ConfigurationLoader.load(files: [("t.conf", Array(text.utf8))])
        return try XCTUnwrap(configuration.endpoints.first)
    }

    private func verdict(_ endpoint: EndpointConfiguration, _ status: Int, _ body: String = "") -> ReplyJudge.Verdict {
        let result = HTTPResult(
            outcome: .response(status: status, body: Array(body.utf8), truncated: false, retryAfter: nil),
            duration: .zero, reusedConnection: false)
        return ReplyJudge.judge(result, endpoint: endpoint)
    }

    private func request(_ endpoint: EndpointConfiguration) -> HTTPRequest {
        EndSessionCall(
            session: Session(
                id: SessionID(rawValue: 1), key: SessionKey("tok+en"), endpoints: ["idp"], ownerUID: 0,
                registeredAt: 0),
            template: EndpointTemplate(endpoint)
        ).request(timeout: .seconds(1), token: nil)
    }

    private func warnings(_ url: String, _ lines: String) throws -> [String] {
        let text = "[Endpoint]\nName=idp\nURL=\(url)\n" + lines
        let configuration = try ConfigurationLoader.load(files: [("t.conf", Array(text.utf8))])
        return ConfigurationCheck.check(configuration, serviceUser: nil).warnings.map(\.message)
    }

    func testRFC7009PostsTheTokenFormEncodedAndEndsOnAnEmpty200() throws {
        let revoke = try endpoint("https://idp.example/oauth2/revoke", "Preset=rfc7009\nClientCredential=c\n")
        XCTAssertEqual(revoke.method, "POST")
        XCTAssertEqual(revoke.body, "token={session}")
        let sent = request(revoke)
        XCTAssertEqual(sent.method, .post)
        XCTAssertEqual(sent.body.map { String(decoding: $0, as: UTF8.self) }, "token=tok%2Ben")
        XCTAssertEqual(verdict(revoke, 200), .ended(status: 200), "RFC 7009 §2.2: 200, empty body")
        // A 404 at a revocation endpoint is a wrong URL, not a token already ended.
        guard case .rejected(status: 404, _) = verdict(revoke, 404) else {
            return XCTFail("404 judged \(verdict(revoke, 404))")
        }
        guard case .rejected(status: 401, _) = verdict(revoke, 401) else {
            return XCTFail("a refused client must not end the session: \(verdict(revoke, 401))")
        }
    }

    func testThePresetsBodyTakesTheClientFieldsOfClientAuthenticationPost() throws {
        let revoke = try endpoint(
            "https://idp.example/revoke", "Preset=rfc7009\nClientCredential=c\nClientAuthentication=post\n")
        let sent = EndSessionCall(
            session: Session(
                id: SessionID(rawValue: 1), key: SessionKey("tok+en"), endpoints: ["idp"], ownerUID: 0,
                registeredAt: 0),
            template: EndpointTemplate(revoke, credentials: ["c": "app:s3cret"])
        ).request(timeout: .seconds(1), token: nil)
        XCTAssertEqual(
            sent.body.map { String(decoding: $0, as: UTF8.self) }, "token=tok%2Ben&client_id=app&client_secret=s3cret")
        XCTAssertEqual(sent.headers, [])
    }

    func testKeysWrittenInTheSectionWinOverThePreset() throws {
        let revoke = try endpoint(
            "https://idp.example/revoke",
            "GoneStatus=410\nPreset=rfc7009\nBody=token={session}&token_type_hint=refresh_token\n")
        XCTAssertEqual(revoke.body, "token={session}&token_type_hint=refresh_token", "Body= written after Preset=")
        XCTAssertEqual(revoke.goneStatuses, [410], "GoneStatus= written before Preset=")
        XCTAssertEqual(revoke.success, .anyTwoHundred)
        let judged = try endpoint("https://idp.example/revoke", "Preset=rfc7009\nSuccess=json-success\n")
        XCTAssertEqual(judged.success, .jsonSuccess)
    }

    func testKeystoneTokenRevokesItselfAnd401MeansAlreadyEnded() throws {
        let keystone = try endpoint("https://keystone.example:5000/v3/auth/tokens", "Preset=keystone\n")
        let sent = request(keystone)
        XCTAssertEqual(sent.method, .delete)
        XCTAssertEqual(sent.headers, ["X-Auth-Token: tok+en", "X-Subject-Token: tok+en"])
        XCTAssertNil(sent.body)
        XCTAssertEqual(verdict(keystone, 204), .ended(status: 204))
        XCTAssertEqual(verdict(keystone, 401, #"{"error":{"code":401}}"#), .ended(status: 401))
        XCTAssertEqual(verdict(keystone, 404), .ended(status: 404))
        guard case .rejected(status: 403, _) = verdict(keystone, 403) else {
            return XCTFail("403 judged \(verdict(keystone, 403))")
        }
    }

    func testAKeystoneHeaderWrittenInTheSectionIsNotSentTwice() throws {
        let keystone = try endpoint(
            "https://keystone.example/v3/auth/tokens", "Preset=keystone\nHeader=x-auth-token: {session}\n")
        XCTAssertEqual(request(keystone).headers, ["x-auth-token: tok+en", "X-Subject-Token: tok+en"])
    }

    func testAnUnknownPresetIsRefusedWithTheChoices() {
        XCTAssertThrowsError(try endpoint("https://idp.example/revoke", "Preset=oauth\n")) { error in
            XCTAssertTrue("\(error)".contains("invalid Preset=: expected rfc7009 or keystone"), "\(error)")
        }
    }

    func testCheckConfigWarnsWhenARevocationEndpointUsesTheJSONSuccessRule() throws {
        for (url, lines) in [
            ("https://idp.example/o/revoke_token/", "Method=POST\nBody=token={session}\n"),
            ("https://idp.example/realms/r/protocol/openid-connect/revoke?x=1", "Method=POST\nBody=token={session}\n"),
            ("https://idp.example/api/end", "Method=POST\nBody=token={session}&token_type_hint=access_token\n"),
        ] {
            let found = try warnings(url, lines)
            XCTAssertEqual(found.count, 1, url)
            XCTAssertTrue(found.first?.contains("judges replies by Success=json-success") ?? false, "\(found)")
            XCTAssertTrue(
                found.first?.contains("set Preset=rfc7009 (Success=2xx, no GoneStatus=)") ?? false, "\(found)")
        }
        XCTAssertEqual(try warnings("https://idp.example/revoke", "Preset=rfc7009\n"), [])
        XCTAssertEqual(
            try warnings("https://idp.example/revoke", "Method=POST\nBody=token={session}\nSuccess=2xx\nGoneStatus=\n"),
            [])
        XCTAssertEqual(try warnings("https://api.example/user/{session}/endsession", ""), [])
    }

    /// `Success=2xx` alone leaves the default `GoneStatus=404 410`: a wrong URL would end every session.
    func testCheckConfigWarnsWhenARevocationEndpointCountsA404AsGone() throws {
        let found = try warnings("https://idp.example/revoke", "Method=POST\nBody=token={session}\nSuccess=2xx\n")
        XCTAssertEqual(found.count, 1)
        XCTAssertTrue(found.first?.contains("counts 404 as gone (GoneStatus=)") ?? false, "\(found)")
        XCTAssertFalse(found.first?.contains("json-success") ?? true, "\(found)")
    }

    func testCheckConfigWarnsWhenAKeystoneEndpointWouldCallAGoneTokenRejected() throws {
        let header = "Method=DELETE\nHeader=X-Auth-Token: {session}\nHeader=X-Subject-Token: {session}\n"
        let found = try warnings("https://keystone.example/v3/auth/tokens", header + "Success=2xx\n")
        XCTAssertEqual(found.count, 1)
        XCTAssertTrue(found.first?.contains("set Preset=keystone") ?? false, "\(found)")
        XCTAssertEqual(
            try warnings("https://keystone.example/v3/auth/tokens", header + "Success=2xx\nGoneStatus=401 404\n"), [])
        XCTAssertEqual(try warnings("https://keystone.example/v3/auth/tokens", "Preset=keystone\n"), [])
    }
}
