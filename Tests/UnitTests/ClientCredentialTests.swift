import XCTest

@testable import Basics
@testable import Configuration
@testable import Endpoints
@testable import Sessions
@testable import Vocabulary

/// `ClientCredential=` and `ClientAuthentication=`: RFC 6749 §2.3.1 client authentication.
final class ClientCredentialTests: XCTestCase {
    /// A client secret with every character that form-encoding changes.
    private let credentialText = "my client:s3cr:t+/ é"

    private let header = "Name=idp\nURL=https://idp.example/revoke\n"

    private func endpoint(_ lines: String) throws -> EndpointConfiguration {
        try EndpointSectionFixture.endpoint(header, lines)
    }

    private func refusal(_ lines: String) -> String? { EndpointSectionFixture.refusal(header, lines) }

    private func request(_ endpoint: EndpointConfiguration, credentials: [String: String]) -> HTTPRequest {
        EndSessionCall(
            session: Session(
                id: SessionID(rawValue: 1), key: SessionKey("tok en"), endpoints: ["idp"], ownerUID: 0,
                registeredAt: 0),
            template: EndpointTemplate(endpoint, credentials: credentials)
        ).request(timeout: .seconds(1), token: nil)
    }

    func testBase64EncodesTheRFC4648Vectors() {
        let vectors = ["": "", "f": "Zg==", "fo": "Zm8=", "foo": "Zm9v", "foob": "Zm9vYg==", "fooba": "Zm9vYmE="]
        for (plain, encoded) in vectors {
            XCTAssertEqual(Base64.encode(plain.utf8), encoded, plain)
            XCTAssertEqual(Base64.decode(encoded), Array(plain.utf8), plain)
        }
    }

    func testBasicIsTheDefaultAndFormEncodesEachPartBeforeBase64() throws {
        let idp = try endpoint("Method=POST\nBody=token={session}\nSuccess=2xx\nClientCredential=idp-client\n")
        XCTAssertEqual(idp.clientAuthentication, .basic)
        let sent = request(idp, credentials: ["idp-client": credentialText])
        // Expected value worked out with Python's urllib.parse.quote_plus and base64.
        XCTAssertEqual(
            sent.headers, ["Authorization: Basic bXkrY2xpZW50OnMzY3IlM0F0JTJCJTJGKyVDMyVBOQ=="])
        XCTAssertEqual(sent.body.map { String(decoding: $0, as: UTF8.self) }, "token=tok%20en")
    }

    func testBasicRawSendsThePairAsItIs() throws {
        let idp = try endpoint(
            "Method=POST\nBody=token={session}\nClientCredential=idp-client\nClientAuthentication=basic-raw\n")
        let sent = request(idp, credentials: ["idp-client": credentialText])
        XCTAssertEqual(sent.headers, ["Authorization: Basic bXkgY2xpZW50OnMzY3I6dCsvIMOp"])
    }

    func testPostAddsFormFieldsToTheBodyAndNoHeader() throws {
        let idp = try endpoint(
            "Method=POST\nBody=token={session}&token_type_hint=refresh_token\nHeader=X-Trace: {session}\n"
                + "ClientCredential=idp-client\nClientAuthentication=post\n")
        let sent = request(idp, credentials: ["idp-client": credentialText])
        XCTAssertEqual(sent.headers, ["X-Trace: tok en"])
        XCTAssertEqual(
            sent.body.map { String(decoding: $0, as: UTF8.self) },
            "token=tok%20en&token_type_hint=refresh_token&client_id=my+client"
                + "&client_secret=s3cr%3At%2B%2F+%C3%A9")
        let bare = try endpoint(
            "Method=POST\nClientCredential=idp-client\nClientAuthentication=post\nURL=https://i/{session}\n")
        XCTAssertEqual(
            request(bare, credentials: ["idp-client": "a:b"]).body.map { String(decoding: $0, as: UTF8.self) },
            "client_id=a&client_secret=b", "no Body=: the fields are the body")
    }

    func testContradictionsAreConfigurationErrorsNamingTheKey() {
        let both = refusal("Body=token={session}\nMethod=POST\nClientCredential=c\nTokenCredential=t\n")
        XCTAssertTrue(both?.contains("both ClientCredential= and TokenCredential=") ?? false, both ?? "accepted")
        let get = refusal("URL=https://i/{session}\nClientCredential=c\nClientAuthentication=post\n")
        XCTAssertTrue(get?.contains("ClientAuthentication=post but Method=GET") ?? false, get ?? "accepted")
        let json = refusal(
            "Method=POST\nBody={\"token\":\"{session}\"}\nClientCredential=c\nClientAuthentication=post\n")
        XCTAssertTrue(json?.contains("JSON Body=") ?? false, json ?? "accepted")
        let type = refusal(
            "Method=POST\nBody=token={session}\nHeader=Content-Type: text/plain\nClientCredential=c\n"
                + "ClientAuthentication=post\n")
        XCTAssertTrue(type?.contains("Content-Type") ?? false, type ?? "accepted")
        let lonely = refusal("Method=POST\nBody=token={session}\nClientAuthentication=basic\n")
        XCTAssertTrue(lonely?.contains("ClientAuthentication= but no ClientCredential=") ?? false, lonely ?? "accepted")
        let mode = refusal("Method=POST\nBody=token={session}\nClientCredential=c\nClientAuthentication=digest\n")
        XCTAssertTrue(mode?.contains("ClientAuthentication") ?? false, mode ?? "accepted")
        XCTAssertNotNil(refusal("Method=POST\nBody=token={session}\nClientCredential=../c\n"))
    }

    func testAMissingOrMalformedCredentialMakesTheEndpointUnavailableWithoutShowingIt() throws {
        let idp = try endpoint("Method=POST\nBody=token={session}\nClientCredential=idp-client\n")
        XCTAssertEqual(
            EndpointTemplate(idp).unavailable, "client credential 'idp-client' for endpoint 'idp' is unavailable")
        for malformed in ["no-colon-secret", ":only-secret", "only-id:"] {
            let template = EndpointTemplate(idp, credentials: ["idp-client": malformed])
            XCTAssertEqual(
                template.unavailable,
                "client credential 'idp-client' for endpoint 'idp' does not hold client_id:client_secret")
            XCTAssertEqual(template.headers, [], "nothing half-sent")
        }
        let credential = try XCTUnwrap(ClientCredential("id:pa:ss"))
        XCTAssertEqual(credential.id, "id")
        XCTAssertEqual(credential.secret, "pa:ss", "split at the first colon")
        var dumped = ""
        dump(credential, to: &dumped)
        for text in [credential.description, "\(credential)", String(reflecting: credential)] {
            XCTAssertFalse(text.contains("pa:ss"), text)
        }
    }

    func testCredentialHeadersAndFieldsWrittenInTheFileAreRefusedWithoutEchoingThem() {
        for line in [
            "Header=Authorization: Basic aHVudGVyMg==", "Header=cookie: sid=hunter2",
            "Header=Proxy-Authorization: Basic aHVudGVyMg==",
        ] {
            let refused = refusal("Method=POST\nBody=token={session}\n\(line)\n")
            XCTAssertTrue(refused?.contains("use TokenCredential= or ClientCredential=") ?? false, refused ?? line)
            XCTAssertFalse(refused?.contains("aHVudGVyMg") ?? true, refused ?? line)
            XCTAssertFalse(refused?.contains("hunter2") ?? true, refused ?? line)
        }
        for body in ["token={session}&client_secret=hunter2", "user=u&Password=hunter2&s={session}"] {
            let refused = refusal("Method=POST\nBody=\(body)\n")
            XCTAssertTrue(refused?.contains("use ClientCredential=") ?? false, refused ?? body)
            XCTAssertFalse(refused?.contains("hunter2") ?? true, refused ?? body)
        }
        // The session key is not a secret of the file: it may go in these places.
        XCTAssertNil(refusal("Method=POST\nBody=token={session}\nHeader=Authorization: Bearer {session}\n"))
        XCTAssertNil(refusal("Method=POST\nBody=password={session}&client_secret=\n"))
        XCTAssertNil(refusal("Method=POST\nBody={\"password\": \"{session}\"}\n"))
    }
}
