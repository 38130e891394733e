import XCTest

@testable import Configuration
@testable import Endpoints
@testable import Vocabulary

/// `ClientCertificateCredential=` and `ClientKeyCredential=`: both or neither, over https; the
/// PEM each credential must hold; the engine's profile carries them, never printing the key.
final class ClientCertificateConfigurationTests: XCTestCase {
    private func load(_ url: String, _ lines: String) throws -> EndpointConfiguration {
        let text = "[Endpoint]\nName=mtls\nURL=\(url)\n" + lines
        let configuration = try ConfigurationLoader.load(files: [("t.conf", Array(text.utf8))])
        return try XCTUnwrap(configuration.endpoints.first)
    }

    private func refusal(_ url: String, _ lines: String) -> String {
        do {
            _ = try load(url, lines)
            return "accepted"
        } catch {
            return "\(error)"
        }
    }

    private let pair = "ClientCertificateCredential=mtls-cert\nClientKeyCredential=mtls-key\n"

    func testACertificateNeedsItsKeyAndTheOtherWayRound() {
        XCTAssertTrue(
            refusal("https://h/{session}", "ClientCertificateCredential=c\n").contains(
                "t.conf:4: [Endpoint] 'mtls' has ClientCertificateCredential= but no ClientKeyCredential="))
        XCTAssertTrue(
            refusal("https://h/{session}", "ClientKeyCredential=k\n").contains(
                "has ClientKeyCredential= but no ClientCertificateCredential="))
    }

    func testAClientCertificateNeedsAnHTTPSURL() {
        XCTAssertTrue(
            refusal("http://h/{session}", pair).contains("has a client certificate but an http:// URL"),
            refusal("http://h/{session}", pair))
    }

    func testANameIsACredentialNameNotAPath() {
        XCTAssertTrue(
            refusal(
                "https://h/{session}", "ClientKeyCredential=/etc/ssl/private/k.pem\nClientCertificateCredential=c\n"
            )
            .contains("invalid ClientKeyCredential=: expected a credential name"))
    }

    func testTheTemplateHandsThePairToTheProfileAndNeverPrintsIt() throws {
        let endpoint = try load("https://h/{session}", pair)
        let certificate = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
        let key = "-----BEGIN PRIVATE KEY-----\nsecret-key-bytes\n-----END PRIVATE KEY-----\n"
        let template = EndpointTemplate(endpoint, credentials: ["mtls-cert": certificate, "mtls-key": key])
        XCTAssertNil(template.unavailable)
        let client = try XCTUnwrap(template.profile.clientCertificate)
        XCTAssertEqual(client.key, Array(key.utf8))
        XCTAssertEqual(client.certificate, Array(certificate.utf8))
        var dumped = ""
        dump(template.profile, to: &dumped)
        XCTAssertFalse(dumped.contains("secret-key-bytes") || "\(client)".contains("secret-key-bytes"), dumped)
        let missing = EndpointTemplate(endpoint, credentials: ["mtls-cert": certificate])
        XCTAssertEqual(
            missing.unavailable, "client certificate credential 'mtls-key' for endpoint 'mtls' is unavailable")
        XCTAssertNil(missing.profile.clientCertificate)
    }

    func testEachCredentialMustHoldItsKindOfPEM() {
        let certificate = CredentialReader.PEMKind.certificate
        let key = CredentialReader.PEMKind.privateKey
        XCTAssertNotNil(
            certificate.problem(in: Array("-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----\n".utf8)))
        XCTAssertNil(
            key.problem(in: Array("-----BEGIN EC PRIVATE KEY-----\nAA==\n-----END EC PRIVATE KEY-----\n".utf8)))
        XCTAssertNil(key.problem(in: Array("-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----".utf8)))
        XCTAssertEqual(
            key.problem(in: Array("not a key".utf8)), "is not a PEM private key (expected -----BEGIN PRIVATE KEY-----)")
        XCTAssertTrue(
            key.problem(
                in: Array("-----BEGIN ENCRYPTED PRIVATE KEY-----\nAA==\n-----END ENCRYPTED PRIVATE KEY-----\n".utf8))?
                .contains("encrypted private key") ?? false)
        XCTAssertTrue(key.problem(in: [0x30, 0x82, 0xFF])?.contains("not text") ?? false)
    }
}
