import XCTest

@testable import Configuration

/// `TokenURL=`, `TokenScope=` and `TokenAudience=`: read, and refused where they cannot work.
final class TokenURLConfigurationTests: XCTestCase {
    private let header = "Name=admin\nURL=https://idp.example/admin/sessions/{session}\nMethod=DELETE\n"

    private func endpoint(_ lines: String) throws -> EndpointConfiguration {
        try EndpointSectionFixture.endpoint(header, lines)
    }

    private func refusal(_ lines: String) -> String? { EndpointSectionFixture.refusal(header, lines) }

    func testTheKeysAreRead() throws {
        let admin = try endpoint(
            "ClientCredential=idp-client\nTokenURL=https://idp.example/token\nTokenScope=admin revoke\n"
                + "TokenAudience=https://api.example/\n")
        XCTAssertEqual(admin.tokenURL, "https://idp.example/token")
        XCTAssertEqual(admin.tokenScope, "admin revoke")
        XCTAssertEqual(admin.tokenAudience, "https://api.example/")
        XCTAssertNil(try endpoint("").tokenURL)
    }

    func testWithATokenURLClientAuthenticationPostIsForTheGrantAndAllowsAnyCall() throws {
        // The post fields go into the grant's own form body, not into this DELETE's.
        let admin = try endpoint(
            "ClientCredential=idp-client\nClientAuthentication=post\nTokenURL=https://idp.example/token\n")
        XCTAssertEqual(admin.clientAuthentication, .post)
    }

    func testWhatCannotWorkIsRefusedNamingTheKeyAndLine() {
        let noClient = refusal("TokenURL=https://idp.example/token\n")
        XCTAssertTrue(noClient?.contains("t.conf:5") ?? false, noClient ?? "accepted")
        XCTAssertTrue(noClient?.contains("TokenURL= but no ClientCredential=") ?? false, noClient ?? "accepted")
        let scope = refusal("ClientCredential=c\nTokenScope=admin\n")
        XCTAssertTrue(scope?.contains("TokenScope= but no TokenURL=") ?? false, scope ?? "accepted")
        let audience = refusal("ClientCredential=c\nTokenAudience=x\n")
        XCTAssertTrue(audience?.contains("TokenAudience= but no TokenURL=") ?? false, audience ?? "accepted")
        let notHTTP = refusal("ClientCredential=c\nTokenURL=ftp://idp.example/token\n")
        XCTAssertTrue(notHTTP?.contains("invalid TokenURL=") ?? false, notHTTP ?? "accepted")
        let password = refusal("ClientCredential=c\nTokenURL=https://id:s3cret@idp.example/token\n")
        XCTAssertTrue(password?.contains("user name or password") ?? false, password ?? "accepted")
        XCTAssertFalse(password?.contains("s3cret") ?? true, "the password is not repeated")
        let placeholder = refusal("ClientCredential=c\nTokenURL=https://idp.example/{session}\n")
        XCTAssertTrue(placeholder?.contains("without {session}") ?? false, placeholder ?? "accepted")
        let bearer = refusal("ClientCredential=c\nTokenCredential=t\nTokenURL=https://idp.example/token\n")
        XCTAssertTrue(bearer?.contains("choose one") ?? false, bearer ?? "accepted")
    }

    func testCheckConfigWarnsAboutATokenURLOverPlainHTTPOffThisMachine() throws {
        func warnings(_ url: String) throws -> [String] {
            let text =
                "[Endpoint]\nName=admin\nURL=https://idp.example/admin/{session}\nClientCredential=c\nTokenURL=\(url)\n"
            let configuration = try ConfigurationLoader.load(files: [("t.conf", Array(text.utf8))])
            return ConfigurationCheck.check(configuration, serviceUser: nil).warnings.map(\.description)
        }
        let plain = try warnings("http://idp.example/token")
        XCTAssertEqual(plain.count, 1)
        XCTAssertTrue(plain.first?.contains("TokenURL= of [Endpoint] 'admin' is plain http to idp.example") ?? false)
        XCTAssertEqual(try warnings("https://idp.example/token"), [])
        XCTAssertEqual(try warnings("http://127.0.0.1:8080/token"), [])
        XCTAssertEqual(try warnings("http://[::1]:8080/token"), [])
        XCTAssertEqual(try warnings("http://localhost/token"), [])
        XCTAssertEqual(try warnings("http://127.example.com/token").count, 1, "a name, not an address")
    }
}
