import XCTest

@testable import Configuration
@testable import Endpoints
@testable import Sessions
@testable import Vocabulary

/// `HTTPVersion=`, `Proxy=`, `NoProxy=`, `ProxyCredential=`, `MaxConnectionsPerHost=`.
final class EndpointTransportSettingsTests: XCTestCase {
    private let header = "Name=auth\nURL=https://auth.example/u/{session}\n"

    private func endpoint(_ lines: String) throws -> EndpointConfiguration {
        try EndpointSectionFixture.endpoint(header, lines)
    }

    private func refusal(_ lines: String) -> String? { EndpointSectionFixture.refusal(header, lines) }

    func testDefaultsAreAutomaticHTTPAndNoProxy() throws {
        let auth = try endpoint("")
        XCTAssertEqual(auth.httpVersion, .automatic, "HTTP/2 by ALPN unless pinned")
        XCTAssertNil(auth.proxy)
        XCTAssertEqual(auth.noProxy, "")
        XCTAssertNil(auth.maxConnectionsPerHost)
        let request = EndSessionCall(
            session: Session(
                id: SessionID(rawValue: 1), key: SessionKey("k"), endpoints: ["auth"], ownerUID: 0, registeredAt: 0),
            template: EndpointTemplate(auth)
        ).request(timeout: .seconds(1), token: nil)
        XCTAssertNil(request.proxy, "nothing from the environment")
        XCTAssertEqual(request.origin, HTTPOrigin(isTLS: true, host: "auth.example", port: 443))
    }

    func testEveryKeyIsRead() throws {
        let auth = try endpoint(
            "HTTPVersion=1.1\nProxy=socks5h://proxy.example:1080\nNoProxy=internal.example, 10.0.0.0/8\n"
                + "ProxyCredential=proxy-login\nMaxConnectionsPerHost=8\n")
        XCTAssertEqual(auth.httpVersion, .http1_1)
        XCTAssertEqual(auth.proxy, "socks5h://proxy.example:1080")
        XCTAssertEqual(auth.noProxy, "internal.example,10.0.0.0/8")
        XCTAssertEqual(auth.proxyCredential, "proxy-login")
        XCTAssertEqual(auth.maxConnectionsPerHost, 8)
        XCTAssertEqual(try endpoint("HTTPVersion=auto\n").httpVersion, .automatic)
        XCTAssertEqual(try endpoint("HTTPVersion=2\n").httpVersion, .http2)
        for value in ["http://p.example:3128", "https://p.example", "HTTP://p.example:3128/"] {
            XCTAssertNotNil(try? endpoint("Proxy=\(value)\n"), value)
        }
    }

    func testBadValuesAreRefused() {
        for lines in [
            "HTTPVersion=3\n", "Proxy=ftp://p.example\n", "Proxy=http://\n", "Proxy=http://p.example/path\n",
            "Proxy=socks4://p.example\n", "MaxConnectionsPerHost=0\n", "ProxyCredential=../x\nProxy=http://p:1\n",
            "ProxyCredential=login\n", "NoProxy=a.example\n",
        ] {
            XCTAssertNotNil(refusal(lines), lines)
        }
    }

    func testAProxyPasswordInTheFileIsRefusedWithoutEchoingIt() throws {
        let text = try XCTUnwrap(refusal("Proxy=http://user:hunter2secret@p.example:3128\n"))
        XCTAssertTrue(text.contains("ProxyCredential="), text)
        XCTAssertFalse(text.contains("hunter2secret"), text)
    }

    func testTheProxyCredentialComesFromItsCredentialAndIsNeverShown() throws {
        let auth = try endpoint("Proxy=http://p.example:3128\nNoProxy=localhost\nProxyCredential=login\n")
        let template = EndpointTemplate(auth, credentials: ["login": "alice:pa:ss"])
        XCTAssertNil(template.unavailable)
        let proxy = try XCTUnwrap(template.proxy)
        XCTAssertEqual(proxy.credential, HTTPProxy.Credential(user: "alice", password: "pa:ss"))
        XCTAssertEqual(proxy.noProxy, "localhost")
        var dumped = ""
        dump(proxy, to: &dumped)
        for text in [proxy.description, "\(proxy)", dumped, "\(proxy.credential as Any)"] {
            XCTAssertFalse(text.contains("pa:ss"), text)
        }
    }

    func testAMissingOrMalformedCredentialMakesTheEndpointUnavailable() throws {
        let auth = try endpoint("Proxy=http://p.example:3128\nProxyCredential=login\nTokenCredential=token\n")
        XCTAssertEqual(
            EndpointTemplate(auth, credentials: ["token": "t"]).unavailable,
            "proxy credential 'login' for endpoint 'auth' is unavailable")
        let malformed = EndpointTemplate(auth, credentials: ["token": "t", "login": "no-colon-secret"])
        XCTAssertEqual(
            malformed.unavailable, "proxy credential 'login' for endpoint 'auth' does not hold user:password")
        XCTAssertEqual(
            EndpointTemplate(auth, credentials: ["login": "a:b"]).unavailable,
            "credential 'token' for endpoint 'auth' is unavailable")
    }
}
