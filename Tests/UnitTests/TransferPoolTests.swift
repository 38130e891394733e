import XCTest

@testable import Configuration
@testable import Endpoints
@testable import HTTPEngine
@testable import Sessions
@testable import Vocabulary

final class TransferPoolTests: XCTestCase {
    private func request(caFile: String? = nil, version: HTTPRequest.Version = .automatic, proxy: HTTPProxy? = nil)
        -> HTTPRequest
    {
        HTTPRequest(
            url: "http://127.0.0.1:9/x", redactedURL: "http://127.0.0.1:9/x", caFile: caFile, version: version,
            proxy: proxy)
    }

    func testRequestsWithEqualOptionsGetOneProfileNumberAndOthersTheirOwn() {
        let pool = TransferPool(limit: 4)
        let plain = pool.profileNumber(for: request())
        XCTAssertEqual(pool.profileNumber(for: request()), plain, "equal options, another profile object: one number")
        let pinned = pool.profileNumber(for: request(version: .http1_1))
        let withCA = pool.profileNumber(for: request(caFile: "/etc/ca.pem"))
        let proxied = pool.profileNumber(for: request(proxy: HTTPProxy(url: "http://127.0.0.1:3128")))
        let otherProxy = pool.profileNumber(for: request(proxy: HTTPProxy(url: "http://127.0.0.1:3129")))
        XCTAssertEqual(Set([plain, pinned, withCA, proxied, otherProxy]).count, 5, "every difference counts")
        XCTAssertEqual(pool.profileNumber(for: request(caFile: "/etc/ca.pem")), withCA, "a profile seen before")
        XCTAssertEqual(pool.count, 0, "numbering profiles makes no transfer")
    }

    func testAnEndpointsRequestsShareItsProfileObject() {
        var endpoint = EndpointConfiguration(name: "auth", url: "https://127.0.0.1:9/user/{session}/end")
        endpoint.caFile = "/etc/ca.pem"
        let template = EndpointTemplate(endpoint)
        let session = Session(id: .random(), key: SessionKey("k1"), endpoints: ["auth"], ownerUID: 0, registeredAt: 0)
        let first = EndSessionCall(session: session, template: template).request(timeout: .seconds(1), token: nil)
        let second = EndSessionCall(session: session, template: template).request(timeout: .seconds(2), token: nil)
        XCTAssertTrue(first.profile === second.profile, "one object for the endpoint")
        XCTAssertEqual(first.caFile, "/etc/ca.pem")
        let pool = TransferPool(limit: 4)
        XCTAssertEqual(pool.profileNumber(for: first), pool.profileNumber(for: second))
    }

    func testChangingAProfileFieldOfARequestLeavesItsCopiesAlone() {
        let original = request(caFile: "/etc/ca.pem")
        var changed = original
        changed.version = .http2
        changed.proxy = HTTPProxy(url: "socks5h://127.0.0.1:1080")
        XCTAssertEqual(changed.caFile, "/etc/ca.pem")
        XCTAssertEqual(changed.version, .http2)
        XCTAssertEqual(changed.proxy?.url, "socks5h://127.0.0.1:1080")
        XCTAssertEqual(original.version, .automatic, "the copy it came from keeps its options")
        XCTAssertNil(original.proxy)
        changed.caFile = nil
        XCTAssertNil(changed.caFile)
        XCTAssertEqual(original.caFile, "/etc/ca.pem")
    }
}
