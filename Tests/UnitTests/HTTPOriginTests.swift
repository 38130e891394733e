import XCTest

@testable import Endpoints
@testable import Vocabulary

final class HTTPOriginTests: XCTestCase {
    func testSchemeHostAndPortWithDefaults() {
        XCTAssertEqual(
            HTTPOrigin(url: "HTTPS://Auth.Example.com/u/{session}")?.description, "https://auth.example.com:443")
        XCTAssertEqual(HTTPOrigin(url: "http://example.com")?.description, "http://example.com:80")
        XCTAssertEqual(HTTPOrigin(url: "http://127.0.0.1:8080?x=1")?.peer, "127.0.0.1:8080")
        XCTAssertEqual(HTTPOrigin(url: "https://[::1]:8443/x")?.peer, "[::1]:8443")
        XCTAssertEqual(HTTPOrigin(url: "https://[::1]/x")?.port, 443)
        XCTAssertEqual(HTTPOrigin(url: "http://user:secret@host.example:81/")?.description, "http://host.example:81")
    }

    func testWhatIsNotAnHTTPOriginIsNil() {
        for url in [
            "ftp://example.com/", "http://", "http://:80/", "http://host:0/", "http://host:65536/", "http://host:8x/",
            "https://[::1/", "https://[::1]x/", "example.com",
        ] {
            XCTAssertNil(HTTPOrigin(url: url), url)
        }
    }
}

final class PercentEncodingTests: XCTestCase {
    func testUnreservedTextIsItsOwnEncodingAndEverythingElseIsEscaped() {
        XCTAssertEqual(EndSessionCall.percentEncoded("Ab9-._~"), "Ab9-._~")
        XCTAssertEqual(EndSessionCall.percentEncoded("a b/c?d&e=f"), "a%20b%2Fc%3Fd%26e%3Df")
        XCTAssertEqual(EndSessionCall.percentEncoded("é%"), "%C3%A9%25")
        XCTAssertEqual(EndSessionCall.percentEncoded(""), "")
    }
}
