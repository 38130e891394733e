import Glibc
import XCTest

@testable import Basics
@testable import Daemon
@testable import JSON
@testable import Sessions
@testable import TestSupport
@testable import Vocabulary

/// A stopped daemon's last stop run, read by a client straight from the state directory (real
/// files, as the daemon's store wrote them), without opening or locking the store.
final class StoppedDaemonDocumentsTests: XCTestCase {
    private func record() -> RunRecord {
        var report = RunReport(id: .random(), kind: .stop, budget: .seconds(25), startedAt: 1_000)
        report.calls = [
            RunReport.CallResult(
                sessionID: .random(), ownerUID: 0, endpoint: "auth", outcome: .ended(status: 200), attempts: 1,
                duration: .milliseconds(12)),
            RunReport.CallResult(
                sessionID: .random(), ownerUID: 1000, endpoint: "auth", outcome: .failed(cause: "refused"),
                attempts: 3, duration: .milliseconds(40)),
        ]
        report.sessionsEnded = 1
        report.sessionsLeft = 1
        report.duration = .milliseconds(60)
        return RunRecord(report, finishedAt: 2_000, journalDropped: 0)
    }

    /// Writes `record` as the daemon does, closes the store, and returns the directory.
    private func stateDirectory(with record: RunRecord?) throws -> ScratchDirectory {
        let scratch = try ScratchDirectory("stopped")
        let (store, _) = try SessionStore.open(directory: scratch.path)
        if let record { LastStopRunDocument.write(record, to: store, journal: MemoryJournal()) }
        store.close()
        return scratch
    }

    func testTheLastStopRunIsReadFromTheDirectoryAsTheDaemonWouldReportIt() throws {
        let kept = record()
        let scratch = try stateDirectory(with: kept)
        guard case .object(let facts)? = try StoppedDaemonDocuments.lastStopFacts(in: scratch.path) else {
            return XCTFail("no facts read")
        }
        XCTAssertEqual(facts["run_id"], .string(kept.id.description))
        XCTAssertEqual(facts["sessions_left"], .integer(1))
        let report = try StoppedDaemonDocuments.lastStopReport(in: scratch.path, visibleTo: 0)
        XCTAssertEqual(report, kept.report(visibleTo: 0), "root sees what the running daemon would send")
        guard case .object(let mine)? = try StoppedDaemonDocuments.lastStopReport(in: scratch.path, visibleTo: 1000)
        else { return XCTFail("no report for uid 1000") }
        XCTAssertEqual(mine["scope"], .string("uid 1000"), "a user sees only their own sessions")
    }

    func testNoRecordedRunIsNilNotAnError() throws {
        let scratch = try stateDirectory(with: nil)
        XCTAssertNil(try StoppedDaemonDocuments.lastStopFacts(in: scratch.path))
        XCTAssertNil(try StoppedDaemonDocuments.lastStopReport(in: scratch.path, visibleTo: 0))
        XCTAssertNil(try StoppedDaemonDocuments.lastStopFacts(in: scratch.path + "/never-made"))
    }

    func testADamagedFactsDocumentIsAnErrorNamingTheFile() throws {
        let scratch = try ScratchDirectory("stopped")
        _ = try scratch.write("last-stop-run.json", "{\"run_id\": ")
        XCTAssertThrowsError(try StoppedDaemonDocuments.lastStopFacts(in: scratch.path)) { error in
            XCTAssertTrue("\(error)".contains(scratch.path + "/last-stop-run.json"), "\(error)")
        }
    }

}
