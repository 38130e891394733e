import Journal
import Runs
import Vocabulary

/// What the daemon keeps about its stop run from SIGTERM on: the budget, the run's id (on every
/// entry of the stop), and the journal's drop count when the stop began, so that the run's
/// record counts what the stop itself could not journal.
struct StopRunBookkeeping {
    /// The stop's deadline budget, started at the signal.
    let budget: StopBudget
    /// The stop run's id.
    let runID: RunID
    /// ``JournalSink/droppedEntries`` when the stop began.
    let journalDroppedAtStart: Int
    /// Whether the stop run's start is durable (``InterruptedStopRun``): then the next start ends
    /// every session this stop leaves without a saved outcome; else only the next stop does.
    var startRecorded = false

    /// The fields naming the stop run on its entries.
    var journalFields: [JournalField] {
        [JournalField(.runID, runID.description), JournalField(.runKind, RunKind.stop.rawValue)]
    }

    /// How many entries the journal could not take since the stop began.
    func journalDropped(by journal: any JournalSink) -> Int { journal.droppedEntries - journalDroppedAtStart }
}
