import Foundation
import Glibc
import XCTest

/// A stop run cut off by SIGKILL (as TimeoutStopSec=, the watchdog, kill -9 or a power cut would)
/// is not forgotten: its start was made durable before the first call, so the next start ends
/// the unfinished sessions in the background after READY=1, without another stop.
final class InterruptedStopRunTests: XCTestCase {
    func testSessionsOfAStopRunCutOffBySigkillAreEndedAfterTheNextStart() throws {
        let server = try EndSessionServer()
        let scratch = try ScratchDirectory("interrupted")
        let config = "[Stop]\nBudgetSec=20s\n[Endpoint]\nName=auth\nURL=\(server.endSessionURL)\n"
        let first = try DaemonProcess(config: config, scratch: scratch)
        XCTAssertNotNil(first.waitUntilReady())
        let keys = (0..<5).map { "slow3000-interrupted-\($0)" }
        for key in keys {
            let result = try BuiltBinary.run(
                ["register", "--endpoint", "auth", "--socket", first.socketPath], stdin: key)
            XCTAssertEqual(result.status, 0, result.err)
        }
        first.signal(SIGTERM)
        // The calls take 3 s: kill the daemon in the middle of its stop run.
        let deadline = Date().addingTimeInterval(5)
        while !first.stderr.contains("SESSION_CLEANUP_EVENT=stop-begun") && Date() < deadline { usleep(5_000) }
        XCTAssertTrue(
            FileManager.default.fileExists(atPath: first.stateDirectory + "/stop-run-begun.json"),
            "the stop run's start is on disk before its first call")
        usleep(300_000)
        kill(first.pid, SIGKILL)
        _ = first.waitForExit(timeout: 5)

        let second = try DaemonProcess(config: config, scratch: scratch)
        XCTAssertNotNil(second.waitUntilReady(), second.stderr)
        XCTAssertTrue(second.stderr.contains("SESSION_CLEANUP_EVENT=stop-run-interrupted"), second.stderr)
        XCTAssertTrue(second.stderr.contains("5 sessions had no outcome"), second.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: second.stateDirectory + "/stop-run-begun.json"))
        let listed = try BuiltBinary.run(["list", "--json", "--socket", second.socketPath]).out
        XCTAssertEqual(listed.components(separatedBy: "\"last_outcome\":\"interrupted\"").count - 1, 5, listed)
        // Ended in the background after READY=1 (the calls take 3 s), with no stop run.
        let endBy = Date().addingTimeInterval(15)
        var left = listed
        while left != "[]\n" && Date() < endBy {
            usleep(200_000)
            left = try BuiltBinary.run(["list", "--json", "--socket", second.socketPath]).out
        }
        XCTAssertEqual(left, "[]\n", second.stderr)
        XCTAssertTrue(second.stderr.contains("RUN_KIND=leftover"), second.stderr)
        for key in keys { XCTAssertGreaterThanOrEqual(try server.calls(for: key).successes, 1, key) }
        second.signal(SIGTERM)
        XCTAssertEqual(second.waitForExit(timeout: 5), 0)
    }

    func testAStopRunThatFinishesLeavesNoRecordAndARestartAfterItEndsNothing() throws {
        let server = try EndSessionServer()
        let scratch = try ScratchDirectory("finished")
        let config = "[Endpoint]\nName=auth\nURL=\(server.endSessionURL)\n"
        let first = try DaemonProcess(config: config, scratch: scratch)
        XCTAssertNotNil(first.waitUntilReady())
        XCTAssertEqual(
            try BuiltBinary.run(["register", "--endpoint", "auth", "--socket", first.socketPath], stdin: "ok-1").status,
            0)
        first.signal(SIGTERM)
        XCTAssertEqual(first.waitForExit(timeout: 10), 0)
        XCTAssertTrue(first.stderr.contains("SYNC_USEC="), first.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: first.stateDirectory + "/stop-run-begun.json"))
        let second = try DaemonProcess(config: config, scratch: scratch)
        XCTAssertNotNil(second.waitUntilReady())
        XCTAssertFalse(second.stderr.contains("stop-run-interrupted"), second.stderr)
        second.signal(SIGTERM)
        XCTAssertEqual(second.waitForExit(timeout: 5), 0)
    }
}
