import XCTest

@testable import Basics
@testable import Daemon
@testable import JSON
@testable import Sessions
@testable import Vocabulary

/// The durable run report (`session-cleanup report`): what is kept, how it reads back, who sees what.
final class RunRecordTests: XCTestCase {
    private func call(
        _ uid: UInt32, _ outcome: CallOutcome, endpoint: String = "auth", ms: Int64 = 10, id: SessionID = .random()
    ) -> RunReport.CallResult {
        RunReport.CallResult(
            sessionID: id, ownerUID: uid, endpoint: endpoint, outcome: outcome,
            attempts: outcome == .notStarted(reason: "late") ? 0 : 1, duration: .milliseconds(ms))
    }

    private func record(_ calls: [RunReport.CallResult]) -> RunRecord {
        var report = RunReport(id: .random(), kind: .stop, budget: .seconds(25), startedAt: 1_000)
        report.calls = calls
        var allEnded: [SessionID: Bool] = [:]
        for call in calls { allEnded[call.sessionID] = (allEnded[call.sessionID] ?? true) && call.outcome.isEnded }
        report.sessionsEnded = allEnded.values.count { $0 }
        report.sessionsLeft = allEnded.count - report.sessionsEnded
        report.duration = .milliseconds(1500)
        return RunRecord(report, finishedAt: 2_000, journalDropped: 3)
    }

    private func object(_ value: JSONValue) throws -> [String: JSONValue] {
        guard case .object(let object) = value else { throw TestFailure("not an object: \(value)") }
        return object
    }

    func testTheResultsFileReadsBackExactlyEvenWithTabsAndNewlinesInACause() throws {
        let original = record([
            call(0, .ended(status: 200)), call(1000, .rejected(status: 403, reason: "HTTP 403\tforbidden\\x")),
            call(1000, .failed(cause: "line one\nline two")), call(0, .expired), call(0, .notStarted(reason: "late")),
            call(5, .ended(status: 404), endpoint: "odd\tname"),
        ])
        let facts = try object(LastStopRunFacts.json(original))
        let bytes = LastStopRunResults.encode(original)
        XCTAssertEqual(LastStopRunDocument.decode(facts: facts, results: bytes), original)
    }

    func testTheResultsFileIsWrittenInPiecesOfAThousandLinesThatReadBackAsOne() throws {
        let calls = (0..<2500).map { n in
            n % 7 == 0 ? call(UInt32(n), .failed(cause: "cause \(n)")) : call(UInt32(n), .ended(status: 200))
        }
        let original = record(calls)
        var pieces = LastStopRunResults.Pieces(original)
        var piece: [UInt8] = []
        var lineCounts: [Int] = []
        var all: [UInt8] = []
        while pieces.next(into: &piece) {
            lineCounts.append(piece.count { $0 == UInt8(ascii: "\n") })
            all += piece
        }
        XCTAssertEqual(lineCounts, [1, 1024, 1024, 452], "the header, then up to 1,024 calls a piece")
        XCTAssertFalse(pieces.next(into: &piece), "nothing after the last piece")
        let facts = try object(LastStopRunFacts.json(original))
        XCTAssertEqual(LastStopRunDocument.decode(facts: facts, results: all), original)
    }

    func testTheLongestLinesFitTheSpaceTheResultsFileIsWrittenInto() throws {
        // Every byte of the endpoint and the cause escaped (twice its size), numbers at their widest
        // (the file keeps microseconds).
        let worst = String(repeating: "\t\n\\", count: 400)
        let original = record([
            RunReport.CallResult(
                sessionID: SessionID(rawValue: .max), ownerUID: .max, endpoint: String(repeating: "\t", count: 300),
                outcome: .rejected(status: .max, reason: worst), attempts: .max,
                duration: .nanoseconds(Int64.max / 1000 * 1000)),
            RunReport.CallResult(
                sessionID: SessionID(rawValue: 0), ownerUID: 0, endpoint: "", outcome: .failed(cause: worst),
                attempts: 0, duration: .microseconds(-1_000_001)),
        ])
        let facts = try object(LastStopRunFacts.json(original))
        let bytes = LastStopRunResults.encode(original)
        XCTAssertEqual(LastStopRunDocument.decode(facts: facts, results: bytes), original)
    }

    func testAResultsFileOfAnotherRunOrCutShortIsNotRead() throws {
        let first = record([call(0, .ended(status: 200))])
        let second = record([call(0, .ended(status: 200))])
        let facts = try object(LastStopRunFacts.json(first))
        XCTAssertNil(LastStopRunDocument.decode(facts: facts, results: LastStopRunResults.encode(second)))
        let cut = Array(LastStopRunResults.encode(first).dropLast())
        XCTAssertNil(LastStopRunDocument.decode(facts: facts, results: cut))
    }

    func testAUserSeesOnlyTheirOwnCallsAndCountsOverThem() throws {
        let mine = SessionID.random()
        let run = record([
            call(1000, .ended(status: 200), id: mine),
            call(1000, .failed(cause: "refused"), endpoint: "licence", id: mine),
            call(2000, .ended(status: 200)), call(2000, .expired), call(0, .ended(status: 200)),
        ])
        let report = try object(run.report(visibleTo: 1000))
        XCTAssertEqual(report["scope"], .string("uid 1000"))
        XCTAssertEqual(report["calls"], .object(["ended": 1, "failed": 1, "total": 2]))
        XCTAssertEqual(report["sessions"], .object(["total": 1, "ended": 0, "kept": 1]))
        XCTAssertEqual(
            report["kept"],
            .array([
                .object([
                    "id": .string(mine.description), "endpoint": "licence", "outcome": "failed", "error": "refused",
                ])
            ]))
        let all = try object(run.report(visibleTo: 0))
        XCTAssertEqual(all["calls"], .object(["ended": 3, "failed": 1, "expired": 1, "total": 5]))
        XCTAssertEqual(all["sessions"], .object(["total": 4, "ended": 2, "kept": 2]))
        XCTAssertEqual(all["journal"], .object(["entries": 0, "dropped": 3]))
    }

    func testFailuresAreGroupedByCauseLargestFirstAndTheSlowestCallsListed() throws {
        var calls: [RunReport.CallResult] = []
        for index in 0..<7 { calls.append(call(0, .failed(cause: "connection refused"), ms: Int64(index))) }
        for index in 0..<3 { calls.append(call(0, .rejected(status: 500, reason: "HTTP 500"), ms: Int64(100 + index))) }
        for index in 0..<20 { calls.append(call(0, .ended(status: 200), ms: Int64(50 + index))) }
        calls.append(call(0, .notStarted(reason: "late"), ms: 99_999))  // never started: not "slow"
        let report = try object(record(calls).report(visibleTo: 0))
        guard case .array(let failures)? = report["failures"], case .array(let slowest)? = report["slowest"] else {
            throw TestFailure("missing failures or slowest: \(report)")
        }
        let groups = try failures.map { try object($0) }
        XCTAssertEqual(groups.map { $0["calls"] }, [.integer(7), .integer(3), .integer(1)])
        XCTAssertEqual(groups.first?["error"], "connection refused")
        if case .array(let ids)? = groups.first?["sessions"] { XCTAssertEqual(ids.count, 5) } else { XCTFail() }
        let durations = try slowest.map { try object($0)["duration_usec"] }
        XCTAssertEqual(durations.count, 10)
        XCTAssertEqual(durations.first, .integer(102_000))
        XCTAssertEqual(durations.last, .integer(63_000), "102, 101, 100, then the ended 69 … 63")
    }

    func testAHugeRunKeepsEveryFailureAndOmitsEndedCallsFirst() {
        var calls = (0..<(RunRecord.maxResults + 10)).map { _ in call(0, .ended(status: 200)) }
        calls += (0..<20).map { _ in call(0, .failed(cause: "x")) }
        let (kept, omitted) = RunRecord.bounded(calls)
        XCTAssertEqual(kept.count, RunRecord.maxResults)
        XCTAssertEqual(omitted, 30)
        XCTAssertEqual(kept.count { !$0.outcome.isEnded }, 20)
    }
}

private struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
