import Foundation
import Glibc
import XCTest

@testable import EventLoop
@testable import HTTPEngine
@testable import Vocabulary

/// The engine through real proxies on 127.0.0.1 (tinyproxy, a SOCKS5 proxy of the tests' own):
/// only the proxy a request names is used, never the environment's.
final class EngineProxyTests: XCTestCase {
    private var loop: EventLoop!
    private var server: EndSessionServer!

    override func setUpWithError() throws {
        loop = try EventLoop()
        server = try EndSessionServer()
    }

    override func tearDown() {
        server = nil
        loop = nil
    }

    private func fetch(_ key: String, proxy: HTTPProxy?, base: String? = nil, caFile: String? = nil) throws
        -> HTTPResult
    {
        let engine = try HTTPEngine(loop: loop, limits: HTTPEngine.Limits(maxTransfers: 4))
        let url = (base ?? server.endSessionURL).replacing("{session}", with: key)
        var result: HTTPResult?
        try engine.start(
            HTTPRequest(url: url, redactedURL: "test", timeout: .seconds(10), caFile: caFile, proxy: proxy)
        ) { result = $0 }
        let deadline = loop.clock.now().advanced(by: .seconds(15))
        while result == nil {
            guard loop.clock.now() < deadline else { throw TestSetupError("no result in 15 s") }
            try loop.runOnce(maximumWait: .milliseconds(50))
        }
        return try XCTUnwrap(result)
    }

    func testRequestsGoThroughTheHTTPProxyTheyName() throws {
        let proxy = try ProxyServer(.http)
        XCTAssertEqual(try fetch("ok-via-proxy", proxy: HTTPProxy(url: proxy.url)).status, 200)
        XCTAssertEqual(try server.calls(for: "ok-via-proxy").successes, 1)
        XCTAssertTrue(proxy.log.contains("/user/ok-via-proxy/endsession"), proxy.log)
    }

    func testHTTPSGoesThroughTheProxyInATunnel() throws {
        let ca = try TestCertificateAuthority()
        let tls = try EndSessionServer(certificate: ca.server)
        let proxy = try ProxyServer(.http)
        let result = try fetch(
            "ok-tunnel", proxy: HTTPProxy(url: proxy.url), base: tls.endSessionURL, caFile: ca.caFile)
        XCTAssertEqual(result.status, 200)
        XCTAssertTrue(proxy.log.contains("CONNECT"), proxy.log)
        XCTAssertFalse(proxy.log.contains("ok-tunnel"), "the path travels inside TLS")
    }

    func testTheProxyCredentialIsSentAndAWrongOneIsRefusedWithoutTheSecretInAnyText() throws {
        let proxy = try ProxyServer(.http, user: "alice", password: "s3cret-pw")
        let right = HTTPProxy(url: proxy.url, credential: .init(user: "alice", password: "s3cret-pw"))
        XCTAssertEqual(try fetch("ok-authorized", proxy: right).status, 200)
        let wrong = HTTPProxy(url: proxy.url, credential: .init(user: "alice", password: "wrong-pw"))
        let refused = try fetch("ok-refused", proxy: wrong)
        XCTAssertTrue([401, 407].contains(refused.status ?? 0), "the proxy refused it: \(refused)")
        XCTAssertEqual(try server.calls(for: "ok-refused").calls, 0)
        XCTAssertFalse("\(refused)".contains("wrong-pw"))
        XCTAssertNil(try fetch("ok-no-credential", proxy: HTTPProxy(url: proxy.url)).failure)
    }

    func testSocks5hResolvesThroughTheProxy() throws {
        let proxy = try ProxyServer(.socks5)
        let base = "http://localhost:\(server.port)/user/{session}/endsession"
        XCTAssertEqual(try fetch("ok-socks", proxy: HTTPProxy(url: proxy.url), base: base).status, 200)
        XCTAssertTrue(
            proxy.log.contains("CONNECT localhost:\(server.port)"), "the name went to the proxy: \(proxy.log)")
    }

    func testNoProxyHostsAreReachedDirectly() throws {
        let proxy = try ProxyServer(.http)
        XCTAssertEqual(try fetch("ok-direct", proxy: HTTPProxy(url: proxy.url, noProxy: "127.0.0.1")).status, 200)
        XCTAssertFalse(proxy.log.contains("ok-direct"), proxy.log)
        XCTAssertEqual(try server.calls(for: "ok-direct").successes, 1)
    }

    func testTheEnvironmentsProxyIsNeverUsed() throws {
        let proxy = try ProxyServer(.http)
        let names = ["http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"]
        for name in names { setenv(name, proxy.url, 1) }
        setenv("no_proxy", "", 1)
        defer { for name in names + ["no_proxy"] { unsetenv(name) } }
        XCTAssertEqual(try fetch("ok-no-env", proxy: nil).status, 200)
        // With a proxy of its own, $no_proxy does not exempt anything either.
        setenv("no_proxy", "127.0.0.1", 1)
        XCTAssertEqual(try fetch("ok-env-no-proxy", proxy: HTTPProxy(url: proxy.url)).status, 200)
        XCTAssertFalse(proxy.log.contains("ok-no-env"), proxy.log)
        XCTAssertTrue(proxy.log.contains("ok-env-no-proxy"), proxy.log)
    }
}
