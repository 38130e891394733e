import JSON
import Journal
import Sessions
import Vocabulary

/// The last stop run's ``RunRecord``, kept in the state directory beside the store as two of
/// the store's documents (mode 0600, each replaced atomically), one format each: the facts and
/// counts that `status` shows, read at start (``LastStopRunFacts``: JSON), and every call's
/// result, read only when `report` asks (``LastStopRunResults``: text, a line per call). No
/// keys: sessions are named by id.
enum LastStopRunDocument {
    /// The facts and counts of the last stop run, if there is a readable record.
    static func read(from store: SessionStore) -> JSONValue? { LastStopRunFacts.read(from: store) }

    /// The whole record of the last stop run, or nil (none, unreadable, or the two documents are
    /// of different runs: a crash between the two writes).
    static func readRecord(from store: SessionStore) -> RunRecord? {
        guard case .object(let facts)? = read(from: store), let bytes = store.readDocument(LastStopRunResults.name)
        else { return nil }
        return decode(facts: facts, results: bytes)
    }

    /// Keeps `record`: results first, then the facts that name them, so that facts are never
    /// found beside the results of an earlier run. A failure is journaled.
    static func write(_ record: RunRecord, to store: SessionStore, journal: any JournalSink) {
        do {
            try LastStopRunResults.write(record, to: store)
            try store.writeDocument(LastStopRunFacts.name, try LastStopRunFacts.text(record))
        } catch {
            journal.record(
                JournalEntry(
                    .storeWriteFailed, "The stop run's report was not saved: \(error)",
                    [JournalField(.runID, record.id.description), JournalField(.error, "\(error)")]))
        }
    }

    /// The record that `facts` and the results file's `results` make together; nil when either
    /// is damaged or they are of different runs.
    static func decode(facts: [String: JSONValue], results: [UInt8]) -> RunRecord? {
        guard let id = LastStopRunFacts.runID(in: facts), let calls = LastStopRunResults.decode(results, runID: id)
        else { return nil }
        return LastStopRunFacts.record(from: facts, results: calls)
    }
}
