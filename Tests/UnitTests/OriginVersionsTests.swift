import XCTest

@testable import HTTPEngine
@testable import Vocabulary

/// What an engine learns of its origins' HTTP versions, without an engine.
final class OriginVersionsTests: XCTestCase {
    private let tls = HTTPOrigin(isTLS: true, host: "auth.example", port: 443)
    private let plain = HTTPOrigin(isTLS: false, host: "auth.example", port: 80)

    private func request(_ origin: HTTPOrigin?, version: HTTPRequest.Version = .automatic) -> HTTPRequest {
        HTTPRequest(
            url: "https://auth.example/x", redactedURL: "https://auth.example/x", origin: origin, version: version)
    }

    func testOnlyAnAutoRequestOverTLSToAKnownHTTP1OriginGoesWithoutTheProbe() {
        var versions = OriginVersions()
        versions.knownHTTP1 = [tls, plain]
        XCTAssertTrue(versions.met(tls, version: .automatic))
        XCTAssertFalse(versions.met(tls, version: .http2), "HTTP/2 asked for: it may multiplex")
        XCTAssertFalse(versions.met(tls, version: .http1_1), "HTTP/1.1 asked for: never probes anyway")
        XCTAssertFalse(versions.met(plain, version: .automatic), "no TLS: no ALPN to learn from")
        XCTAssertFalse(
            versions.met(HTTPOrigin(isTLS: true, host: "other.example", port: 443), version: .automatic), "not known")
    }

    func testRepliesToAutoRequestsOverTLSThatNameTheirOriginAreSeenWithTheLatestVersion() {
        var versions = OriginVersions()
        _ = versions.met(tls, version: .automatic)
        _ = versions.met(plain, version: .automatic)
        versions.replied("1.1", to: request(plain), origin: plain, number: 1)
        versions.replied("2", to: request(nil), origin: tls, number: 0)
        versions.replied("2", to: request(tls, version: .http2), origin: tls, number: 0)
        XCTAssertEqual(versions.seen, [:], "no TLS, no origin named, or not `auto`: nothing told")
        versions.replied("2", to: request(tls), origin: tls, number: 0)
        XCTAssertEqual(versions.seen, [tls: true])
        versions.replied("1.1", to: request(tls), origin: tls, number: 0)
        XCTAssertEqual(versions.seen, [tls: false], "the latest reply counts")
        versions.replied("1.0", to: request(tls), origin: tls, number: 0)
        XCTAssertEqual(versions.seen, [tls: false], "HTTP/1.0 is HTTP/1.x too")
    }
}
