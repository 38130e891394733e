import Foundation
import XCTest

/// `TokenURL=` end to end: the daemon obtains an access token from a local token endpoint
/// (`Tests/Support/endsession_server.py`'s `/token`, which authenticates the client itself and
/// counts its grants) and ends `bearer-…` sessions with it; the server accepts only tokens it
/// issued and has not revoked. Every token it issued and the client secret are searched for in
/// everything the daemon and its verbs print or write.
final class TokenURLTests: XCTestCase {
    private let secret = "cl1ent-s3cret-value"

    private struct Setup {
        let server: EndSessionServer
        let daemon: DaemonProcess
        let issued: String
        /// The credentials directory and the issued tokens' file (removed with it).
        let files: ScratchDirectory
    }

    /// A token server for client `daemon-client` (Basic), a daemon whose endpoint `admin` takes
    /// its token from `tokenPath`, and `count` sessions registered there.
    private func start(
        tokenPath: String = "/token", count: Int, expiresIn: Int = 300, scope: String? = "admin",
        stop: String = "BudgetSec=8s\nRetryDelaySec=100ms\nMaxAttempts=1\n"
    ) throws -> (Setup, [String]) {
        let files = try ScratchDirectory("token")
        let client = try files.write("idp-client", "daemon-client:\(secret)\n")
        let issued = files.path + "/issued"
        var options = ["--issued-file", issued, "--token-expires-in", String(expiresIn)]
        if let scope { options += ["--token-scope", scope] }
        let server = try EndSessionServer(client: (client, "basic"), options: options)
        let config =
            "[Stop]\n\(stop)[Endpoint]\nName=admin\nURL=\(server.endSessionURL)\nMethod=DELETE\nSuccess=2xx\n"
            + "TimeoutSec=3s\nClientCredential=idp-client\nTokenURL=\(server.origin)\(tokenPath)\n"
            + (scope.map { "TokenScope=\($0)\n" } ?? "")
        let daemon = try DaemonProcess(config: config, environment: ["CREDENTIALS_DIRECTORY": files.path])
        XCTAssertNotNil(daemon.waitUntilReady(), "not ready: \(daemon.stderr)")
        let keys = (1...count).map { "bearer-\($0)-\(UUID().uuidString)" }
        try register(keys, at: daemon)
        return (Setup(server: server, daemon: daemon, issued: issued, files: files), keys)
    }

    private func stats(_ setup: Setup) throws -> (grants: Int, refusals: Int, bearerRefusals: Int) {
        let stats = try setup.server.stats()
        return (
            stats["grants"] as? Int ?? -1, stats["grant_refusals"] as? Int ?? -1, stats["bearer_refusals"] as? Int ?? -1
        )
    }

    /// Searches the daemon's stderr, its notify messages (`STATUS=` …), `extra` outputs (`list`,
    /// `status`, `report`) and every file of its state directory for every token the server issued and for the client secret.
    private func assertSecretsNowhere(
        _ setup: Setup, extra: [String] = [], file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let tokens = ((try? String(contentsOfFile: setup.issued, encoding: .utf8)) ?? "").split(separator: "\n")
            .map(String.init)
        // STATUS= and every other notify message the daemon sent (it has exited: all are queued).
        let notified = setup.daemon.notify.drain(for: 0.2)
        XCTAssertTrue(notified.contains { $0.contains("STATUS=") }, "\(notified)", file: file, line: line)
        var outputs = [setup.daemon.stderr] + extra + notified
        let state = setup.daemon.stateDirectory
        for name in (FileManager.default.enumerator(atPath: state)?.allObjects as? [String]) ?? [] {
            if let data = FileManager.default.contents(atPath: state + "/" + name) {
                outputs.append(String(decoding: data, as: UTF8.self))
            }
        }
        for secret in tokens + [secret] {
            for output in outputs {
                XCTAssertFalse(
                    output.contains(secret), "a token or the client secret was printed", file: file, line: line)
            }
        }
    }

    func testTenSessionsAreEndedWithOneGrantAndNoTokenIsShownAnywhere() throws {
        let (setup, keys) = try start(count: 10)
        setup.daemon.signal(SIGTERM)
        XCTAssertEqual(setup.daemon.waitForExit(timeout: 15), 0, setup.daemon.stderr)
        let outcomes = JournalLines.callOutcomes(setup.daemon.stderr)
        XCTAssertEqual(outcomes.values.filter { $0["OUTCOME"] == "ended" }.count, 10, setup.daemon.stderr)
        let counts = try stats(setup)
        XCTAssertEqual(counts.grants, 1, "one grant for every call")
        XCTAssertEqual(counts.bearerRefusals, 0)
        let byHash = try setup.server.stats()["by_key_hash"] as? [String: [String: Any]] ?? [:]
        for hash in try EndSessionServer.hashes(of: keys).values {
            XCTAssertEqual(byHash[hash]?["successes"] as? Int, 1, "each session ended once at the server")
        }
        XCTAssertTrue(setup.daemon.stderr.contains("SESSION_CLEANUP_EVENT=token-obtained"), setup.daemon.stderr)
        XCTAssertTrue(setup.daemon.stderr.contains("TOKEN_SCOPE=admin"), setup.daemon.stderr)
        try assertSecretsNowhere(setup)
    }

    func testARefusedGrantFailsEveryCallAtOnceWithTheCauseAndKeepsTheSessions() throws {
        let (setup, _) = try start(tokenPath: "/token/deny", count: 5)
        let began = Date()
        setup.daemon.signal(SIGTERM)
        XCTAssertEqual(setup.daemon.waitForExit(timeout: 15), 75, setup.daemon.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(began), 4, "no call waits out a timeout")
        let outcomes = JournalLines.callOutcomes(setup.daemon.stderr)
        XCTAssertEqual(outcomes.count, 5)
        for fields in outcomes.values {
            XCTAssertEqual(fields["OUTCOME"], "failed")
            XCTAssertEqual(
                fields["ERROR"], "token-failed: 401 from \(setup.server.origin) (invalid_client)", setup.daemon.stderr)
        }
        XCTAssertEqual(try stats(setup).refusals, 1, "one grant, not one per call")
        XCTAssertEqual(try setup.server.stats()["calls"] as? Int, 0, "no end-session call went out")
        XCTAssertTrue(setup.daemon.stderr.contains("SESSION_CLEANUP_EVENT=token-failed"), setup.daemon.stderr)
        try assertSecretsNowhere(setup)
    }

    func testAReplyThatIsNotATokenFailsTheCallsSayingSo() throws {
        let (setup, _) = try start(tokenPath: "/token/html", count: 2)
        setup.daemon.signal(SIGTERM)
        XCTAssertEqual(setup.daemon.waitForExit(timeout: 15), 75, setup.daemon.stderr)
        let causes = Set(JournalLines.callOutcomes(setup.daemon.stderr).values.compactMap { $0["ERROR"] })
        XCTAssertEqual(causes.count, 1, setup.daemon.stderr)
        XCTAssertTrue(
            causes.first?.hasPrefix("token-failed: the reply from \(setup.server.origin) is not JSON") ?? false,
            "\(causes)")
    }

    func testAnUnreachableTokenEndpointFailsTheCallsAtOnce() throws {
        let files = try ScratchDirectory("token")
        _ = try files.write("idp-client", "daemon-client:\(secret)\n")
        let closed = try EndSessionServer.closedPort()
        let config =
            "[Endpoint]\nName=admin\nURL=http://127.0.0.1:9/user/{session}\nMethod=DELETE\nSuccess=2xx\n"
            + "ClientCredential=idp-client\nTokenURL=http://127.0.0.1:\(closed)/token\n"
        let daemon = try DaemonProcess(config: config, environment: ["CREDENTIALS_DIRECTORY": files.path])
        XCTAssertNotNil(daemon.waitUntilReady(), daemon.stderr)
        try register(["bearer-1", "bearer-2"], at: daemon)
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 15), 75, daemon.stderr)
        let causes = JournalLines.callOutcomes(daemon.stderr).values.compactMap { $0["ERROR"] }
        XCTAssertEqual(causes.count, 2, daemon.stderr)
        XCTAssertTrue(
            causes.allSatisfy { $0.hasPrefix("token-failed: http://127.0.0.1:\(closed) unreachable") }, "\(causes)")
    }

    func testARevokedTokenGetsOneFreshGrantAndTheCallsAreRetriedOnce() throws {
        let (setup, _) = try start(count: 3)
        // An `end` run obtains the token; the server then forgets it; the stop run's calls get 401
        // with the cached token, and go again with a fresh one.
        let first = try BuiltBinary.run(["end", "--socket", setup.daemon.socketPath, "--all"])
        XCTAssertEqual(first.status, 0, first.out + first.err)
        XCTAssertEqual(try stats(setup).grants, 1)
        try register(["bearer-a", "bearer-b"], at: setup.daemon)
        let listed = try BuiltBinary.run(["list", "--socket", setup.daemon.socketPath])
        _ = try setup.server.stats()
        try revokeTokens(setup.server)
        let report = try BuiltBinary.run(["report", "--socket", setup.daemon.socketPath, "--json"])
        let status = try BuiltBinary.run(["status", "--socket", setup.daemon.socketPath])
        XCTAssertEqual(status.status, 0, status.err)
        setup.daemon.signal(SIGTERM)
        XCTAssertEqual(setup.daemon.waitForExit(timeout: 15), 0, setup.daemon.stderr)
        let counts = try stats(setup)
        XCTAssertEqual(counts.grants, 2, "one fresh grant for both calls answered 401")
        XCTAssertEqual(counts.bearerRefusals, 2)
        XCTAssertEqual(
            JournalLines.callOutcomes(setup.daemon.stderr).values.filter { $0["OUTCOME"] == "ended" }.count, 5)
        try assertSecretsNowhere(setup, extra: [first.out, first.err, listed.out, report.out, report.err, status.out])
    }

    func testAnExpiredTokenIsNotUsedAgain() throws {
        // expires_in 2: used for 1 s (the margin is at most half the lifetime).
        let (setup, _) = try start(count: 1, expiresIn: 2)
        XCTAssertEqual(try BuiltBinary.run(["end", "--socket", setup.daemon.socketPath, "--all"]).status, 0)
        usleep(1_200_000)
        try register(["bearer-late"], at: setup.daemon)
        XCTAssertEqual(try BuiltBinary.run(["end", "--socket", setup.daemon.socketPath, "--all"]).status, 0)
        let counts = try stats(setup)
        XCTAssertEqual(counts.grants, 2, "a new token once the old one's validity ran out")
        XCTAssertEqual(counts.bearerRefusals, 0, "never sent with an expired token")
        setup.daemon.signal(SIGTERM)
        _ = setup.daemon.waitForExit(timeout: 15)
    }

    /// Registers each of `keys` at endpoint `admin` of `daemon`, one `register` each.
    private func register(
        _ keys: [String], at daemon: DaemonProcess, file: StaticString = #filePath, line: UInt = #line
    )
        throws
    {
        for key in keys {
            let registered = try BuiltBinary.run(
                ["register", "--socket", daemon.socketPath, "--endpoint", "admin"], stdin: key + "\n")
            XCTAssertEqual(registered.status, 0, registered.err, file: file, line: line)
        }
    }

    /// `POST /_revoke_tokens`: the server refuses every token it issued so far.
    private func revokeTokens(_ server: EndSessionServer) throws {
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = ["-s", "--max-time", "5", "-X", "POST", server.origin + "/_revoke_tokens"]
        curl.standardOutput = FileHandle.nullDevice
        try curl.run()
        curl.waitUntilExit()
        XCTAssertEqual(curl.terminationStatus, 0)
    }
}
