import Foundation
import Glibc
import XCTest

/// `session-cleanup reload` (the unit's `ExecReload=`) against the real daemon: it returns once
/// the new configuration is in force, fails when it is invalid (the old one kept, the daemon
/// serving), and the start and reload checks that only the running daemon can make.
final class ReloadTests: XCTestCase {
    private func reload(_ daemon: DaemonProcess, asUID uid: UInt32? = nil) throws -> (
        status: Int32, out: String, err: String
    ) {
        try BuiltBinary.run(["reload", "--socket", daemon.socketPath], asUID: uid)
    }

    private func status(_ daemon: DaemonProcess) throws -> String {
        try BuiltBinary.run(["status", "--json", "--socket", daemon.socketPath]).out
    }

    func testAValidConfigurationIsInForceWhenReloadReturns() throws {
        let scratch = try ScratchDirectory("reload-ok")
        let daemon = try DaemonProcess(config: "[Stop]\nBudgetSec=5s\n", scratch: scratch)
        XCTAssertNotNil(daemon.waitUntilReady())
        _ = try scratch.write("session-cleanup.conf", "[Stop]\nBudgetSec=9s\n")
        let result = try reload(daemon)
        XCTAssertEqual(result.status, 0, result.err)
        XCTAssertTrue(result.out.hasPrefix("Configuration reloaded: "), result.out)
        // No waiting: the reply came after the configuration was applied.
        XCTAssertTrue(try status(daemon).contains("\"budget_usec\":9000000"))
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 5), 0)
    }

    func testAnInvalidConfigurationFailsTheReloadAndTheDaemonKeepsServing() throws {
        let scratch = try ScratchDirectory("reload-bad")
        let daemon = try DaemonProcess(config: "[Stop]\nBudgetSec=5s\n", scratch: scratch)
        XCTAssertNotNil(daemon.waitUntilReady())
        _ = try scratch.write("session-cleanup.conf.d/50-broken.conf", "[Stop]\nBudgetSec=whenever\n")
        let result = try reload(daemon)
        XCTAssertEqual(result.status, 78, result.err)
        XCTAssertTrue(result.err.contains("50-broken.conf:2:"), result.err)
        XCTAssertTrue(try status(daemon).contains("\"budget_usec\":5000000"), "the old one is kept")
        try FileManager.default.removeItem(atPath: scratch.path + "/session-cleanup.conf.d/50-broken.conf")
        XCTAssertEqual(try reload(daemon).status, 0, "fixed: the reload succeeds")
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 5), 0)
    }

    func testOnlyRootAndTheDaemonsOwnUserMayReload() throws {
        guard getuid() == 0 else { throw TestSetupError("needs root to act as another uid") }
        let daemon = try DaemonProcess(config: "[Control]\nSocketMode=0666\n")
        XCTAssertNotNil(daemon.waitUntilReady())
        chmod(daemon.scratch.path, 0o755)
        chmod(daemon.runtimeDirectory, 0o755)
        let other = try reload(daemon, asUID: 65534)
        XCTAssertEqual(other.status, 1, other.err)
        XCTAssertTrue(other.err.contains("reload is for root and the daemon's own user"), other.err)
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 5), 0)
    }

    func testATokenCredentialTheUnitDoesNotLoadFailsTheStartWithExConfig() throws {
        let scratch = try ScratchDirectory("credential")
        try FileManager.default.createDirectory(
            atPath: scratch.path + "/credentials", withIntermediateDirectories: true)
        let config = "[Endpoint]\nName=auth\nURL=http://127.0.0.1:9/{session}\nTokenCredential=auth-token\n"
        let daemon = try DaemonProcess(
            config: config, environment: ["CREDENTIALS_DIRECTORY": scratch.path + "/credentials"], scratch: scratch)
        XCTAssertEqual(daemon.waitForExit(timeout: 5), 78)
        XCTAssertTrue(daemon.stderr.contains("[Endpoint] auth TokenCredential=auth-token"), daemon.stderr)
        XCTAssertTrue(daemon.stderr.contains("cannot read credential 'auth-token'"), daemon.stderr)
    }

    func testATokenCredentialMissingAtReloadKeepsTheOldConfiguration() throws {
        let scratch = try ScratchDirectory("credential-reload")
        let credentials = scratch.path + "/credentials"
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
        _ = try scratch.write("credentials/auth-token", "s3cret-token\n")
        let config = "[Endpoint]\nName=auth\nURL=http://127.0.0.1:9/{session}\nTokenCredential=auth-token\n"
        let daemon = try DaemonProcess(
            config: config, environment: ["CREDENTIALS_DIRECTORY": credentials], scratch: scratch)
        XCTAssertNotNil(daemon.waitUntilReady(), daemon.stderr)
        _ = try scratch.write("session-cleanup.conf", config.replacing("auth-token", with: "other-token"))
        let result = try reload(daemon)
        XCTAssertEqual(result.status, 78, result.err)
        XCTAssertTrue(result.err.contains("TokenCredential=other-token"), result.err)
        XCTAssertFalse(result.err.contains("s3cret-token") || daemon.stderr.contains("s3cret-token"))
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 5), 0)
    }

    func testSessionsNamingARemovedEndpointAreReportedThenTheStopRunDropsThatEndpoint() throws {
        let scratch = try ScratchDirectory("unconfigured")
        let auth = "[Stop]\nMaxAttempts=1\n[Endpoint]\nName=auth\nURL=http://127.0.0.1:9/{session}\n"
        let first = try DaemonProcess(
            config: auth + "[Endpoint]\nName=old\nURL=http://127.0.0.1:9/{session}\n", scratch: scratch)
        XCTAssertNotNil(first.waitUntilReady())
        func register(_ endpoints: [String]) throws {
            let registered = try BuiltBinary.run(
                ["register"] + endpoints.flatMap { ["--endpoint", $0] } + ["--socket", first.socketPath], stdin: "k\n")
            XCTAssertEqual(registered.status, 0, registered.err)
        }
        try register(["auth", "old"])
        try register(["auth", "old"])
        try register(["old"])
        kill(first.pid, SIGKILL)  // keep the sessions: no stop run
        _ = first.waitForExit(timeout: 5)

        // Started without `old`: reported at start, in status, in list and at reload.
        let second = try DaemonProcess(config: auth, scratch: scratch)
        XCTAssertNotNil(second.waitUntilReady())
        XCTAssertTrue(second.stderr.contains("SESSION_CLEANUP_EVENT=endpoints-unconfigured"), second.stderr)
        XCTAssertTrue(second.stderr.contains("3 stored sessions name endpoints that are not configured: old (3)"))
        XCTAssertTrue(try status(second).contains("\"unconfigured_endpoints\":{\"old\":3}"))
        let list = try BuiltBinary.run(["list", "--json", "--socket", second.socketPath]).out
        XCTAssertEqual(list.components(separatedBy: "\"unconfigured_endpoints\":[\"old\"]").count - 1, 3, list)
        let reloaded = try reload(second)
        XCTAssertEqual(reloaded.status, 0)
        XCTAssertTrue(reloaded.err.contains("note: 3 stored sessions name endpoints"), reloaded.err)

        // The stop run drops `old` from every session; the one that had only `old` leaves the store.
        second.signal(SIGTERM)
        XCTAssertEqual(second.waitForExit(timeout: 10), 75, "the auth calls fail: 2 sessions kept")
        XCTAssertEqual(second.stderr.components(separatedBy: "SESSION_CLEANUP_EVENT=endpoints-dropped").count - 1, 3)
        let third = try DaemonProcess(config: auth, scratch: scratch)
        XCTAssertNotNil(third.waitUntilReady())
        let kept = try BuiltBinary.run(["list", "--json", "--socket", third.socketPath]).out
        XCTAssertEqual(kept.components(separatedBy: "\"endpoints\":[\"auth\"]").count - 1, 2, kept)
        XCTAssertFalse(kept.contains("\"old\""), kept)
        XCTAssertFalse(third.stderr.contains("endpoints-unconfigured"), third.stderr)
        kill(third.pid, SIGKILL)
    }
}
