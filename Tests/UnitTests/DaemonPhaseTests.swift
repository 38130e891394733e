import XCTest

@testable import Daemon
@testable import EventLoop
@testable import Journal
@testable import Runs
@testable import TestSupport
@testable import Vocabulary

/// The daemon's phases as control requests see them (what `status` calls each, whether
/// registrations are taken), and the stop run's bookkeeping.
final class DaemonPhaseTests: XCTestCase {
    func testEachPhaseIsAnsweredAsItsState() {
        let budget = StopBudget(total: .seconds(10), minimumRequest: .seconds(1), clock: ManualClock())
        let stop = StopRunBookkeeping(budget: budget, runID: .random(), journalDroppedAtStart: 0)
        let cases: [(Daemon.Phase, String, Bool)] = [
            (.running, "running", true),
            (.handingOver(since: MonotonicInstant(microseconds: 1)), "restarting", true),
            (.stopping(stop), "stopping", false),
            (.finished(.success), "stopped", false),
        ]
        for (phase, name, registers) in cases {
            XCTAssertEqual(phase.state.rawValue, name)
            XCTAssertEqual(phase.state.acceptsRegistrations, registers, name)
        }
    }

    func testTheStopRunsEntriesNameItsRunAndCountOnlyItsOwnDrops() {
        let budget = StopBudget(total: .seconds(10), minimumRequest: .seconds(1), clock: ManualClock())
        let journal = MemoryJournal(bulkCapacity: 0)
        journal.record(JournalEntry(.registered, "before the stop"))
        let stop = StopRunBookkeeping(budget: budget, runID: .random(), journalDroppedAtStart: journal.droppedEntries)
        XCTAssertEqual(
            stop.journalFields,
            [JournalField(.runID, stop.runID.description), JournalField(.runKind, "stop")])
        journal.record(JournalEntry(.registered, "during the stop"))
        journal.record(JournalEntry(.registered, "during the stop"))
        XCTAssertEqual(journal.droppedEntries, 3)
        XCTAssertEqual(stop.journalDropped(by: journal), 2)
    }
}
