import Foundation
import Glibc
import XCTest

@testable import Control
@testable import Daemon
@testable import Sessions
@testable import TestSupport

/// The event loop stays responsive while the disk is slow: a commit's fdatasync or a compaction
/// that takes as long as the test likes (the store's writer queues held) never holds up control
/// requests, timers or — for a compaction — further commits. Checked by order, not by the clock:
/// each happens while the slow write is still pending. (fdatasync and compaction once ran on the
/// loop: everything would then wait for the write.)
final class StoreStallTests: XCTestCase {
    /// The store, a control server and a timer on one loop thread, as in the daemon.
    private final class Rig: @unchecked Sendable {
        let scratch: ScratchDirectory
        let thread: LoopThread
        let journal = MemoryJournal()
        let committer: StoreCommitter
        let server: ControlServer
        /// The server holds its handler weakly.
        let handler: RecordingHandler
        var socketPath: String { scratch.path + "/control.sock" }

        init() throws {
            scratch = try ScratchDirectory("store-stall")
            try FileManager.default.createDirectory(atPath: scratch.path + "/state", withIntermediateDirectories: true)
            thread = try LoopThread()
            committer = try StoreCommitter(directory: scratch.path + "/state", loop: thread.loop, journal: journal)
            handler = RecordingHandler(loop: thread.loop)
            server = try ControlServer(socketPath: scratch.path + "/control.sock", loop: thread.loop, handler: handler)
        }

        /// Registers a session; `acknowledged` becomes true once it is durable.
        func register(_ key: String) -> LockedValue<Bool> {
            let acknowledged = LockedValue(false)
            let session = Session(
                id: .random(), key: SessionKey(key), endpoints: ["auth"], ownerUID: 0, registeredAt: 0)
            thread.sync { [committer] in
                try? committer.register(
                    session, reply: { acknowledged.value = $0.ok }, response: .registered(id: session.id.description))
            }
            return acknowledged
        }

        /// Whether a control request and a loop timer are each served now.
        func loopAnswersAndTimerFires() throws -> (answered: Bool, fired: Bool) {
            let fired = LockedValue(false)
            _ = thread.sync { [thread] in thread.loop.schedule(after: .milliseconds(20)) { fired.value = true } }
            let client = try RawClient(path: socketPath)
            _ = client.send(#"{"op":"status"}"# + "\n")
            let answered = client.readObject(timeout: 10)?["ok"] as? Bool == true
            let deadline = Date().addingTimeInterval(10)
            while !fired.value && Date() < deadline { usleep(1_000) }
            return (answered, fired.value)
        }

        func stop() {
            thread.stop()
            server.close()
            committer.close()
        }
    }

    /// Releases the held queues once: from the test, or from a watchdog after `seconds` so that a
    /// loop that waits for the write (the defect) is not stuck for ever.
    private final class Release: @unchecked Sendable {
        private let lock = NSLock()
        private var done = false
        private let action: () -> Void

        init(after seconds: Double, _ action: @escaping () -> Void) {
            self.action = action
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in now() }
        }

        func now() {
            let first = lock.withLock {
                defer { done = true }
                return !done
            }
            if first { action() }
        }
    }

    func testControlRequestsAndTimersAreServedWhileACommitWaitsForTheDisk() throws {
        let rig = try Rig()
        defer { rig.stop() }
        rig.committer.store.holdWriter(log: true, snapshots: false)
        let release = Release(after: 5) { rig.committer.store.releaseWriter(log: true, snapshots: false) }
        defer { release.now() }
        rig.thread.start()

        let acknowledged = rig.register("stalled-commit")
        let served = try rig.loopAnswersAndTimerFires()
        let durableMeanwhile = acknowledged.value
        XCTAssertTrue(served.answered, "a control request is answered while the commit waits")
        XCTAssertTrue(served.fired, "a timer fires while the commit waits")
        XCTAssertFalse(durableMeanwhile, "the commit was still waiting for the disk then")

        release.now()
        let deadline = Date().addingTimeInterval(10)
        while !acknowledged.value && Date() < deadline { usleep(1_000) }
        XCTAssertTrue(acknowledged.value, "acknowledged once the disk was done")
    }

    func testCommitsControlRequestsAndTimersGoOnWhileACompactionWaitsForTheDisk() throws {
        let rig = try Rig()
        defer { rig.stop() }
        // Compact after every commit.
        rig.committer.store.compactionPolicy = CompactionPolicy(
            minimumLogBytes: 0, snapshotRatio: 0, maximumLogBytes: 0)
        rig.committer.store.holdWriter(log: false, snapshots: true)
        let release = Release(after: 5) { rig.committer.store.releaseWriter(log: false, snapshots: true) }
        defer { release.now() }
        rig.thread.start()

        let first = rig.register("before-the-compaction")
        var deadline = Date().addingTimeInterval(10)
        while !first.value && Date() < deadline { usleep(1_000) }
        XCTAssertTrue(first.value, "the first commit is durable; the compaction it started now waits")
        let later = (0..<5).map { rig.register("during-the-compaction-\($0)") }
        deadline = Date().addingTimeInterval(10)
        while !later.allSatisfy(\.value) && Date() < deadline { usleep(1_000) }
        let served = try rig.loopAnswersAndTimerFires()
        let compactedMeanwhile = rig.thread.sync { !rig.journal.entries(event: "store-compacted").isEmpty }
        XCTAssertTrue(later.allSatisfy(\.value), "commits made while the compaction waits are acknowledged")
        XCTAssertTrue(served.answered, "a control request is answered while the compaction waits")
        XCTAssertTrue(served.fired, "a timer fires while the compaction waits")
        XCTAssertFalse(compactedMeanwhile, "the compaction was still waiting for the disk then")

        release.now()
        deadline = Date().addingTimeInterval(10)
        var compacted = false
        while !compacted && Date() < deadline {
            usleep(5_000)
            compacted = rig.thread.sync { !rig.journal.entries(event: "store-compacted").isEmpty }
        }
        XCTAssertTrue(compacted, "the compaction finished once the disk was done")
        let count = rig.thread.sync { rig.committer.store.count }
        XCTAssertEqual(count, 6)
    }
}
