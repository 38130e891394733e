import Foundation
import XCTest

/// `ClientCredential=` end to end: the daemon reads `client_id:client_secret` from its credentials
/// directory and authenticates each call as `ClientAuthentication=` says; the test server decodes
/// it on its own (Python's base64 and form-decoding) and answers 401 unless the client matches.
final class ClientAuthenticationTests: XCTestCase {
    /// A secret with what form-encoding changes (`:`, `+`, `/`, a space, non-ASCII).
    private let secret = "s3cr:t+/ é-client-secret"

    /// Registers `key` at endpoint `idp`, stops the daemon and returns its outcome and stderr.
    private func endOne(authentication: String, serverExpects: String) throws -> (outcome: String?, stderr: String) {
        let credentials = try ScratchDirectory("credentials")
        let clientFile = try credentials.write("idp-client", "my client:\(secret)\n")
        let server = try EndSessionServer(client: (clientFile, serverExpects))
        defer { server.stop() }
        let config =
            "[Stop]\nBudgetSec=6s\nRetryDelaySec=100ms\nMaxAttempts=1\n[Endpoint]\nName=idp\n"
            + "URL=\(server.endSessionURL)\nMethod=POST\nSuccess=2xx\nClientCredential=idp-client\n"
            + "ClientAuthentication=\(authentication)\n"
        let daemon = try DaemonProcess(config: config, environment: ["CREDENTIALS_DIRECTORY": credentials.path])
        XCTAssertNotNil(daemon.waitUntilReady(), "not ready: \(daemon.stderr)")
        let registered = try BuiltBinary.run(
            ["register", "--socket", daemon.socketPath, "--endpoint", "idp"], stdin: "client-1\n")
        XCTAssertEqual(registered.status, 0, registered.err)
        let id = registered.out.trimmingCharacters(in: .whitespacesAndNewlines)
        daemon.signal(SIGTERM)
        _ = daemon.waitForExit(timeout: 10)
        XCTAssertFalse(daemon.stderr.contains("s3cr"), "the secret stays out of the daemon's output")
        return (JournalLines.callOutcomes(daemon.stderr)["\(id)/idp"]?["OUTCOME"], daemon.stderr)
    }

    func testEachAuthenticationIsWhatAServerDecodingItThatWayAccepts() throws {
        for mode in ["basic", "basic-raw", "post"] {
            XCTAssertEqual(try endOne(authentication: mode, serverExpects: mode).outcome, "ended", mode)
        }
    }

    func testBasicRawIsNotWhatAnRFC6749ServerAccepts() throws {
        // The form-encoding is what tells the two apart: the server must see a difference.
        let result = try endOne(authentication: "basic-raw", serverExpects: "basic")
        XCTAssertEqual(result.outcome, "rejected", result.stderr)
    }

    func testAMalformedClientCredentialFailsTheStartWithoutShowingIt() throws {
        let credentials = try ScratchDirectory("credentials")
        _ = try credentials.write("idp-client", "no-colon-s3cret\n")
        let config =
            "[Endpoint]\nName=idp\nURL=http://127.0.0.1:9/{session}\nMethod=POST\nClientCredential=idp-client\n"
        let daemon = try DaemonProcess(config: config, environment: ["CREDENTIALS_DIRECTORY": credentials.path])
        XCTAssertEqual(daemon.waitForExit(timeout: 10), 78, daemon.stderr)
        XCTAssertTrue(
            daemon.stderr.contains("ClientCredential=idp-client: credential 'idp-client' must hold client_id:"),
            daemon.stderr)
        XCTAssertFalse(daemon.stderr.contains("s3cr"), daemon.stderr)
    }
}
