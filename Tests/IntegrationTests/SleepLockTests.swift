import Foundation
import Glibc
import XCTest

/// `[Sleep] EndSessions=yes` in the real daemon against a fake logind (Tests/Support/fake_logind.py)
/// on a private dbus-daemon the test starts: the daemon takes a delay lock, ends the sessions
/// when PrepareForSleep(true) comes, releases the lock (the fake sees its pipe closed), takes
/// it again at resume and retries what it could not end.
final class SleepLockTests: XCTestCase {
    /// A private bus and the fake logind on it.
    private final class FakeLogind {
        let scratch: ScratchDirectory
        let address: String
        let eventsPath: String
        private let bus = Process()
        private let fake = Process()
        private let commands = Pipe()

        init(delayUsec: Int = 5_000_000) throws {
            scratch = try ScratchDirectory("logind")
            let socket = scratch.path + "/bus"
            address = "unix:path=\(socket)"
            eventsPath = scratch.path + "/events"
            bus.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
            bus.arguments = ["--session", "--nofork", "--nopidfile", "--address=\(address)"]
            bus.standardOutput = FileHandle.nullDevice
            bus.standardError = FileHandle.nullDevice
            try bus.run()
            let deadline = Date().addingTimeInterval(10)
            while !FileManager.default.fileExists(atPath: socket) && Date() < deadline { usleep(10_000) }
            guard FileManager.default.fileExists(atPath: socket) else {
                throw TestSetupError("dbus-daemon: no \(socket)")
            }
            fake.executableURL = URL(fileURLWithPath: "/usr/bin/python3")  // Debian's, with python3-dbus
            fake.arguments = [
                EndSessionServer.supportDirectory + "/fake_logind.py", "--address", address, "--events", eventsPath,
                "--delay-usec", String(delayUsec),
            ]
            fake.standardInput = commands
            fake.standardOutput = FileHandle.nullDevice
            try fake.run()
            guard waitFor("ready", timeout: 10) else { throw TestSetupError("fake logind did not start: \(events)") }
        }

        deinit {
            try? commands.fileHandleForWriting.close()
            for process in [fake, bus] where process.isRunning {
                process.terminate()
                process.waitUntilExit()
            }
        }

        var events: [String] {
            ((try? String(contentsOfFile: eventsPath, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        /// Stops the bus daemon: every connection to it ends.
        func stopBus() {
            bus.terminate()
            bus.waitUntilExit()
        }

        func send(_ command: String) { commands.fileHandleForWriting.write(Data((command + "\n").utf8)) }

        /// Waits until `line` is among the events.
        func waitFor(_ line: String, timeout: TimeInterval) -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            while !events.contains(line) {
                if Date() > deadline { return false }
                usleep(5_000)
            }
            return true
        }
    }

    /// What `status` says on its "sleep lock:" line.
    private func sleepLockLine(_ status: String) -> String? {
        status.split(separator: "\n").first { $0.hasPrefix("sleep lock:") }.map {
            $0.dropFirst("sleep lock:".count).trimmingCharacters(in: .whitespaces)
        }
    }

    private func register(_ key: String, at daemon: DaemonProcess) throws {
        let registered = try BuiltBinary.run(
            ["register", "--endpoint", "auth", "--socket", daemon.socketPath], stdin: key + "\n")
        XCTAssertEqual(registered.status, 0, registered.err)
    }

    func testTheLockIsTakenReleasedAfterTheSleepRunAndTakenAgainAtResume() throws {
        let logind = try FakeLogind()
        let server = try EndSessionServer()
        let config =
            "[Stop]\nMaxAttempts=1\n[Sleep]\nEndSessions=yes\n[Endpoint]\nName=auth\nURL=\(server.endSessionURL)\n"
        let daemon = try DaemonProcess(config: config, environment: ["DBUS_SYSTEM_BUS_ADDRESS": logind.address])
        XCTAssertNotNil(daemon.waitUntilReady())
        XCTAssertTrue(logind.waitFor("inhibit 1 sleep session-cleanup delay", timeout: 5), "\(logind.events)")
        XCTAssertTrue(logind.events.contains("delay-asked"), "\(logind.events)")
        let status = try BuiltBinary.run(["status", "--socket", daemon.socketPath])
        XCTAssertEqual(sleepLockLine(status.out), "held", status.out + status.err)
        try register("ok-sleep-one", at: daemon)
        try register("no-sleep-two", at: daemon)

        logind.send("sleep")
        XCTAssertTrue(logind.waitFor("released 1", timeout: 5), "\(logind.events)\n\(daemon.stderr)")
        // Released only after the run: both calls were made by then.
        XCTAssertEqual(try server.calls(for: "ok-sleep-one").successes, 1)
        XCTAssertEqual(try server.calls(for: "no-sleep-two").calls, 1)
        XCTAssertTrue(daemon.stderr.contains("SESSION_CLEANUP_EVENT=sleeping"), daemon.stderr)
        XCTAssertTrue(daemon.stderr.contains("RUN_KIND=sleep"), daemon.stderr)
        let listed = try BuiltBinary.run(["list", "--socket", daemon.socketPath])
        XCTAssertEqual(listed.status, 0, listed.err)
        XCTAssertEqual(
            listed.out.components(separatedBy: "auth").count - 1, 1, "only the rejected one stays: \(listed.out)")

        logind.send("resume")
        XCTAssertTrue(logind.waitFor("inhibit 2 sleep session-cleanup delay", timeout: 5), "\(logind.events)")
        XCTAssertFalse(logind.events.contains("released 2"))
        // What the sleep run could not end is retried after the resume (5 s later).
        let deadline = Date().addingTimeInterval(15)
        while try server.calls(for: "no-sleep-two").calls < 2 && Date() < deadline { usleep(100_000) }
        XCTAssertEqual(try server.calls(for: "no-sleep-two").calls, 2, daemon.stderr)
        XCTAssertEqual(try server.calls(for: "ok-sleep-one").calls, 1, "an ended session is gone")
        XCTAssertTrue(daemon.stderr.contains("SESSION_CLEANUP_EVENT=resumed"), daemon.stderr)

        daemon.signal(SIGTERM)
        XCTAssertNotNil(daemon.waitForExit(timeout: 30))
        XCTAssertTrue(logind.waitFor("released 2", timeout: 5), "the lock goes with the daemon: \(logind.events)")
        for secret in ["ok-sleep-one", "no-sleep-two"] { XCTAssertFalse(daemon.stderr.contains(secret)) }
    }

    func testTheSleepRunKeepsInsideLogindsDelay() throws {
        let logind = try FakeLogind(delayUsec: 2_000_000)
        let server = try EndSessionServer()
        let config = "[Sleep]\nEndSessions=yes\n[Endpoint]\nName=auth\nURL=\(server.endSessionURL)\n"
        let daemon = try DaemonProcess(config: config, environment: ["DBUS_SYSTEM_BUS_ADDRESS": logind.address])
        XCTAssertNotNil(daemon.waitUntilReady())
        XCTAssertTrue(logind.waitFor("inhibit 1 sleep session-cleanup delay", timeout: 5), "\(logind.events)")
        try register("hang-sleep", at: daemon)
        let began = Date()
        logind.send("sleep")
        XCTAssertTrue(logind.waitFor("released 1", timeout: 5), "\(logind.events)")
        let took = Date().timeIntervalSince(began)
        XCTAssertGreaterThan(took, 1.2, "the run used its budget (2 s less 0.5 s) on the hanging call")
        XCTAssertLessThan(took, 2.0, "released before logind's 2 s delay ran out")
        XCTAssertTrue(daemon.stderr.contains("BUDGET_USEC=1500000"), daemon.stderr)
    }

    func testReloadTakesAndDropsTheLock() throws {
        let logind = try FakeLogind()
        let scratch = try ScratchDirectory("sleep-reload")
        let configPath = scratch.path + "/session-cleanup.conf"
        let base = "[Endpoint]\nName=auth\nURL=http://127.0.0.1:9/user/{session}/endsession\n"
        let daemon = try DaemonProcess(
            config: base, environment: ["DBUS_SYSTEM_BUS_ADDRESS": logind.address], scratch: scratch)
        XCTAssertNotNil(daemon.waitUntilReady())
        usleep(300_000)
        XCTAssertFalse(logind.events.contains { $0.hasPrefix("inhibit") }, "off by default: \(logind.events)")
        try (base + "[Sleep]\nEndSessions=yes\n").write(toFile: configPath, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        XCTAssertTrue(logind.waitFor("inhibit 1 sleep session-cleanup delay", timeout: 5), "\(logind.events)")
        try (base + "[Sleep]\nEndSessions=no\n").write(toFile: configPath, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        XCTAssertTrue(logind.waitFor("released 1", timeout: 5), "\(logind.events)")
    }

    func testALostBusIsAWarningAndTheDaemonServesOn() throws {
        let logind = try FakeLogind()
        let config =
            "[Sleep]\nEndSessions=yes\n[Endpoint]\nName=auth\nURL=http://127.0.0.1:9/user/{session}/endsession\n"
        let daemon = try DaemonProcess(config: config, environment: ["DBUS_SYSTEM_BUS_ADDRESS": logind.address])
        XCTAssertNotNil(daemon.waitUntilReady())
        XCTAssertTrue(logind.waitFor("inhibit 1 sleep session-cleanup delay", timeout: 5), "\(logind.events)")
        logind.stopBus()
        let deadline = Date().addingTimeInterval(5)
        while !daemon.stderr.contains("SESSION_CLEANUP_EVENT=sleep-lock-failed") && Date() < deadline {
            usleep(20_000)
        }
        XCTAssertTrue(daemon.stderr.contains("SESSION_CLEANUP_EVENT=sleep-lock-failed"), daemon.stderr)
        XCTAssertTrue(
            logind.waitFor("released 1", timeout: 5), "a lock no signal can reach is let go: \(logind.events)")
        let status = try BuiltBinary.run(["status", "--socket", daemon.socketPath])
        XCTAssertEqual(status.status, 0, status.err)
        XCTAssertTrue(sleepLockLine(status.out)?.hasPrefix("not held: D-Bus connection") == true, status.out)
    }

    func testCheckConfigShowsTheSleepBudgetFromLogindAndWarnsWhenNoCallFits() throws {
        let logind = try FakeLogind(delayUsec: 900_000)
        let scratch = try ScratchDirectory("sleep-check")
        let config = try scratch.write(
            "session-cleanup.conf",
            "[Sleep]\nEndSessions=yes\n[Endpoint]\nName=auth\nURL=http://127.0.0.1:9/user/{session}/endsession\n")
        let checked = try BuiltBinary.run(
            ["check-config", "--config", config], environment: ["DBUS_SYSTEM_BUS_ADDRESS": logind.address])
        XCTAssertEqual(checked.status, 0, checked.err)
        XCTAssertTrue(
            checked.out.contains(
                "[Sleep] sessions ended before the machine sleeps, within 675 ms (logind's InhibitDelayMaxSec= 900 ms"),
            checked.out)
        XCTAssertTrue(checked.err.contains("no call can begin before sleep"), checked.err)
        XCTAssertTrue(logind.events.contains("delay-asked"), "\(logind.events)")
        XCTAssertFalse(logind.events.contains { $0.hasPrefix("inhibit") }, "check-config takes no lock")
    }

    func testNoLogindIsAWarningNotAFailure() throws {
        let scratch = try ScratchDirectory("sleep-nobus")
        let config =
            "[Sleep]\nEndSessions=yes\n[Endpoint]\nName=auth\nURL=http://127.0.0.1:9/user/{session}/endsession\n"
        let daemon = try DaemonProcess(
            config: config, environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(scratch.path)/no-bus"],
            scratch: scratch)
        XCTAssertNotNil(daemon.waitUntilReady(), daemon.stderr)
        let deadline = Date().addingTimeInterval(5)
        while !daemon.stderr.contains("SESSION_CLEANUP_EVENT=sleep-lock-failed") && Date() < deadline {
            usleep(20_000)
        }
        XCTAssertTrue(daemon.stderr.contains("SESSION_CLEANUP_EVENT=sleep-lock-failed"), daemon.stderr)
        let status = try BuiltBinary.run(["status", "--socket", daemon.socketPath])
        XCTAssertEqual(
            sleepLockLine(status.out),
            "not held: logind: connect to the system bus: No such file or directory (errno 2)",
            status.out)
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 30), 0, daemon.stderr)
    }
}
