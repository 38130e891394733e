import FoundationEssentials
import Sessions

/// The summary of the last stop run (counts and timing, no keys), kept in the state directory
/// beside the store so `status` can show it after the restart.
enum LastStopRunDocument {
    /// The document's file name in the state directory.
    static let name = "last-stop-run.json"

    /// The summary kept by the last stop run, if there is a readable one.
    static func read(from store: SessionStore) -> JSONValue? {
        store.readDocument(name).flatMap { try? JSONDecoder().decode(JSONValue.self, from: Data($0)) }
    }

    /// Keeps `report`'s summary with the time it finished; a failure is journaled, not fatal.
    static func write(_ report: RunReport, to store: SessionStore, journal: any JournalSink) {
        guard case .object(var summary) = report.summaryJSON else { return }
        summary["finished_at_usec"] = .integer(Int64(clamping: wallClockMicroseconds()))
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            try store.writeDocument(name, Array(try encoder.encode(JSONValue.object(summary))))
        } catch {
            journal.record(
                JournalEntry(
                    .warning, "The stop run's summary was not saved: \(error)",
                    [JournalField(.event, "store-write-failed"), JournalField(.error, "\(error)")]))
        }
    }
}
