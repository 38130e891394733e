import XCTest

@testable import Basics
@testable import Configuration
@testable import Endpoints
@testable import Sessions
@testable import Vocabulary

/// The client-credentials grant's request and how its reply is read (RFC 6749 §4.4, §5.1, §5.2).
final class TokenReplyTests: XCTestCase {
    private let source = TokenSource(
        url: "https://idp.example/realms/r/token", clientID: "daemon", scope: "revoke", audience: nil)

    private func reply(_ status: Int, _ body: String, truncated: Bool = false) -> HTTPResult {
        HTTPResult(
            outcome: .response(status: status, body: Array(body.utf8), truncated: truncated, retryAfter: nil),
            duration: .milliseconds(3), reusedConnection: false)
    }

    private func read(_ status: Int, _ body: String) -> Result<AccessToken, TokenReply.Failure> {
        TokenReply.accessToken(from: reply(status, body), source: source)
    }

    private func cause(_ status: Int, _ body: String) -> String? {
        if case .failure(let failure) = read(status, body) { return failure.description }
        return nil
    }

    func testABearerTokenWithItsLifetimeIsRead() {
        let body = #"{"access_token":"eyJ.abc-123_~+/=","token_type":"Bearer","expires_in":300,"scope":"revoke"}"#
        XCTAssertEqual(try read(200, body).get(), AccessToken(value: "eyJ.abc-123_~+/=", lifetime: .seconds(300)))
    }

    func testTokenTypeIsCaseInsensitiveAndExpiresInIsOptionalOrAString() {
        XCTAssertEqual(
            try read(200, #"{"access_token":"t1","token_type":"bearer"}"#).get(),
            AccessToken(value: "t1", lifetime: nil))
        XCTAssertEqual(
            try read(200, #"{"access_token":"t1","token_type":"BEARER","expires_in":"60"}"#).get().lifetime,
            .seconds(60))
    }

    func testWhatIsNotABearerTokenIsRefusedWithTheReasonAndNeverTheToken() {
        let cases: [(String, String)] = [
            (#"<html>login</html>"#, "is not JSON"),
            (#"["secret-token"]"#, "is not a JSON object"),
            (#"{"token_type":"Bearer"}"#, "has no access_token string"),
            (#"{"access_token":"","token_type":"Bearer"}"#, "has no access_token string"),
            (#"{"access_token":42,"token_type":"Bearer"}"#, "has no access_token string"),
            (#"{"access_token":"secret token","token_type":"Bearer"}"#, "not printable ASCII without spaces"),
            (#"{"access_token":"secret-token"}"#, "has no token_type Bearer"),
            (#"{"access_token":"secret-token","token_type":"mac"}"#, "has no token_type Bearer"),
            (#"{"access_token":"secret-token","token_type":"Bearer","expires_in":-1}"#, "expires_in"),
            (#"{"access_token":"secret-token","token_type":"Bearer","expires_in":"soon"}"#, "expires_in"),
            (#"{"access_token":"secret-token","access_token":"other","token_type":"Bearer"}"#, "is not JSON"),
        ]
        for (body, expected) in cases {
            let text = cause(200, body)
            XCTAssertTrue(text?.contains(expected) ?? false, "\(body): \(text ?? "accepted")")
            XCTAssertTrue(text?.hasPrefix("token-failed: ") ?? false, body)
            XCTAssertFalse(text?.contains("secret") ?? true, "the reply's content is never quoted: \(body)")
        }
    }

    func testAnErrorReplyNamesTheStatusTheOriginAndAnRFCErrorCode() {
        XCTAssertEqual(
            cause(401, #"{"error":"invalid_client","error_description":"bad secret s3cret"}"#),
            "token-failed: 401 from https://idp.example:443 (invalid_client)")
        XCTAssertEqual(cause(400, "not json"), "token-failed: 400 from https://idp.example:443")
        // An error member that is not a code the RFCs define is not repeated: a server may echo anything.
        XCTAssertEqual(
            cause(400, #"{"error":"line\nbreak \"quoted\""}"#), "token-failed: 400 from https://idp.example:443")
        XCTAssertEqual(cause(403, #"{"error":"secret-token"}"#), "token-failed: 403 from https://idp.example:443")
    }

    func testATruncatedReplyIsRefused() {
        let result = TokenReply.accessToken(
            from: reply(200, #"{"access_token":"t","#, truncated: true), source: source)
        guard case .failure(let failure) = result else { return XCTFail("accepted") }
        XCTAssertTrue(failure.cause.contains("over"), failure.cause)
    }

    func testTransportFailuresSayWhetherTheTokenEndpointIsUnreachable() {
        func failure(_ kind: TransportFailure.Kind) -> TokenReply.Failure? {
            let result = HTTPResult(
                outcome: .failure(TransportFailure(kind: kind, peer: "idp.example:443", detail: "fake")),
                duration: .zero, reusedConnection: false)
            if case .failure(let failure) = TokenReply.accessToken(from: result, source: source) { return failure }
            return nil
        }
        XCTAssertEqual(failure(.connect)?.unreachable, true)
        XCTAssertTrue(
            failure(.connect)?.description.hasPrefix("token-failed: https://idp.example:443 unreachable") ?? false)
        XCTAssertEqual(failure(.resolve)?.unreachable, true)
        XCTAssertEqual(failure(.timeout)?.unreachable, false)
        XCTAssertTrue(failure(.timeout)?.cause.contains("did not answer in time") ?? false)
        XCTAssertEqual(failure(.tls)?.unreachable, false)
    }

    // MARK: The request

    private func grant(
        _ authentication: ClientAuthentication, scope: String? = "revoke sessions", audience: String? = nil
    )
        -> HTTPRequest?
    {
        var endpoint = EndpointConfiguration(name: "idp", url: "https://idp.example/admin/{session}")
        endpoint.tokenURL = "https://idp.example/token"
        endpoint.tokenScope = scope
        endpoint.tokenAudience = audience
        endpoint.clientAuthentication = authentication
        let template = EndpointTemplate(endpoint, credentials: [:])
        XCTAssertNil(template.grant, "no client credential, no grant")
        endpoint.clientCredential = "idp-client"
        let withClient = EndpointTemplate(endpoint, credentials: ["idp-client": "my client:s e/c"])
        return withClient.grant?.request(timeout: .seconds(3))
    }

    func testTheGrantIsAFormPostAuthenticatingTheClientAsConfigured() throws {
        let basic = try XCTUnwrap(grant(.basic))
        XCTAssertEqual(basic.method, .post)
        XCTAssertEqual(basic.url, "https://idp.example/token")
        XCTAssertEqual(basic.timeout, .seconds(3))
        XCTAssertEqual(
            String(decoding: basic.body ?? [], as: UTF8.self), "grant_type=client_credentials&scope=revoke+sessions")
        XCTAssertTrue(basic.headers.contains("Content-Type: application/x-www-form-urlencoded"))
        XCTAssertTrue(basic.headers.contains("Authorization: Basic " + Base64.encode("my+client:s+e%2Fc".utf8)))
        let raw = try XCTUnwrap(grant(.basicRaw, scope: nil))
        XCTAssertTrue(raw.headers.contains("Authorization: Basic " + Base64.encode("my client:s e/c".utf8)))
        XCTAssertEqual(String(decoding: raw.body ?? [], as: UTF8.self), "grant_type=client_credentials")
        let post = try XCTUnwrap(grant(.post, scope: nil, audience: "https://api.example/"))
        XCTAssertFalse(post.headers.contains { $0.hasPrefix("Authorization") })
        XCTAssertEqual(
            String(decoding: post.body ?? [], as: UTF8.self),
            "grant_type=client_credentials&audience=https%3A%2F%2Fapi.example%2F&client_id=my+client&client_secret=s+e%2Fc"
        )
        XCTAssertFalse(post.description.contains("s e/c"), "the request's description shows no secret")
    }

    func testWithATokenURLTheCallsCarryNoClientCredential() throws {
        var endpoint = EndpointConfiguration(name: "idp", url: "https://idp.example/admin/{session}")
        endpoint.method = "DELETE"
        endpoint.clientCredential = "idp-client"
        endpoint.clientAuthentication = .post
        endpoint.tokenURL = "https://idp.example/token"
        let template = EndpointTemplate(endpoint, credentials: ["idp-client": "id:secret"])
        let call = EndSessionCall(
            id: .random(), key: SessionKey("k1"), template: template
        ).request(timeout: .seconds(1), token: "access-1")
        XCTAssertEqual(call.headers, ["Authorization: Bearer access-1"])
        XCTAssertNil(call.body)
    }
}
