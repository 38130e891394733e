import Foundation
import Glibc
import XCTest

/// The daemon under a socket activator (`Tests/Support/socket_activate.py`, which passes a
/// listening socket the way systemd does): it serves the socket it was given, leaves it in place
/// when it exits, and a connection made while no daemon runs is served by the next one.
final class SocketActivationTests: XCTestCase {
    /// The activator, driven line by line; the daemon it starts gets the test's notify socket.
    private final class Activator {
        let scratch: ScratchDirectory
        let notify: NotifySocket
        let socketPath: String
        let stderrPath: String
        private let process = Process()
        private let input = Pipe()
        private let output = Pipe()
        private var buffered: [UInt8] = []

        init(config: String, extraOptions: [String] = []) throws {
            scratch = try ScratchDirectory("activate")
            notify = try NotifySocket(directory: scratch.path)
            socketPath = scratch.path + "/activated.sock"
            stderrPath = scratch.path + "/daemon.stderr"
            _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
            let configFile = try scratch.write("session-cleanup.conf", config)
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments =
                ["python3", EndSessionServer.supportDirectory + "/socket_activate.py", socketPath] + extraOptions
                + ["--", BuiltBinary.path, "daemon", "--config", configFile]
            var env = ProcessInfo.processInfo.environment
            env["NOTIFY_SOCKET"] = notify.path
            env["STATE_DIRECTORY"] = scratch.path + "/state"
            env["RUNTIME_DIRECTORY"] = scratch.path + "/run"
            for name in ["JOURNAL_STREAM", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID"] {
                env.removeValue(forKey: name)
            }
            process.environment = env
            process.standardInput = input
            process.standardOutput = output
            process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
            try process.run()
            guard line() == "listening" else { throw TestSetupError("the activator did not start") }
        }

        deinit {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }

        var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

        /// Sends one verb; returns the activator's answer.
        func command(_ verb: String) -> String {
            input.fileHandleForWriting.write(Data((verb + "\n").utf8))
            return line()
        }

        /// Starts the daemon; returns its pid.
        func start() -> Int32 { Int32(command("start").split(separator: " ").last ?? "") ?? 0 }

        private func line() -> String {
            while true {
                if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                    let text = String(decoding: buffered[..<newline], as: UTF8.self)
                    buffered.removeFirst(newline + 1)
                    return text
                }
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { return "" }
                buffered.append(contentsOf: chunk)
            }
        }
    }

    func testServesThePassedSocketAndLeavesItInPlace() throws {
        let activator = try Activator(config: "[Stop]\nBudgetSec=5s\n")
        let pid = activator.start()
        XCTAssertNotNil(
            activator.notify.receive(until: { $0.contains("READY=1") }, timeout: 10), "stderr: \(activator.stderr)")
        let status = try BuiltBinary.run(["status", "--socket", activator.socketPath])
        XCTAssertEqual(status.status, 0, status.err)
        XCTAssertFalse(
            FileManager.default.fileExists(atPath: activator.scratch.path + "/run/control.sock"),
            "no socket of its own")
        kill(pid, SIGTERM)
        XCTAssertEqual(activator.command("wait"), "exited 0")
        var info = stat()
        XCTAssertEqual(lstat(activator.socketPath, &info), 0, "the activator's socket is not removed")
    }

    func testAConnectionMadeWhileNoDaemonRunsIsServedByTheNextOne() throws {
        let activator = try Activator(config: "")
        let first = activator.start()
        XCTAssertNotNil(activator.notify.receive(until: { $0.contains("READY=1") }, timeout: 10))
        kill(first, SIGTERM)
        XCTAssertEqual(activator.command("wait"), "exited 0")
        // Nobody serves the socket now: the connection and its request wait in the backlog.
        let client = try RawClient(path: activator.socketPath)
        client.send("{\"op\":\"status\"}\n")
        XCTAssertEqual(client.readLine(timeout: 0.3), .timedOut)
        _ = activator.start()
        let reply = try XCTUnwrap(client.readObject(timeout: 10), "stderr: \(activator.stderr)")
        XCTAssertEqual(reply["ok"] as? Bool, true, "\(reply)")
    }

    func testSocketSettingsTheActivatedSocketDoesNotHaveAreReportedNotIgnored() throws {
        let activator = try Activator(config: "[Control]\nSocketMode=0600\n")
        let pid = activator.start()
        XCTAssertNotNil(activator.notify.receive(until: { $0.contains("READY=1") }, timeout: 10))
        kill(pid, SIGTERM)
        XCTAssertEqual(activator.command("wait"), "exited 0")
        XCTAssertTrue(activator.stderr.contains("SESSION_CLEANUP_EVENT=control-setting-ignored"), activator.stderr)
        XCTAssertTrue(activator.stderr.contains("SocketMode=600 (the socket's mode is 666)"), activator.stderr)
    }

    func testASocketModeNobodySetIsNotReportedWhenTheActivatedSocketDiffersFromTheDefault() throws {
        // The activator's socket is 0666; the default SocketMode= (0660) was not asked for.
        let activator = try Activator(config: "")
        let pid = activator.start()
        XCTAssertNotNil(activator.notify.receive(until: { $0.contains("READY=1") }, timeout: 10))
        kill(pid, SIGTERM)
        XCTAssertEqual(activator.command("wait"), "exited 0")
        XCTAssertFalse(activator.stderr.contains("control-setting-ignored"), activator.stderr)
    }

    func testAPassedDescriptorThatIsNotASocketFailsTheStartNamingIt() throws {
        let activator = try Activator(config: "", extraOptions: ["--not-a-socket"])
        _ = activator.start()
        XCTAssertEqual(activator.command("wait"), "exited 1")
        XCTAssertTrue(
            activator.stderr.contains("descriptor 3 is not a listening AF_UNIX stream socket"), activator.stderr)
    }

    func testSigtermOutsideAServiceManagerIsAStopRunThatSaysWhy() throws {
        let daemon = try DaemonProcess()
        XCTAssertNotNil(daemon.waitUntilReady())
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 5), 0)
        // This host's PID 1 may or may not be systemd: either way, no restart job, so a stop run.
        XCTAssertTrue(daemon.stderr.contains("SESSION_CLEANUP_EVENT=stop-begun"), daemon.stderr)
        XCTAssertTrue(daemon.stderr.contains("STOP_REASON="), daemon.stderr)
        XCTAssertFalse(daemon.stderr.contains("handed-over"), daemon.stderr)
    }
}
