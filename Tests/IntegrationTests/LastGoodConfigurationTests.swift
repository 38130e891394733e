import Foundation
import Glibc
import XCTest

/// A typo in a drop-in followed by a restart neither ends the sessions nor leaves them without a
/// daemon: the process whose files are invalid at start runs on the last configuration that
/// loaded (kept in the state directory), says so in the journal, `STATUS=` and `status`, keeps
/// refusing to reload the broken files, and leaves the fallback once they are fixed.
final class LastGoodConfigurationTests: XCTestCase {
    private func status(_ daemon: DaemonProcess) throws -> String {
        try BuiltBinary.run(["status", "--json", "--socket", daemon.socketPath]).out
    }

    func testInvalidFilesAtStartRunOnTheLastGoodConfigurationLoudlyUntilFixed() throws {
        let scratch = try ScratchDirectory("last-good")
        let first = try DaemonProcess(config: "[Stop]\nBudgetSec=7s\n", scratch: scratch)
        XCTAssertNotNil(first.waitUntilReady(), first.stderr)
        XCTAssertTrue(
            FileManager.default.fileExists(atPath: first.stateDirectory + "/last-good-configuration.json"),
            "saved after the start")
        first.signal(SIGTERM)
        XCTAssertEqual(first.waitForExit(timeout: 5), 0, first.stderr)

        _ = try scratch.write("session-cleanup.conf.d/50-typo.conf", "[Stop]\nBudgetSec=whenever\n")
        let check = try BuiltBinary.run(["check-config", "--config", scratch.path + "/session-cleanup.conf"])
        XCTAssertEqual(check.status, 78, "check-config still refuses the files: \(check.err)")

        let second = try DaemonProcess(config: "[Stop]\nBudgetSec=7s\n", scratch: scratch)
        let ready = second.waitUntilReady()
        XCTAssertNotNil(ready, "a daemon runs: \(second.stderr)")
        XCTAssertTrue(second.stderr.contains("SESSION_CLEANUP_EVENT=config-fallback"), second.stderr)
        XCTAssertTrue(second.stderr.contains("50-typo.conf:2:"), "the error names the file and line: \(second.stderr)")
        let statusLine = (ready ?? []).joined(separator: "\n")
        XCTAssertTrue(statusLine.contains("running on the last good one"), statusLine)
        let answer = try status(second)
        XCTAssertTrue(answer.contains("\"configuration_fallback\":"), answer)
        XCTAssertTrue(answer.contains("\"budget_usec\":7000000"), "the last good budget is in force: \(answer)")
        let refused = try BuiltBinary.run(["reload", "--socket", second.socketPath])
        XCTAssertEqual(refused.status, 78, "reload still refuses the broken files: \(refused.err)")

        try FileManager.default.removeItem(atPath: scratch.path + "/session-cleanup.conf.d/50-typo.conf")
        _ = try scratch.write("session-cleanup.conf", "[Stop]\nBudgetSec=9s\n")
        let fixed = try BuiltBinary.run(["reload", "--socket", second.socketPath])
        XCTAssertEqual(fixed.status, 0, fixed.err)
        let after = try status(second)
        XCTAssertFalse(after.contains("configuration_fallback"), after)
        XCTAssertTrue(after.contains("\"budget_usec\":9000000"), after)
        second.signal(SIGTERM)
        XCTAssertEqual(second.waitForExit(timeout: 5), 0, second.stderr)
    }

    func testInvalidFilesWithNoLastGoodConfigurationStillExit78() throws {
        let daemon = try DaemonProcess(config: "[Stop]\nBudgetSec=whenever\n")
        XCTAssertEqual(daemon.waitForExit(timeout: 5), 78, daemon.stderr)
        XCTAssertTrue(daemon.stderr.contains("no last good one to run on"), daemon.stderr)
    }
}
