import Foundation
import XCTest

/// The real binary, a notify socket the test owns, real signals.
final class DaemonLifecycleTests: XCTestCase {
    func testStartsReadyThenStopsOnSigtermWithTheExactNotifyMessagesInOrder() throws {
        let daemon = try DaemonProcess(config: "[Stop]\nBudgetSec=7s\n")
        let startup = try XCTUnwrap(daemon.waitUntilReady(), "no READY=1; stderr: \(daemon.stderr)")
        let ready = try XCTUnwrap(startup.last)
        XCTAssertTrue(ready.hasPrefix("READY=1\nSTATUS=Ready: "), ready)
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 5), 0)
        let stopping = daemon.notify.drain(for: 0.2)
        XCTAssertEqual(stopping.first?.split(separator: "\n").first, "STOPPING=1")
        // The extension covers the 7 s budget plus the 5 s exit grace.
        XCTAssertTrue(stopping.first?.contains("\nEXTEND_TIMEOUT_USEC=12000000\n") ?? false, "\(stopping)")
        // The deadline keeper's thread may send its extension at any moment until the exit.
        let lastStatus = stopping.last { !$0.hasPrefix("EXTEND_TIMEOUT_USEC=") }
        XCTAssertTrue(lastStatus?.hasPrefix("STATUS=Stopped in ") ?? false, "\(stopping)")
        XCTAssertTrue(daemon.stderr.contains("SESSION_CLEANUP_EVENT=stop-begun"), daemon.stderr)
        XCTAssertTrue(daemon.stderr.contains("BUDGET_USEC=7000000"), daemon.stderr)
        XCTAssertTrue(daemon.stderr.contains("SESSION_CLEANUP_EVENT=stopped"), daemon.stderr)
    }

    func testTheRunningDaemonCannotDumpCore() throws {
        let daemon = try DaemonProcess(config: "[Stop]\nBudgetSec=7s\n")
        XCTAssertNotNil(daemon.waitUntilReady(), daemon.stderr)
        let limits = try String(contentsOfFile: "/proc/\(daemon.pid)/limits", encoding: .utf8)
        let core = limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") } ?? ""
        XCTAssertEqual(core.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).prefix(2), ["0", "0"])
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 5), 0)
    }

    func testSigintStopsLikeSigterm() throws {
        let daemon = try DaemonProcess()
        XCTAssertNotNil(daemon.waitUntilReady())
        daemon.signal(SIGINT)
        XCTAssertEqual(daemon.waitForExit(timeout: 5), 0)
        XCTAssertTrue(daemon.stderr.contains("SIGNAL=SIGINT"), daemon.stderr)
    }

    func testStatusFollowsRegistrationsWithinASecondInOneMessagePerBurst() throws {
        let daemon = try DaemonProcess(config: "[Endpoint]\nName=auth\nURL=http://127.0.0.1:1/{session}\n")
        let ready = try XCTUnwrap(daemon.waitUntilReady()?.last)
        XCTAssertTrue(ready.contains("STATUS=Ready: 0 sessions registered, 1 endpoint, stop budget 25 s"), ready)
        func register(_ key: String) throws {
            let result = try BuiltBinary.run(
                ["register", "--endpoint", "auth", "--socket", daemon.socketPath], stdin: key + "\n")
            XCTAssertEqual(result.status, 0, result.err)
        }
        try register("only-one")
        let first = daemon.notify.receive(timeout: 2)
        XCTAssertEqual(first, "STATUS=Ready: 1 session registered, 1 endpoint, stop budget 25 s")
        let burstStart = Date()
        for index in 0..<10 { try register("burst-\(index)") }
        let burst = daemon.notify.receive(until: { $0.contains("11 sessions") }, timeout: 3) ?? []
        XCTAssertLessThan(
            Date().timeIntervalSince(burstStart), 10 * 0.5 + 1.5, "reported within a second of the last change")
        XCTAssertLessThanOrEqual(burst.count, 3, "coalesced, not one per registration: \(burst)")
        XCTAssertEqual(burst.last, "STATUS=Ready: 11 sessions registered, 1 endpoint, stop budget 25 s")
        XCTAssertEqual(daemon.notify.drain(for: 1.2), [], "nothing more once it is up to date")
        daemon.signal(SIGTERM)
        XCTAssertNotNil(daemon.waitForExit(timeout: 30))
    }

    func testSighupReloadsAGoodConfigurationAndReportsReadyAgain() throws {
        let scratch = try ScratchDirectory("reload")
        let daemon = try DaemonProcess(config: "[Stop]\nBudgetSec=5s\n", scratch: scratch)
        XCTAssertNotNil(daemon.waitUntilReady())
        _ = try scratch.write("session-cleanup.conf", "[Stop]\nBudgetSec=9s\n")
        daemon.signal(SIGHUP)
        let messages = try XCTUnwrap(daemon.notify.receive(until: { $0.hasPrefix("READY=1") }, timeout: 5))
        XCTAssertTrue(messages.first?.hasPrefix("RELOADING=1\nMONOTONIC_USEC=") ?? false, "\(messages)")
        XCTAssertTrue(messages.last?.contains("stop budget 9 s") ?? false, "\(messages)")
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 5), 0)
        XCTAssertTrue(daemon.stderr.contains("BUDGET_USEC=9000000"), "the new budget governs the stop run")
    }

    func testSighupWithABrokenConfigurationKeepsTheOldOneAndSaysWhy() throws {
        let scratch = try ScratchDirectory("badreload")
        let daemon = try DaemonProcess(config: "[Stop]\nBudgetSec=5s\n", scratch: scratch)
        XCTAssertNotNil(daemon.waitUntilReady())
        _ = try scratch.write("session-cleanup.conf", "[Stop]\nBudgetSec=5s\nNoSuchKey=1\n")
        daemon.signal(SIGHUP)
        let messages = try XCTUnwrap(daemon.notify.receive(until: { $0.hasPrefix("READY=1") }, timeout: 5))
        XCTAssertTrue(messages.last?.contains("reload failed") ?? false, "\(messages)")
        XCTAssertTrue(daemon.stderr.contains("session-cleanup.conf:3: unknown key in [Stop]"), daemon.stderr)
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 5), 0)
        XCTAssertTrue(daemon.stderr.contains("BUDGET_USEC=5000000"), "the old budget still governs")
    }

    /// Issue 9: a FIFO in the drop-in directory used to block the daemon's only thread in
    /// `open()` at SIGHUP, so that SIGTERM was no longer handled.
    func testSighupWithAFIFODropInFailsTheReloadAndTheDaemonStillStops() throws {
        let scratch = try ScratchDirectory("fifo-reload")
        let daemon = try DaemonProcess(config: "[Stop]\nBudgetSec=5s\n", scratch: scratch)
        XCTAssertNotNil(daemon.waitUntilReady())
        let fifo = try scratch.write("session-cleanup.conf.d/10-ok.conf", "[Stop]\nMaxAttempts=2\n")
            .replacingOccurrences(of: "10-ok.conf", with: "20-fifo.conf")
        XCTAssertEqual(mkfifo(fifo, 0o644), 0)
        daemon.signal(SIGHUP)
        let messages = try XCTUnwrap(
            daemon.notify.receive(until: { $0.hasPrefix("READY=1") }, timeout: 5), "the reload did not wait on the FIFO"
        )
        XCTAssertTrue(messages.last?.contains("reload failed") ?? false, "\(messages)")
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 5), 0, "SIGTERM is still handled")
        XCTAssertTrue(daemon.stderr.contains("20-fifo.conf (not a regular file: a FIFO)"), daemon.stderr)
    }

    func testInvalidConfigurationAtStartExitsWithExConfigAndNamesTheLine() throws {
        let daemon = try DaemonProcess(config: "[Stop]\nBudgetSec=forever\n")
        XCTAssertEqual(daemon.waitForExit(timeout: 5), 78)
        XCTAssertTrue(
            daemon.stderr.contains("session-cleanup.conf:2: invalid BudgetSec=: expected a duration"), daemon.stderr)
    }

    func testWatchdogIsPingedAtHalfTheInterval() throws {
        let scratch = try ScratchDirectory("watchdog")
        // WATCHDOG_PID must name the daemon itself, which is unknown before it starts:
        // without WATCHDOG_PID, sd_watchdog_enabled accepts WATCHDOG_USEC for any process.
        let daemon = try DaemonProcess(environment: ["WATCHDOG_USEC": "400000"], scratch: scratch)
        XCTAssertNotNil(daemon.waitUntilReady())
        let pings = daemon.notify.drain(for: 1.1).filter { $0 == "WATCHDOG=1" }
        XCTAssertTrue((4...7).contains(pings.count), "expected a ping every 200 ms, got \(pings.count) in 1.1 s")
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 5), 0)
    }

    func testCheckConfigValidatesAndExitsNonZeroOnErrors() throws {
        let scratch = try ScratchDirectory("check")
        let good = try scratch.write("good.conf", "[Stop]\nBudgetSec=10s\n")
        let result = try BuiltBinary.run(["check-config", "--config", good])
        XCTAssertEqual(result.status, 0)
        XCTAssertTrue(result.out.contains("Configuration OK"))
        _ = try scratch.write("good.conf.d/50-more.conf", "[Stop]\nMaxConcurrentRequests=nope\n")
        let bad = try BuiltBinary.run(["check-config", "--config", good])
        XCTAssertEqual(bad.status, 78)
        XCTAssertTrue(bad.err.contains("good.conf.d/50-more.conf:2:"), bad.err)
    }

    func testHelpVersionAndUsageErrors() throws {
        XCTAssertEqual(try BuiltBinary.run(["--version"]).status, 0)
        XCTAssertEqual(try BuiltBinary.run(["daemon", "--help"]).status, 0)
        XCTAssertEqual(try BuiltBinary.run(["check-config", "--version"]).out, "session-cleanup 0.1.0\n")
        let unknown = try BuiltBinary.run(["frobnicate"])
        XCTAssertEqual(unknown.status, 2)
        XCTAssertTrue(unknown.err.contains("unknown verb 'frobnicate'"))
        XCTAssertEqual(try BuiltBinary.run(["daemon", "--bogus"]).status, 2)
        XCTAssertEqual(try BuiltBinary.run([]).status, 2)
    }
}

final class NotifyQueueTests: XCTestCase {
    func testAFullNotifyQueueNeverStallsTheDaemon() throws {
        // Nobody reads the notify socket; the watchdog asks for a ping every 10 ms, so its
        // queue fills at once. libsystemd's own sd_notify would block here.
        let daemon = try DaemonProcess(environment: ["WATCHDOG_USEC": "20000"])
        XCTAssertNotNil(daemon.waitUntilReady())
        usleep(300_000)
        let status = try BuiltBinary.run(["status", "--socket", daemon.socketPath])
        XCTAssertEqual(status.status, 0, "the loop still serves: \(status.err)")
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 2), 0)
    }
}
