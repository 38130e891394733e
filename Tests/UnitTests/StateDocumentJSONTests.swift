import Foundation
import XCTest

@testable import Daemon
@testable import JSON
@testable import Vocabulary

/// The state directory's JSON documents: written as earlier versions' `JSONEncoder` wrote them,
/// and what those versions wrote reads back.
final class StateDocumentJSONTests: XCTestCase {
    private func record(expiry: String?) -> RunRecord {
        var report = RunReport(id: .random(), kind: .stop, budget: .seconds(25), startedAt: 1_700_000_000_000_001)
        report.calls = [
            RunReport.CallResult(
                sessionID: .random(), ownerUID: 1000, endpoint: "auth/v2", outcome: .ended(status: 200), attempts: 1,
                duration: .milliseconds(12)),
            RunReport.CallResult(
                sessionID: .random(), ownerUID: 0, endpoint: "billing", outcome: .failed(cause: "timed out"),
                attempts: 3, duration: .seconds(2)),
        ]
        report.sessionsEnded = 1
        report.sessionsLeft = 1
        report.duration = .milliseconds(2500)
        var record = RunRecord(report, finishedAt: 1_700_000_002_500_000, journalDropped: 4)
        record.expiry = expiry
        record.callCounts["not-started"] = 7
        return record
    }

    /// Foundation's `JSONEncoder` with its default slash escaping and sorted keys, as earlier versions wrote.
    private func foundationText(_ value: JSONValue) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return Array(try encoder.encode(FoundationJSON(value)))
    }

    func testTheLastStopRunsFactsAreWrittenByteForByteAsBefore() throws {
        for expiry in [nil, "deadline", "a/b"] {
            let record = record(expiry: expiry)
            let text = try LastStopRunFacts.text(record)
            XCTAssertEqual(
                String(decoding: text, as: UTF8.self),
                String(decoding: try foundationText(LastStopRunFacts.json(record)), as: UTF8.self))
            XCTAssertTrue(String(decoding: text, as: UTF8.self).hasPrefix(#"{"budget_usec":25000000,"calls":{"#))
            if expiry == "a/b" { XCTAssertTrue(String(decoding: text, as: UTF8.self).contains(#""expired":"a\/b""#)) }
        }
    }

    func testFactsWrittenByEarlierVersionsReadBackIntoTheSameRecord() throws {
        let record = record(expiry: "second-signal")
        let old = try foundationText(LastStopRunFacts.json(record))
        guard case .object(let facts) = try StrictJSON.parse(old) else { return XCTFail("not an object") }
        guard case .object(let expected) = LastStopRunFacts.json(record) else { return XCTFail("not an object") }
        XCTAssertEqual(facts, expected)
        XCTAssertEqual(
            LastStopRunDocument.decode(facts: facts, results: LastStopRunResults.encode(record)), record)
    }

    func testTheInterruptedStopRunsRecordIsCompactSortedJSON() throws {
        let text = try InterruptedStopRun.document(sessions: 50_000, begunAt: 1_700_000_000_000_000)
        XCTAssertEqual(String(decoding: text, as: UTF8.self), #"{"begun_at_usec":1700000000000000,"sessions":50000}"#)
        XCTAssertEqual(
            try StrictJSON.parse(text), ["begun_at_usec": 1_700_000_000_000_000, "sessions": 50_000])
    }
}
