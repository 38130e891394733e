import XCTest

@testable import EventLoop
@testable import Journal
@testable import Runs
@testable import Sessions
@testable import TestSupport
@testable import Vocabulary

/// The per-call journaling policy: what a run writes, and that it always adds up.
final class RunJournalTests: XCTestCase {
    private let clock = ManualClock()
    private var loop: EventLoop!

    override func setUpWithError() throws {
        loop = try EventLoop(clock: clock)
    }

    private func runJournal(_ journal: any JournalSink, id: RunID = .random()) -> RunJournal {
        RunJournal(run: id, kind: .stop, journal: journal, loop: loop)
    }

    private func report(ended: Int, failed: Int, id: RunID) -> RunReport {
        var report = RunReport(id: id, kind: .stop, budget: .seconds(25))
        for _ in 0..<ended {
            report.calls.append(
                .init(
                    sessionID: .random(), ownerUID: 0, endpoint: "auth", outcome: .ended(status: 200), attempts: 1,
                    duration: .milliseconds(5)))
        }
        for _ in 0..<failed {
            report.calls.append(
                .init(
                    sessionID: .random(), ownerUID: 0, endpoint: "auth", outcome: .failed(cause: "refused"),
                    attempts: 1, duration: .milliseconds(5)))
        }
        report.sessionsEnded = ended
        report.sessionsLeft = failed
        return report
    }

    /// Each call of `report` as the run would journal it, then the summary.
    private func journalEveryCall(of report: RunReport, with writer: RunJournal) {
        for call in report.calls {
            writer.callFinished(
                session: call.sessionID, label: nil, endpoint: call.endpoint, url: nil, outcome: call.outcome,
                attempts: call.attempts, duration: call.duration)
        }
        writer.summarise(report)
    }

    private func sumOfCalls(_ journal: MemoryJournal) -> Int {
        (journal.entries(event: "call-finished") + journal.entries(event: "calls-ended"))
            .compactMap { $0.value(of: .calls).flatMap(Int.init) }.reduce(0, +)
    }

    func testEndedCallsAreGroupedFiveHundredToAnEntryWithEverySessionID() {
        let journal = MemoryJournal()
        let writer = runJournal(journal)
        var ids: [SessionID] = []
        for _ in 0..<1_200 {
            let id = SessionID.random()
            ids.append(id)
            writer.callFinished(
                session: id, label: nil, endpoint: "auth", url: nil, outcome: .ended(status: 200), attempts: 1,
                duration: .zero)
        }
        XCTAssertEqual(journal.entries(event: "calls-ended").count, 2, "two full groups go out at once")
        writer.flush()
        let groups = journal.entries(event: "calls-ended")
        XCTAssertEqual(groups.map { $0.values(of: .sessionID).count }, [500, 500, 200])
        XCTAssertEqual(groups.flatMap { $0.values(of: .sessionID) }, ids.map(\.description), "each id once, in order")
        XCTAssertEqual(groups.map { $0.value(of: .calls) }, ["500", "500", "200"])
        XCTAssertTrue(groups.allSatisfy { $0.priority == .info && $0.value(of: .httpStatus) == "200" })
        XCTAssertEqual(journal.entries(event: "call-finished").count, 0)
        XCTAssertEqual(writer.entriesWritten, 3)
    }

    func testGroupsAreKeptApartByEndpointAndStatus() {
        let journal = MemoryJournal()
        let writer = runJournal(journal)
        for (endpoint, status) in [("auth", 200), ("auth", 404), ("licence", 200), ("auth", 200)] {
            writer.callFinished(
                session: .random(), label: nil, endpoint: endpoint, url: nil, outcome: .ended(status: status),
                attempts: 1, duration: .zero)
        }
        writer.flush()
        let groups = journal.entries(event: "calls-ended").map {
            "\($0.value(of: .endpoint) ?? "") \($0.value(of: .httpStatus) ?? "") \($0.value(of: .calls) ?? "")"
        }
        XCTAssertEqual(groups, ["auth 200 2", "auth 404 1", "licence 200 1"])
    }

    func testAnEndedCallWaitsAtMostASecondForItsGroup() throws {
        let journal = MemoryJournal()
        let writer = runJournal(journal)
        writer.callFinished(
            session: .random(), label: nil, endpoint: "auth", url: nil, outcome: .ended(status: 200), attempts: 1,
            duration: .zero)
        clock.advance(.milliseconds(999))
        try loop.runOnce(maximumWait: .zero)
        XCTAssertTrue(journal.entries(event: "calls-ended").isEmpty)
        clock.advance(.milliseconds(1))
        try loop.runOnce(maximumWait: .zero)
        XCTAssertEqual(journal.entries(event: "calls-ended").count, 1)
    }

    func testEveryCallNotEndedHasAnEntryOfItsOwnAtWarning() {
        let journal = MemoryJournal()
        let writer = runJournal(journal)
        let outcomes: [CallOutcome] = [
            .rejected(status: 403, reason: "HTTP 403"), .failed(cause: "connection refused"), .expired,
            .notStarted(reason: "too little budget"),
        ]
        for index in 0..<2_000 {
            writer.callFinished(
                session: .random(), label: "web", endpoint: "auth", url: "http://x/<redacted>",
                outcome: outcomes[index % outcomes.count], attempts: 2, duration: .milliseconds(7))
        }
        let entries = journal.entries(event: "call-finished")
        XCTAssertEqual(entries.count, 2_000)
        XCTAssertTrue(entries.allSatisfy { $0.priority == .warning && $0.value(of: .calls) == "1" })
        XCTAssertEqual(entries[0].value(of: .httpStatus), "403")
        XCTAssertEqual(entries[1].value(of: .error), "connection refused")
        XCTAssertEqual(entries[1].value(of: .sessionLabel), "web")
        XCTAssertEqual(entries[3].value(of: .outcome), "not-started")
    }

    func testTheSummaryAddsUpToTheCallsMadeAndCountsWhatTheJournalDropped() throws {
        // The journal keeps 100 bulk entries: 1,000 failures cannot all get in.
        let journal = MemoryJournal(bulkCapacity: 100)
        let id = RunID.random()
        let writer = runJournal(journal, id: id)
        let report = report(ended: 2_000, failed: 1_000, id: id)
        journalEveryCall(of: report, with: writer)
        let summary = try XCTUnwrap(journal.entries(event: "run-finished").first, "the summary always has room")
        XCTAssertEqual(summary.value(of: .callsTotal), "3000")
        XCTAssertEqual(summary.value(of: .callsEnded), "2000")
        XCTAssertEqual(summary.value(of: .callsFailed), "1000")
        XCTAssertEqual(summary.value(of: .journalEntries), "100")
        XCTAssertEqual(summary.value(of: .journalDropped), String(journal.droppedEntries))
        XCTAssertEqual(journal.droppedEntries, 904, "the 4 groups of ended calls came first: 96 failures got in")
        XCTAssertEqual(summary.priority, .notice, "sessions kept: notice, never in the warning pool")
        XCTAssertEqual(summary.value(of: .runID), id.description)
        XCTAssertTrue(summary.message.contains("904 journal entries were dropped"), summary.message)
    }

    func testWithNothingDroppedTheCallEntriesAccountForEveryCall() throws {
        let journal = MemoryJournal()
        let id = RunID.random()
        let writer = runJournal(journal, id: id)
        let report = report(ended: 1_234, failed: 56, id: id)
        journalEveryCall(of: report, with: writer)
        let summary = try XCTUnwrap(journal.entries(event: "run-finished").first)
        XCTAssertEqual(sumOfCalls(journal), 1_290)
        XCTAssertEqual(summary.value(of: .callsTotal), "1290")
        XCTAssertEqual(summary.value(of: .journalDropped), "0")
        XCTAssertEqual(summary.value(of: .journalEntries), String(3 + 56))
        XCTAssertTrue(journal.entries.allSatisfy { $0.value(of: .runID) == id.description })
        XCTAssertEqual(journal.entries.last?.event, .runFinished, "the summary comes after the last group")
    }
}
