import Foundation
import XCTest

/// `TokenURL=` at a real identity provider (issue 24 part 2): glewlwyd (Debian 12) on loopback,
/// set up by `Tests/Providers/providers.py`. The daemon obtains an access token with the
/// `session-cleanup-revoke` scope by a client-credentials grant at glewlwyd's token endpoint
/// (the client's `id:secret` from a credential) and revokes 200 tokens at its RFC 7009
/// revocation endpoint with `Authorization: Bearer` alone — glewlwyd accepts such a bearer token
/// for any token, and uses only it when one is sent. Checked at the provider (introspection),
/// not only in the daemon's report; the client secret, the tokens and no obtained token may
/// appear in any output or file (the obtained token is unknown to the test: it searches for
/// every JWT-shaped word the daemon printed instead).
///
/// Needs `SESSION_CLEANUP_PROVIDERS` (the `providers.json` that `providers.py up` writes; set
/// by `scripts/test.sh`); without it the test is skipped, as IdentityProviderTests is.
final class TokenURLProviderTests: XCTestCase {
    private static let tokens = 200

    func testGlewlwydRevokesEveryTokenWithAnAccessTokenTheDaemonObtained() throws {
        guard let path = ProcessInfo.processInfo.environment["SESSION_CLEANUP_PROVIDERS"], !path.isEmpty else {
            throw XCTSkip("SESSION_CLEANUP_PROVIDERS is not set (scripts/test.sh sets the providers up and sets it)")
        }
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path)))
        let document = try XCTUnwrap(json as? [String: Any], path)
        let providers = (document["providers"] as? [String: Any]) ?? document
        guard let glewlwyd = providers["glewlwyd"] as? [String: Any] else {
            throw XCTSkip("glewlwyd is not in \(path) (providers.py up --providers glewlwyd)")
        }
        let revocation = try XCTUnwrap(glewlwyd["revocation_endpoint"] as? String)
        let tokenEndpoint = try XCTUnwrap(glewlwyd["token_endpoint"] as? String)
        let scope = try XCTUnwrap(glewlwyd["revocation_scope"] as? String)
        let clients = try XCTUnwrap(glewlwyd["clients"] as? [String: Any])
        let client = try XCTUnwrap(clients["session-cleanup"] as? [String: Any])
        let credential = try String(
            contentsOfFile: try XCTUnwrap(client["credential_file"] as? String), encoding: .utf8)
        let secret = String(credential.drop { $0 != ":" }.dropFirst()).trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertFalse(secret.isEmpty)

        let tokenDirectory = try ScratchDirectory("idp-tokens")  // outside the daemon's, which is searched
        let tokenFile = tokenDirectory.path + "/tokens"
        try ProvidersScript.run(["mint", "--dir", directory, "glewlwyd", tokenFile, "\(Self.tokens)"])
        let tokens = try String(contentsOfFile: tokenFile, encoding: .utf8).split(separator: "\n").map(String.init)
        XCTAssertEqual(tokens.count, Self.tokens)
        XCTAssertEqual(try ProvidersScript.check(directory, "glewlwyd", tokenFile)["active"], Self.tokens)

        let credentials = try ScratchDirectory("idp-credentials")
        chmod(try credentials.write("idp-client", credential), 0o600)
        // glewlwyd compares the raw secret: Basic without RFC 6749's form-encoding.
        let config =
            "[Stop]\nBudgetSec=25s\n[Endpoint]\nName=idp\nURL=\(revocation)\nMethod=POST\nBody=token={session}\n"
            + "Header=Content-Type: application/x-www-form-urlencoded\nSuccess=2xx\nGoneStatus=\n"
            + "ClientCredential=idp-client\nClientAuthentication=basic-raw\nTokenURL=\(tokenEndpoint)\n"
            + "TokenScope=\(scope)\n"
        let scratch = try ScratchDirectory("idp-glewlwyd-token")
        let daemon = try DaemonProcess(
            config: config, environment: ["CREDENTIALS_DIRECTORY": credentials.path], scratch: scratch)
        XCTAssertNotNil(daemon.waitUntilReady(), daemon.stderr)
        let control = try RawClient(path: daemon.socketPath)
        for (index, token) in tokens.enumerated() {
            let line = #"{"op":"register","key":"\#(token)","endpoints":["idp"]}"#
            guard control.send(line + "\n"), let reply = control.readObject(timeout: 10), reply["ok"] as? Bool == true
            else { return XCTFail("registration \(index) failed: \(daemon.stderr)") }
        }

        let signalled = Date()
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 40), 0, "every session ended: \(daemon.stderr.suffix(2000))")
        let stopSeconds = Date().timeIntervalSince(signalled)
        let stderr = daemon.stderr
        let summary = try XCTUnwrap(
            stderr.split(separator: "\n").last { $0.contains("SESSION_CLEANUP_EVENT=run-finished") }
                .map { JournalLines.parse(String($0)) }, stderr)
        XCTAssertEqual(summary["CALLS_ENDED"], "\(Self.tokens)", "\(summary)")
        let obtained = stderr.split(separator: "\n").filter { $0.contains("SESSION_CLEANUP_EVENT=token-obtained") }
        XCTAssertEqual(obtained.count, 1, "one grant for 200 calls: \(stderr.suffix(2000))")

        // The provider's word: no token is active any more.
        let after = try ProvidersScript.check(directory, "glewlwyd", tokenFile)
        XCTAssertEqual(after["active"], 0, "tokens still active at glewlwyd: \(after)")

        // Nothing secret anywhere: the client secret, the revoked tokens, and no JWT (glewlwyd's
        // access tokens are JWTs: `eyJ…`) in any output or file of the daemon.
        var outputs = [stderr]
        let enumerator = FileManager.default.enumerator(atPath: scratch.path)
        while let name = enumerator?.nextObject() as? String {
            let file = scratch.path + "/" + name
            let type = try FileManager.default.attributesOfItem(atPath: file)[.type] as? FileAttributeType
            if type == .typeRegular {  // not the sockets
                outputs.append(String(decoding: try Data(contentsOf: URL(fileURLWithPath: file)), as: UTF8.self))
            }
        }
        for (index, output) in outputs.enumerated() {
            XCTAssertFalse(output.contains(secret), "the client secret is in output \(index)")
            XCTAssertFalse(output.contains("eyJ"), "a JWT (an access token) is in output \(index)")
            if let leaked = tokens.firstIndex(where: { output.contains($0) }) {
                XCTFail("token \(leaked) is in output \(index)")
            }
        }
        print(
            "identity-provider: glewlwyd TokenURL=: \(tokens.count) tokens registered, \(after["inactive"] ?? -1) "
                + "revoked at the provider (\(after["active"] ?? -1) active), daemon: \(summary["CALLS_ENDED"] ?? "?") "
                + "of \(summary["CALLS_TOTAL"] ?? "?") calls ended, \(obtained.count) grant, "
                + "stop run \(String(format: "%.2f", stopSeconds)) s (SIGTERM to exit)")
    }
}
