import XCTest

@testable import Sessions

/// The group commit's bookkeeping, without files: what goes into a commit, how commits are
/// numbered, and what a failed one leaves behind.
final class CommitQueueTests: XCTestCase {
    private func session(_ n: UInt64) -> Session {
        Session(id: SessionID(rawValue: n), key: SessionKey("k\(n)"), endpoints: ["auth"], ownerUID: 7, registeredAt: n)
    }

    private func registration(_ n: UInt64, answers: Box? = nil) -> CommitQueue.ClientChange {
        var w = ByteWriter()
        StoreRecord.register(session(n)).encode(into: &w)
        return CommitQueue.ClientChange(change: .register(session(n)), record: w.bytes) { answers?.values.append($0) }
    }

    private final class Box { var values: [StoreError?] = [] }

    private func records(_ records: [StoreRecord]) -> [UInt8] {
        var buffer = RecordBuffer()
        for record in records { buffer.append(record, isRemoval: false) }
        return buffer.bytes
    }

    func testEverythingStagedGoesIntoOneCommitNumberedAfterTheLastSequence() throws {
        var queue = CommitQueue(lastSequence: 7)
        queue.stage(.remove(SessionID(rawValue: 1)), isRemoval: true)
        queue.stage(.outcome(SessionID(rawValue: 2), attempts: 1, lastOutcome: "HTTP 500"), isRemoval: false)
        queue.stage(registration(3))
        XCTAssertTrue(queue.hasUnsavedChanges)
        XCTAssertTrue(queue.isCommitDue(at: 0))

        XCTAssertFalse(queue.startCommit().isEmpty)
        XCTAssertTrue(queue.isCommitting)
        XCTAssertEqual(queue.lastSequence, 8, "a small commit is one frame, numbered after 7")
        XCTAssertFalse(queue.isCommitDue(at: .max), "nothing is staged any more")
        XCTAssertEqual(queue.unwrittenRemovals, 1, "the removal is in flight, not yet on disk")
        XCTAssertEqual(queue.pendingRegistrations.map(\.id), [SessionID(rawValue: 3)])

        let batch = try XCTUnwrap(queue.commitSucceeded())
        XCTAssertEqual(batch.firstSequence, 8)
        XCTAssertEqual(batch.records, 3)
        XCTAssertEqual(batch.clients.count, 1)
        XCTAssertFalse(queue.hasUnsavedChanges)
        XCTAssertEqual(queue.unwrittenRemovals, 0)
        XCTAssertTrue(queue.pendingRegistrations.isEmpty)
        XCTAssertNil(queue.commitSucceeded(), "nothing is in flight any more")
    }

    func testWhatIsStagedDuringACommitGoesIntoTheNextOne() throws {
        var queue = CommitQueue(lastSequence: 0)
        queue.stage(registration(1))
        _ = queue.startCommit()
        queue.stage(registration(2))
        queue.stage(registration(3))
        XCTAssertTrue(queue.isCommitting, "the store starts no second commit while this one is in flight")
        XCTAssertEqual(try XCTUnwrap(queue.commitSucceeded()).clients.count, 1)
        _ = queue.startCommit()
        let next = try XCTUnwrap(queue.commitSucceeded())
        XCTAssertEqual(next.firstSequence, 2)
        XCTAssertEqual(next.clients.count, 2)
    }

    func testACommitThatWroteNothingGivesBackItsNumbersAndItsRunResultsGoFirst() throws {
        var queue = CommitQueue(lastSequence: 7)
        let first = StoreRecord.remove(SessionID(rawValue: 1))
        let second = StoreRecord.remove(SessionID(rawValue: 2))
        let answers = Box()
        queue.stage(first, isRemoval: true)
        queue.stage(registration(5, answers: answers))
        _ = queue.startCommit()
        queue.stage(second, isRemoval: true)

        let clients = try XCTUnwrap(queue.commitFailed(nothingWritten: true, now: 1_000_000))
        XCTAssertEqual(clients.count, 1, "the registration is handed back to be answered \"not saved\"")
        XCTAssertTrue(answers.values.isEmpty, "the queue itself answers no one")
        XCTAssertFalse(queue.isCommitting)
        XCTAssertEqual(queue.lastSequence, 7, "nothing was written: the numbers are used again")
        XCTAssertEqual(queue.unwrittenRemovals, 2)
        XCTAssertEqual(queue.stagedRuns.bytes, records([first, second]), "the failed commit's results first")
        XCTAssertTrue(queue.stagedClients.isEmpty, "a failed registration is not retried")
        XCTAssertFalse(queue.isCommitDue(at: 1_199_999), "run results wait 0.2 s before they are tried again")
        XCTAssertTrue(queue.isCommitDue(at: 1_200_000))
        _ = queue.startCommit()
        XCTAssertEqual(try XCTUnwrap(queue.commitSucceeded()).firstSequence, 8)
    }

    func testTheRetryDelayOfRunResultsDoublesUpToFiveSecondsAndStartsAgainAfterASuccess() {
        var queue = CommitQueue(lastSequence: 0)
        var now: UInt64 = 0
        func failOnce() -> UInt64 {
            queue.stage(.remove(SessionID(rawValue: 1)), isRemoval: true)
            _ = queue.startCommit()
            _ = queue.commitFailed(nothingWritten: true, now: now)
            var delay: UInt64 = 0
            while !queue.isCommitDue(at: now + delay) { delay += 100_000 }
            now += delay
            return delay
        }
        let delays = (0..<7).map { _ in failOnce() }
        XCTAssertEqual(delays, [200_000, 400_000, 800_000, 1_600_000, 3_200_000, 5_000_000, 5_000_000])
        _ = queue.startCommit()
        XCTAssertNotNil(queue.commitSucceeded())
        XCTAssertEqual(failOnce(), 200_000)
    }

    func testARecordedClientChangeIsAWaitingRegistrationUntilTheQueueGivesItUp() {
        var queue = CommitQueue(lastSequence: 0)
        queue.stage(registration(4))
        XCTAssertEqual(queue.pendingRegistrations.map(\.id), [SessionID(rawValue: 4)])
        XCTAssertEqual(queue.takeStagedClients().count, 1)
        XCTAssertTrue(queue.pendingRegistrations.isEmpty)
        XCTAssertFalse(queue.hasUnsavedChanges)
    }

    func testAFailedSyncKeepsTheNumbersItUsedAndLetsRunResultsGoAtOnce() throws {
        var queue = CommitQueue(lastSequence: 3)
        queue.stage(.remove(SessionID(rawValue: 1)), isRemoval: true)
        _ = queue.startCommit()
        XCTAssertEqual(try XCTUnwrap(queue.commitFailed(nothingWritten: false, now: 0)).count, 0)
        XCTAssertEqual(queue.lastSequence, 4, "the frame may be on disk: its number is not given out again")
        XCTAssertTrue(queue.isCommitDue(at: 0), "no delay: the store rewrites itself before it commits again")
    }

    func testAFlushLetsRunResultsGoWithoutWaitingOutTheirDelay() {
        var queue = CommitQueue(lastSequence: 0)
        queue.stage(.remove(SessionID(rawValue: 1)), isRemoval: true)
        _ = queue.startCommit()
        _ = queue.commitFailed(nothingWritten: true, now: 1_000_000)
        XCTAssertFalse(queue.isCommitDue(at: 1_000_000))
        queue.retryRunsNow()
        XCTAssertTrue(queue.isCommitDue(at: 1_000_000))
    }
}
