import Foundation
import Glibc
import XCTest

@testable import Basics
@testable import EventLoop
@testable import Journal

/// A datagram socket the test binds and reads (or not): journald's native socket, stood in for.
private final class DatagramReceiver {
    let path: String
    let fd: Int32

    init(directory: String) throws {
        path = directory + "/journal.sock"
        guard let address = UnixSocketAddress(path: path) else { throw POSIXError(.ENAMETOOLONG) }
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0, address.bind(fd) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    }

    deinit { close(fd) }

    /// The next datagram's bytes — read from the memfd when one was passed — and whether it came
    /// as a memfd; nil when nothing is waiting.
    func receive() -> (bytes: [UInt8], memfd: Bool)? {
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var control = [UInt8](repeating: 0, count: 64)
        return buffer.withUnsafeMutableBytes { raw -> (bytes: [UInt8], memfd: Bool)? in
            control.withUnsafeMutableBytes { controlRaw -> (bytes: [UInt8], memfd: Bool)? in
                var vector = iovec(iov_base: raw.baseAddress, iov_len: raw.count)
                return withUnsafeMutablePointer(to: &vector) { vectorPointer -> (bytes: [UInt8], memfd: Bool)? in
                    var message = msghdr()
                    message.msg_iov = vectorPointer
                    message.msg_iovlen = 1
                    message.msg_control = controlRaw.baseAddress
                    message.msg_controllen = controlRaw.count
                    let count = recvmsg(fd, &message, Int32(MSG_DONTWAIT))
                    guard count >= 0 else { return nil }
                    // One SCM_RIGHTS control message: cmsghdr (16 bytes on 64-bit Linux), then the fd.
                    if message.msg_controllen >= 20 {
                        let header = controlRaw.load(as: cmsghdr.self)
                        if header.cmsg_level == SOL_SOCKET, header.cmsg_type == Int32(SCM_RIGHTS) {
                            let passed = controlRaw.load(fromByteOffset: 16, as: Int32.self)
                            defer { close(passed) }
                            var content: [UInt8] = []
                            var chunk = [UInt8](repeating: 0, count: 65536)
                            var offset: off_t = 0
                            while true {
                                let n = pread(passed, &chunk, chunk.count, offset)
                                if n <= 0 { break }
                                content += chunk[0..<n]
                                offset += off_t(n)
                            }
                            return (content, true)
                        }
                    }
                    return (Array(raw[0..<count]), false)
                }
            }
        }
    }

    func drain() -> [[UInt8]] {
        var all: [[UInt8]] = []
        while let datagram = receive() { all.append(datagram.bytes) }
        return all
    }
}

/// The journal writer against a real datagram socket standing in for journald.
final class JournalWriterTests: XCTestCase {
    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    func testEntriesArriveAsNativeDatagrams() throws {
        let scratch = try ScratchDirectory("journal")
        let receiver = try DatagramReceiver(directory: scratch.path)
        let journal = Journal(destination: .native(socketPath: receiver.path))
        XCTAssertTrue(journal.record(JournalEntry(.ready, "Ready", [JournalField(.sessionsTotal, 3)])))
        let datagram = try XCTUnwrap(receiver.receive())
        XCTAssertFalse(datagram.memfd)
        let fields = text(datagram.bytes)
        XCTAssertTrue(fields.hasPrefix("MESSAGE=Ready\nPRIORITY=6\nSYSLOG_IDENTIFIER=session-cleanup\n"), fields)
        XCTAssertTrue(fields.contains("\nMESSAGE_ID=ae1dbe7f70744949acf389c3fed83683\n"), fields)
        XCTAssertTrue(fields.contains("\nCODE_FILE=IntegrationTests/JournalTests.swift\n"), fields)
        XCTAssertTrue(fields.hasSuffix("\nSESSIONS_TOTAL=3\n"), fields)
        XCTAssertEqual(journal.writtenEntries, 1)
    }

    func testAnEntryTooLargeForADatagramIsPassedAsASealedMemfd() throws {
        let scratch = try ScratchDirectory("journal")
        let receiver = try DatagramReceiver(directory: scratch.path)
        let journal = Journal(destination: .native(socketPath: receiver.path))
        // Larger than the send buffer can ever be (net.core.wmem_max, doubled: 8 MiB here).
        let huge = String(repeating: "x", count: 12 << 20)
        XCTAssertTrue(journal.record(JournalEntry(.reloadFailed, "big", [JournalField(.error, huge)])))
        let datagram = try XCTUnwrap(receiver.receive())
        XCTAssertTrue(datagram.memfd, "more than a datagram can carry")
        XCTAssertTrue(text(datagram.bytes).hasSuffix("ERROR=\(huge)\n"))
    }

    /// No `record` waits for a journal that reads nothing: none takes a quarter of a second, and
    /// all of them take little more than encoding the same entries does (measured first, so a
    /// slow machine — ThreadSanitizer — scales both). A journal that blocked would hang here; one
    /// that waited for room now and then would be seconds late.
    func testAStalledJournalNeverBlocksAndTheDropsAreReportedInTheNextEntryThatGetsThrough() throws {
        let scratch = try ScratchDirectory("journal")
        let receiver = try DatagramReceiver(directory: scratch.path)
        let loop = try EventLoop()
        let journal = Journal(
            destination: .native(socketPath: receiver.path),
            limits: JournalQueue.Limits(bulkBytes: 64 << 10, essentialBytes: 16 << 10))
        journal.attach(to: loop)
        let clock = SystemMonotonicClock()
        func entry(_ index: Int) -> JournalEntry {
            JournalEntry(.callFinished, "Session \(index) failed", [JournalField(.sessionID, String(index))])
        }
        let encodingStarted = clock.now()
        var encodedBytes = 0
        for index in 0..<20_000 {
            encodedBytes += JournalEncoding.native(entry(index), identifier: "session-cleanup", dropped: 0).count
        }
        let encoding = clock.now().duration(since: encodingStarted)
        XCTAssertGreaterThan(encodedBytes, 0)

        let started = clock.now()
        var refused = 0
        var slowest: Duration = .zero
        for index in 0..<20_000 {
            let before = clock.now()
            if !journal.record(entry(index)) { refused += 1 }
            slowest = max(slowest, clock.now().duration(since: before))
        }
        let took = clock.now().duration(since: started)
        print("20,000 entries against a stalled journal: \(took), slowest \(slowest); encoding them alone: \(encoding)")
        XCTAssertLessThan(slowest, .milliseconds(250), "one record waited for the journal")
        XCTAssertLessThan(
            took, encoding * 4 + .milliseconds(500),
            "20,000 entries against a journal that reads nothing: \(took), encoding them: \(encoding)")
        XCTAssertGreaterThan(refused, 0)
        XCTAssertEqual(journal.droppedEntries, refused)
        XCTAssertTrue(journal.record(JournalEntry(.stopBegun, "the lifecycle entry still has room")))

        // journald reads again: the loop drains the queue as the socket becomes writable.
        var received: [String] = []
        let deadline = Date().addingTimeInterval(10)
        while journal.pendingEntries > 0 && Date() < deadline {
            received += receiver.drain().map(text)
            try loop.runOnce(maximumWait: .milliseconds(10))
        }
        received += receiver.drain().map(text)
        XCTAssertEqual(journal.pendingEntries, 0)
        XCTAssertTrue(journal.record(JournalEntry(.stopped, "Stopped")))
        let last = try XCTUnwrap(receiver.receive())
        XCTAssertFalse(text(last.bytes).contains("JOURNAL_DROPPED="), "nothing was dropped since the last report")
        XCTAssertEqual(received.count + 1 + refused, 20_002, "every entry is either journaled or counted")
        let lifecycle = try XCTUnwrap(received.firstIndex { $0.contains("SESSION_CLEANUP_EVENT=stop-begun") })
        XCTAssertTrue(
            received[lifecycle].contains("\nJOURNAL_DROPPED=\(refused)\n"),
            "the first entry after the drops carries their count")
        XCTAssertLessThan(lifecycle, received.count - 1, "the lifecycle entry went before the queued per-call ones")
    }

    func testFlushGivesUpOnAJournalThatTakesNothingAndCountsWhatWasLeft() throws {
        let scratch = try ScratchDirectory("journal")
        let receiver = try DatagramReceiver(directory: scratch.path)
        let journal = Journal(destination: .native(socketPath: receiver.path))
        for index in 0..<2_000 { journal.record(JournalEntry(.callFinished, "entry \(index)")) }
        let pending = journal.pendingEntries
        XCTAssertGreaterThan(pending, 0, "the kernel queue holds only a few datagrams")
        let clock = SystemMonotonicClock()
        let started = clock.now()
        let dropped = journal.flush(
            until: started.advanced(by: .seconds(30)), idleLimit: .milliseconds(200), clock: clock)
        let took = clock.now().duration(since: started)
        XCTAssertEqual(dropped, pending)
        XCTAssertEqual(journal.droppedEntries, pending)
        XCTAssertLessThan(took, .seconds(1), "gave up after 200 ms without progress, not at the deadline: \(took)")
        XCTAssertGreaterThanOrEqual(took, .milliseconds(200))
        _ = receiver
    }

    func testStderrLinesOnAPipeNobodyReadsNeverBlockEither() throws {
        var pipeFDs: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&pipeFDs), 0)
        let savedStderr = dup(STDERR_FILENO)
        XCTAssertEqual(dup2(pipeFDs[1], STDERR_FILENO), STDERR_FILENO)
        defer {
            dup2(savedStderr, STDERR_FILENO)
            close(savedStderr)
            close(pipeFDs[0])
            close(pipeFDs[1])
        }
        let journal = Journal(
            destination: .standardError, limits: JournalQueue.Limits(bulkBytes: 256 << 10, essentialBytes: 64 << 10))
        let clock = SystemMonotonicClock()
        let started = clock.now()
        for index in 0..<50_000 { journal.record(JournalEntry(.callFinished, "Session \(index) failed")) }
        let took = clock.now().duration(since: started)
        XCTAssertLessThan(took, .seconds(2), "a full pipe delays nothing: \(took)")
        XCTAssertGreaterThan(journal.droppedEntries, 0, "the pipe holds 64 KiB, the queue 256 KiB")
        XCTAssertEqual(journal.writtenEntries + journal.pendingEntries + journal.droppedEntries, 50_000)
        XCTAssertEqual(fcntl(STDERR_FILENO, F_GETFL) & O_NONBLOCK, 0, "the shared descriptor's flags are untouched")
    }

    /// Runs `body` with stderr going to a file; returns what was written there.
    private func capturingStandardError(_ body: () throws -> Void) throws -> String {
        let scratch = try ScratchDirectory("stderr")
        let path = scratch.path + "/stderr"
        let file = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        XCTAssertGreaterThanOrEqual(file, 0)
        let saved = dup(STDERR_FILENO)
        dup2(file, STDERR_FILENO)
        defer {
            dup2(saved, STDERR_FILENO)
            close(saved)
            close(file)
        }
        try body()
        return (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    func testAnEntryJournaldRefusesGoesToStderrAloneAndTheNextGoesToJournaldAgain() throws {
        let scratch = try ScratchDirectory("journal")
        var receiver: DatagramReceiver? = try DatagramReceiver(directory: scratch.path)
        let path = scratch.path + "/journal.sock"
        let journal = Journal(destination: .native(socketPath: path))
        XCTAssertTrue(journal.record(JournalEntry(.ready, "first")))
        XCTAssertNotNil(receiver?.receive())
        let written = try capturingStandardError {
            receiver = nil  // journald goes away (its socket closed, the path left unbound)
            XCTAssertTrue(journal.record(JournalEntry(.ready, "second", [JournalField(.sessionsTotal, 2)])))
        }
        XCTAssertEqual(written, "<6>second [SESSION_CLEANUP_EVENT=ready SESSIONS_TOTAL=2]\n")
        XCTAssertEqual(journal.standardErrorEntries, 1)
        // journald is back at the same path: the journal, not stderr, gets the next entry.
        unlink(path)
        let back = try DatagramReceiver(directory: scratch.path)
        XCTAssertTrue(journal.record(JournalEntry(.ready, "third")))
        let datagram = try XCTUnwrap(back.receive(), "the entry after a refused one went to journald")
        XCTAssertTrue(text(datagram.bytes).hasPrefix("MESSAGE=third\n"))
        XCTAssertEqual(journal.writtenEntries, 2)
        XCTAssertEqual(journal.droppedEntries, 0)
    }

    func testQueuedEntriesJournaldRefusesAreWrittenToStderrNotDropped() throws {
        let scratch = try ScratchDirectory("journal")
        var receiver: DatagramReceiver? = try DatagramReceiver(directory: scratch.path)
        let path = scratch.path + "/journal.sock"
        let journal = Journal(
            destination: .native(socketPath: path),
            limits: JournalQueue.Limits(bulkBytes: 8 << 20, essentialBytes: 1 << 20))
        for index in 0..<2_000 { journal.record(JournalEntry(.callFinished, "entry \(index)")) }
        let pending = journal.pendingEntries
        XCTAssertGreaterThan(pending, 0, "the kernel queue holds only a few datagrams")
        let written = try capturingStandardError {
            receiver = nil
            let clock = SystemMonotonicClock()
            journal.flush(until: clock.now().advanced(by: .seconds(5)), idleLimit: .milliseconds(200), clock: clock)
        }
        XCTAssertEqual(journal.droppedEntries, 0, "none of the queue was dropped")
        XCTAssertEqual(journal.standardErrorEntries, pending)
        XCTAssertEqual(written.split(separator: "\n").count, pending)
        XCTAssertTrue(
            written.hasSuffix("<4>entry 1999 [SESSION_CLEANUP_EVENT=call-finished]\n"), String(written.suffix(200)))
        _ = receiver
    }
}

/// The daemon under a stand-in journald (`Tests/Support/fake_journald.py`) in a private mount
/// namespace: native entries at `/run/systemd/journal/socket`, stderr a stream socket named by
/// `JOURNAL_STREAM`, as systemd sets it up.
final class DaemonJournalTests: XCTestCase {
    private struct Run {
        let scratch: ScratchDirectory
        let notify: NotifySocket
        let out: String
        let process: Process
        let pid: Int32
        var socketPath: String { scratch.path + "/run/control.sock" }
    }

    private func startUnderFakeJournald(config: String, stall: Bool, scratch: ScratchDirectory) throws -> Run {
        guard getuid() == 0 else { throw TestSetupError("needs root: unshare --mount and a tmpfs over /run") }
        let notify = try NotifySocket(directory: scratch.path)
        let out = scratch.path + "/fake-journald"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        process.arguments =
            [
                "--mount", "--propagation", "private", "--", "python3",
                EndSessionServer.supportDirectory + "/fake_journald.py", "--out-dir", out,
            ] + (stall ? ["--stall"] : []) + [
                "--", BuiltBinary.path, "daemon", "--config", try scratch.write("session-cleanup.conf", config),
            ]
        var env = ProcessInfo.processInfo.environment
        env["NOTIFY_SOCKET"] = notify.path
        env["STATE_DIRECTORY"] = scratch.path + "/state"
        env["RUNTIME_DIRECTORY"] = scratch.path + "/run"
        for name in ["JOURNAL_STREAM", "WATCHDOG_USEC", "WATCHDOG_PID"] { env.removeValue(forKey: name) }
        process.environment = env
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: out + "/pid") && Date() < deadline { usleep(5_000) }
        let pidText = try String(contentsOfFile: out + "/pid", encoding: .utf8)
        guard let pid = Int32(pidText) else { throw TestSetupError("fake_journald.py wrote no pid") }
        return Run(scratch: scratch, notify: notify, out: out, process: process, pid: pid)
    }

    /// (exit status, CLOCK_MONOTONIC instant of the exit), once the daemon has exited.
    private func waitForExit(_ run: Run, timeout: TimeInterval) throws -> (Int32, MonotonicInstant)? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let text = try? String(contentsOfFile: run.out + "/exited", encoding: .utf8) {
                let parts = text.split(separator: " ").compactMap { UInt64($0) }
                guard parts.count == 4 else { throw TestSetupError("bad exited file: \(text)") }
                return (Int32(parts[0]), MonotonicInstant(microseconds: parts[1] / 1000))
            }
            // Read the notify socket meanwhile, as PID 1 does.
            _ = run.notify.receive(timeout: 0.002)
        }
        return nil
    }

    private func entries(_ run: Run) throws -> [[String: Any]] {
        run.process.waitUntilExit()
        let text = try String(contentsOfFile: run.out + "/entries", encoding: .utf8)
        return try text.split(separator: "\n").map {
            try XCTUnwrap(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    private func register(_ key: String, socket: String) throws {
        let result = try BuiltBinary.run(["register", "--endpoint", "auth", "--socket", socket], stdin: key + "\n")
        XCTAssertEqual(result.status, 0, result.err)
    }

    func testNativeEntriesExplainThemselvesAndCarryTheRunID() throws {
        let server = try EndSessionServer()
        let scratch = try ScratchDirectory("native")
        let config = "[Endpoint]\nName=auth\nURL=\(server.endSessionURL)\n"
        let run = try startUnderFakeJournald(config: config, stall: false, scratch: scratch)
        XCTAssertNotNil(run.notify.receive(until: { $0.contains("READY=1") }, timeout: 10))
        for key in ["ok-secret-1", "ok-secret-2", "no-secret-3"] { try register(key, socket: run.socketPath) }
        kill(run.pid, SIGTERM)
        XCTAssertEqual(try waitForExit(run, timeout: 10)?.0, 75)
        let all = try entries(run)
        XCTAssertFalse(all.isEmpty)
        for entry in all {
            XCTAssertNil(entry["_FAKE_BAD_ENTRY"], "\(entry)")
            XCTAssertEqual((entry["MESSAGE_ID"] as? String)?.count, 32, "\(entry)")
            // `#fileID`: the module and the file, e.g. `Daemon/Daemon.swift`.
            let codeFile = try XCTUnwrap(entry["CODE_FILE"] as? String, "\(entry)")
            XCTAssertEqual(codeFile.split(separator: "/").count, 2, "\(entry)")
            XCTAssertTrue(codeFile.hasSuffix(".swift"), "\(entry)")
            XCTAssertFalse("\(entry)".contains("secret"), "no key in the journal")
        }
        func event(_ name: String) -> [[String: Any]] { all.filter { $0["SESSION_CLEANUP_EVENT"] as? String == name } }
        let stopBegun = try XCTUnwrap(event("stop-begun").first)
        let runID = try XCTUnwrap(stopBegun["SESSION_CLEANUP_RUN_ID"] as? String)
        XCTAssertEqual(runID.count, 32)
        let ended = try XCTUnwrap(event("calls-ended").first)
        XCTAssertEqual((ended["SESSION_ID"] as? [String])?.count, 2, "one SESSION_ID= per ended session")
        XCTAssertEqual(ended["CALLS"] as? String, "2")
        XCTAssertEqual(event("call-finished").first?["OUTCOME"] as? String, "rejected")
        XCTAssertEqual(event("registered").count, 3)
        XCTAssertEqual(event("registered").first?["PRIORITY"] as? String, "7", "registrations are debug")
        XCTAssertEqual(event("registrations").first?["SESSIONS_REGISTERED"] as? String, "3", "summarised at the stop")
        for name in ["stop-begun", "calls-ended", "call-finished", "run-finished", "stopped"] {
            XCTAssertEqual(event(name).first?["SESSION_CLEANUP_RUN_ID"] as? String, runID, name)
        }
        XCTAssertEqual(event("run-finished").first?["CALLS_TOTAL"] as? String, "3")
        XCTAssertEqual(event("run-finished").first?["PRIORITY"] as? String, "5", "sessions kept: notice")
    }

    /// The same stop run under a journald that reads nothing and, at the same time, under one
    /// that reads everything: the stalled journal may cost the exit its half-second idle limit,
    /// no more (a loop blocked on the journal would not exit at all; a flush that waited its
    /// whole 2 s limit would be 2 s late). Measured against the healthy run, so a slow machine
    /// (ThreadSanitizer) slows both alike.
    func testAStalledJournalDelaysNothingAndTheLossIsReportedLater() throws {
        let server = try EndSessionServer()
        let scratch = try ScratchDirectory("stalled")
        let healthyScratch = try ScratchDirectory("healthy")
        let config = "[Stop]\nBudgetSec=3s\n[Endpoint]\nName=auth\nURL=\(server.endSessionURL)\n"
        let run = try startUnderFakeJournald(config: config, stall: true, scratch: scratch)
        let healthy = try startUnderFakeJournald(config: config, stall: false, scratch: healthyScratch)
        for daemon in [run, healthy] {
            XCTAssertNotNil(daemon.notify.receive(until: { $0.contains("READY=1") }, timeout: 10))
            // 20 end at once, 10 take longer than the budget: the run lasts its whole 3 s.
            for index in 0..<30 {
                try register(index < 20 ? "ok-\(index)" : "slow5000-\(index)", socket: daemon.socketPath)
            }
        }
        let stoppedAt = SystemMonotonicClock().now()
        kill(run.pid, SIGTERM)
        kill(healthy.pid, SIGTERM)
        let exit = try XCTUnwrap(try waitForExit(run, timeout: 20), "the daemon did not exit")
        let healthyExit = try XCTUnwrap(try waitForExit(healthy, timeout: 20), "the reference did not exit")
        let took = exit.1.duration(since: stoppedAt)
        let reference = healthyExit.1.duration(since: stoppedAt)
        XCTAssertEqual(exit.0, 75, "the slow sessions are kept")
        XCTAssertEqual(healthyExit.0, 75, "the slow sessions are kept")
        XCTAssertGreaterThanOrEqual(took, .seconds(3) - .milliseconds(100), "the run used its budget: \(took)")
        XCTAssertLessThan(
            took - reference, Journal.flushIdleLimit + .milliseconds(750),
            "the stalled journal cost at most its idle limit: \(took) against \(reference) with a healthy journal")
        print("stalled journal: SIGTERM to exit \(took.humanReadable), healthy \(reference.humanReadable) (budget 3 s)")

        let facts = try XCTUnwrap(
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: scratch.path + "/state/last-stop-run.json")))
                as? [String: Any])
        let dropped = try XCTUnwrap(facts["journal_dropped"] as? Int)
        XCTAssertGreaterThan(dropped, 0, "\(facts)")
        run.process.waitUntilExit()  // the stand-in writes what it read once the daemon is gone
        let stderr = try String(contentsOfFile: run.out + "/stderr", encoding: .utf8)
        XCTAssertTrue(stderr.contains("entries were not journaled"), "the last word on stderr: \(stderr)")
        XCTAssertEqual((facts["calls"] as? [String: Int])?.values.reduce(0, +), 30, "the report has every call")

        // The next start (plain stderr this time) says what the last stop's journal missed.
        let next = try DaemonProcess(config: config, scratch: scratch)
        XCTAssertNotNil(next.waitUntilReady())
        XCTAssertTrue(next.stderr.contains("SESSION_CLEANUP_EVENT=journal-incomplete"), next.stderr)
        XCTAssertTrue(next.stderr.contains("JOURNAL_DROPPED=\(dropped)"), next.stderr)
        let report = try BuiltBinary.run(["report", "--json", "--socket", next.socketPath])
        XCTAssertEqual(report.status, 0, report.err)
        XCTAssertTrue(report.out.contains("\"dropped\":\(dropped)"), report.out)
        next.signal(SIGKILL)
    }
}
