import XCTest

@testable import Daemon
@testable import Journal
@testable import Sessions

/// What the daemon journals about its store: each event and what opening found, as entries.
final class StoreJournalEntryTests: XCTestCase {
    private let fault = StoreError(kind: .syncFailed, message: "fdatasync: Input/output error")

    func testAFailedCommitSaysWhetherTheStoreRewritesItself() {
        let recovering = StoreEvent.commitFailed(fault, recovering: true).journalEntry
        XCTAssertEqual(recovering.event, .storeWriteFailed)
        XCTAssertTrue(recovering.message.hasSuffix("; rewriting it from memory before the next commit"))
        XCTAssertEqual(recovering.value(of: .error), fault.description)
        let retried = StoreEvent.commitFailed(fault, recovering: false).journalEntry
        XCTAssertFalse(retried.message.contains("rewriting"))
    }

    func testRecoveryAndCompactionEntriesCarryTheirCounts() {
        let recovered = StoreEvent.recovered(sessions: 3, directoryRecreated: true).journalEntry
        XCTAssertEqual(recovered.event, .storeRecovered)
        XCTAssertEqual(recovered.value(of: .sessionsTotal), "3")
        XCTAssertTrue(recovered.message.contains("into a state directory made again"))
        XCTAssertEqual(StoreEvent.recoveryFailed(fault).journalEntry.event, .storeWriteFailed)
        XCTAssertEqual(StoreEvent.compactionFailed(fault).journalEntry.event, .storeCompactionFailed)
        let compacted = StoreEvent.compacted(sessions: 2, snapshotBytes: 4096, microseconds: 12_000).journalEntry
        XCTAssertEqual(compacted.event, .storeCompacted)
        XCTAssertEqual(compacted.message, "Session store compacted: 2 sessions, 4096 bytes in 12 ms")
        XCTAssertEqual(compacted.value(of: .durationUsec), "12000")
    }

    func testOpeningReportsEachProblemTheFilesKeptAsideAndThenTheLoad() {
        var report = LoadReport()
        report.problems = [
            StoreProblem(kind: .corruptSnapshot, path: "/s/sessions.snapshot", detail: "bad"),
            StoreProblem(kind: .truncatedLogTail, path: "/s/sessions.log", detail: "torn"),
        ]
        report.preservedFiles = ["/s/sessions.snapshot.corrupt-1"]
        report.sessionCount = 4
        report.durationMicroseconds = 3_000
        let entries = report.journalEntries
        XCTAssertEqual(entries.map(\.event), [.storeDamaged, .storeDamaged, .storeDamaged, .storeLoaded])
        XCTAssertEqual(
            entries.map { $0.value(of: .storeFile) }.prefix(3),
            ["/s/sessions.snapshot", "/s/sessions.log", "/s/sessions.snapshot.corrupt-1"])
        XCTAssertEqual(entries.last?.value(of: .sessionsTotal), "4")
        XCTAssertEqual(entries.last?.message, "Session store loaded: 4 sessions in 3 ms")
        XCTAssertEqual(LoadReport().journalEntries.map(\.event), [.storeLoaded], "a clean load is one entry")
    }
}
