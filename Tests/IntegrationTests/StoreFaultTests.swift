import Foundation
import Glibc
import XCTest

@testable import Sessions

/// The store under faults of the disk and the directory: a full disk while registering and while
/// compacting (a small tmpfs), the state directory or its log deleted while open. The rule: what
/// is answered "not saved" is nowhere; what is acknowledged survives a reopen; a transient fault
/// heals without one.
final class StoreFaultTests: XCTestCase {
    private func session(_ n: Int) -> Session {
        Session(
            id: SessionID(rawValue: 0xFA17_0000_0000_0000 | UInt64(n)),
            key: SessionKey("fault-key-\(n)-" + String(repeating: "k", count: 40)),
            endpoints: ["auth"], ownerUID: 1000, label: "fault \(n)", registeredAt: 1_700_000_000_000_000 + UInt64(n))
    }

    /// Registers `s` and waits for the answer: nil when durable, else the error.
    /// The ids a fresh open of `dir` finds; the open must report no damage.
    private func sessionsAfterACleanReopen(of dir: String) throws -> Set<SessionID> {
        let (again, report) = try SessionStore.open(directory: dir)
        defer { again.close() }
        XCTAssertTrue(report.isClean, report.description)
        return Set(again.allSessions.map(\.id))
    }

    private func registerAndWait(_ s: Session, in store: SessionStore) throws -> StoreError? {
        var answer: StoreError??
        try store.register(s) { answer = .some($0) }
        store.flush(timeoutMilliseconds: 5_000)
        guard let answer else { throw TestSetupError("registration of \(s.id) not answered") }
        return answer
    }

    private func events(of store: SessionStore) -> () -> [StoreEvent] {
        let box = EventBox()
        store.onEvent = { box.events.append($0) }
        return { box.events }
    }

    // MARK: A full disk

    func testFullDiskRefusesRegistrationsCleanlyAndHealsWhenSpaceReturns() throws {
        let fs = try SmallFilesystem(megabytes: 2)
        let dir = fs.path + "/state"
        XCTAssertEqual(mkdir(dir, 0o700), 0)
        let (store, _) = try SessionStore.open(directory: dir)
        for n in 0..<20 { XCTAssertNil(try registerAndWait(session(n), in: store)) }
        try fs.fill()

        // The log's reserve lasts a while; then a commit needs room that is not there.
        var acknowledged = Set((0..<20).map { session($0).id })
        var refused: (Session, StoreError)?
        for n in 20..<5000 {
            if let error = try registerAndWait(session(n), in: store) {
                refused = (session(n), error)
                break
            }
            acknowledged.insert(session(n).id)
        }
        let (victim, error) = try XCTUnwrap(refused, "a full disk must refuse a registration")
        XCTAssertTrue(error.message.hasPrefix("not saved"), error.message)
        XCTAssertEqual(error.errnoCode, ENOSPC, error.message)
        // Not saved means nowhere: not listed, not counted, not held against the owner, not pending.
        XCTAssertNil(store.session(id: victim.id))
        XCTAssertFalse(store.contains(victim.id))
        XCTAssertEqual(store.count, acknowledged.count)
        XCTAssertEqual(store.heldCount(ownedBy: 1000), acknowledged.count)
        XCTAssertFalse(store.hasUnsavedChanges)
        // A retry of the same session does not duplicate it; it is refused again while full.
        XCTAssertNotNil(try registerAndWait(victim, in: store))
        // Run results made while full stay in memory and are written once there is room.
        let ended = session(3).id
        store.recordEnded(ended)
        XCTAssertFalse(store.flush(timeoutMilliseconds: 500), "cannot be written while the disk is full")
        XCTAssertEqual(store.durableCount, store.count + 1, "the ended session is still on disk")

        fs.makeRoom()
        XCTAssertTrue(store.flush(), "the retry writes the run result once there is room")
        XCTAssertNil(try registerAndWait(victim, in: store), "heals without a restart")
        acknowledged.insert(victim.id)
        acknowledged.remove(ended)
        store.close()

        XCTAssertEqual(try sessionsAfterACleanReopen(of: dir), acknowledged)
        print(
            "StoreFault full disk: \(acknowledged.count) acknowledged and found after reopen, refused \(victim.id) while full"
        )
    }

    func testFullDiskDuringCompactionLeavesTheStoreWorkingAndCompactsLater() throws {
        let fs = try SmallFilesystem(megabytes: 4)
        let dir = fs.path + "/state"
        XCTAssertEqual(mkdir(dir, 0o700), 0)
        let (store, _) = try SessionStore.open(
            directory: dir, compactionPolicy: CompactionPolicy(minimumLogBytes: .max))
        let seen = events(of: store)
        for n in 0..<3000 { try store.register(session(n)) { XCTAssertNil($0) } }
        XCTAssertTrue(store.flush())
        let snapshotSize = SnapshotEncoder.encode(store.allSessions, count: store.count, lastSequence: 0, createdAt: 0)
            .count
        // Room for the log to grow, not for a snapshot.
        try fs.fill(leaving: snapshotSize * 3 / 4)
        let compactionsBefore = store.statistics.compactions
        store.compactionPolicy = CompactionPolicy(minimumLogBytes: 1, snapshotRatio: 0, retryDelaySeconds: 0.2)
        XCTAssertNil(try registerAndWait(session(3000), in: store))
        XCTAssertTrue(store.waitUntilIdle())
        XCTAssertEqual(store.statistics.compactions, compactionsBefore)
        XCTAssertTrue(
            seen().contains {
                if case .compactionFailed(let e) = $0 { return e.errnoCode == ENOSPC }
                return false
            }, "\(seen())")
        // The store is not poisoned: commits go on into the old log.
        for n in 3001..<3010 { XCTAssertNil(try registerAndWait(session(n), in: store), "registration \(n)") }

        fs.makeRoom()
        usleep(250_000)  // the retry delay
        XCTAssertNil(try registerAndWait(session(3010), in: store))
        XCTAssertTrue(store.waitUntilIdle())
        XCTAssertGreaterThan(store.statistics.compactions, compactionsBefore, "compacts once there is room")
        store.close()
        let (again, report) = try SessionStore.open(directory: dir)
        defer { again.close() }
        XCTAssertTrue(report.isClean, report.description)
        XCTAssertEqual(again.count, 3011)
    }

    // MARK: The directory deleted

    func testARunResultHeldBackForAnUnregistrationThatFailedIsWrittenAfterIt() throws {
        let fs = try SmallFilesystem(megabytes: 2)
        let dir = fs.path + "/state"
        XCTAssertEqual(mkdir(dir, 0o700), 0)
        let (store, _) = try SessionStore.open(directory: dir)
        var two = session(0)
        two.endpoints = ["auth", "licence"]
        XCTAssertNil(try registerAndWait(two, in: store))
        try fs.fill()
        // Use up the log's reserve: until a registration is refused.
        var refused = false
        for n in 1..<5000 where !refused { refused = try registerAndWait(session(n), in: store) != nil }
        XCTAssertTrue(refused, "a full disk must refuse a registration")

        var answer: StoreError??
        XCTAssertNotNil(store.unregister(two.id) { answer = .some($0) })
        // A run ended the session at one endpoint while its unregistration was being written.
        XCTAssertTrue(store.replace(session(0)))
        store.flush(timeoutMilliseconds: 500)
        let error = try XCTUnwrap(answer, "the unregistration was answered")
        XCTAssertNotNil(error, "not saved while the disk is full")
        XCTAssertEqual(store.session(id: two.id)?.endpoints, ["auth"], "the session stays, as the run left it")

        fs.makeRoom()
        XCTAssertTrue(store.flush(), "the held-back result is written once there is room")
        store.close()
        let (again, _) = try SessionStore.open(directory: dir)
        defer { again.close() }
        XCTAssertEqual(again.session(id: two.id)?.endpoints, ["auth"], "not called again at the endpoint that ended it")
    }

    func testDeletedStateDirectoryIsMadeAgainAndNothingAcknowledgedIsLost() throws {
        let parent = try ScratchDirectory("deleted-state")
        let dir = parent.path + "/state"
        XCTAssertEqual(mkdir(dir, 0o700), 0)
        let (store, _) = try SessionStore.open(directory: dir)
        let seen = events(of: store)
        for n in 0..<10 { XCTAssertNil(try registerAndWait(session(n), in: store)) }
        try FileManager.default.removeItem(atPath: dir)

        var acknowledged = Set((0..<10).map { session($0).id })
        var refused = 0
        for n in 10..<710 {
            if try registerAndWait(session(n), in: store) == nil {
                acknowledged.insert(session(n).id)
            } else {
                refused += 1
            }
        }
        // The first commit after the deletion finds it (after its fdatasync, before any answer)
        // and is refused; the store makes the directory again, rewrites itself into it, goes on.
        XCTAssertEqual(refused, 1)
        XCTAssertTrue(
            seen().contains {
                if case .recovered(_, let recreated) = $0 { return recreated }
                return false
            }, "\(seen())")
        store.close()
        XCTAssertEqual(try sessionsAfterACleanReopen(of: dir), acknowledged)
        print(
            "StoreFault deleted directory: \(acknowledged.count) of \(acknowledged.count + refused) acknowledged, all found after reopen"
        )
    }

    func testALogThatFailedIsNeverWrittenOrCarriedFromAgain() throws {
        let parent = try ScratchDirectory("abandoned-log")
        let directory = try StoreDirectory.open(parent.path)
        let log = try LogFile.create(
            in: directory, contents: LogEncoder.header(snapshotSequence: 0, snapshotSessions: 0, createdAt: 0))
        let frame = LogEncoder.commit(records: [0x02, 1, 0, 0, 0, 0, 0, 0, 0], ends: [9], firstSequence: 1).bytes
        try log.append(frame)
        XCTAssertEqual(unlink(parent.path + "/" + StoreFormat.logFileName), 0)
        XCTAssertThrowsError(try log.append(frame)) { error in
            guard case .fileGone = error as? AppendFailure else { return XCTFail("\(error)") }
        }
        let end = log.logicalEnd
        XCTAssertThrowsError(try log.append(frame), "abandoned: not even tried") { error in
            guard case .syncFailed = error as? AppendFailure else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(log.logicalEnd, end)
        XCTAssertNotNil(log.abandoned)
        XCTAssertThrowsError(try log.bytes(from: 0), "a compaction carries nothing from it")
    }

    func testDeletedLogIsRewrittenFromMemory() throws {
        let parent = try ScratchDirectory("deleted-log")
        let dir = parent.path
        let (store, _) = try SessionStore.open(directory: dir)
        for n in 0..<50 { XCTAssertNil(try registerAndWait(session(n), in: store)) }
        XCTAssertEqual(unlink(dir + "/" + StoreFormat.logFileName), 0)
        XCTAssertNotNil(try registerAndWait(session(50), in: store), "written into a deleted file: not saved")
        XCTAssertNil(try registerAndWait(session(51), in: store))
        store.close()
        let (again, report) = try SessionStore.open(directory: dir)
        defer { again.close() }
        XCTAssertTrue(report.isClean, report.description)
        XCTAssertEqual(again.count, 51)
        XCTAssertNil(again.session(id: session(50).id))
    }
}

private final class EventBox {
    var events: [StoreEvent] = []
}
