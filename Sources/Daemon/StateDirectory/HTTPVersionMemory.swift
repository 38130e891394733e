import Journal
import Sessions
import Vocabulary

/// What the daemon remembers of its HTTPS origins' HTTP versions across runs and restarts: the
/// state directory's ``HTTPVersionDocument``, read once (with the first engine) and written after
/// a run whose replies told something it does not hold yet.
final class HTTPVersionMemory {
    private let store: SessionStore
    private let journal: any JournalSink
    /// The record as the state directory holds it (nil: not read yet).
    private var document: HTTPVersionDocument?

    init(store: SessionStore, journal: any JournalSink) {
        self.store = store
        self.journal = journal
    }

    /// The origins that answered in HTTP/1.1 last (for ``HTTPEngine/knownHTTP1Origins``).
    var http1Origins: Set<HTTPOrigin> { record().http1Origins }

    /// Keeps what an engine's replies told (``HTTPEngine/versionsSeen``), when the state directory
    /// does not hold it yet. A failure is journaled; the next run's end tries again.
    func remember(_ told: [HTTPOrigin: Bool]) {
        let current = record()
        guard !current.holds(told) else { return }
        let merged = current.merging(told)
        do {
            try store.writeDocument(HTTPVersionDocument.name, merged.encoded)
            document = merged
        } catch {
            journal.record(
                JournalEntry(
                    .storeWriteFailed,
                    "The HTTP versions learned were not saved (the next run probes HTTPS servers again): \(error)",
                    [JournalField(.error, "\(error)")], priority: .warning))
        }
    }

    /// The record, read at the first use: an empty one when there is none, or when it is damaged
    /// (journaled, and replaced by the next run that learns a version).
    private func record() -> HTTPVersionDocument {
        if let document { return document }
        var read = HTTPVersionDocument()
        if let bytes = store.readDocument(HTTPVersionDocument.name, limit: HTTPVersionDocument.maximumBytes + 1) {
            do {
                read = try HTTPVersionDocument(decoding: bytes)
            } catch {
                journal.record(
                    JournalEntry(
                        .httpVersionsIgnored,
                        "Remembered HTTP versions ignored (\(HTTPVersionDocument.name), \(error))",
                        [JournalField(.storeFile, HTTPVersionDocument.name), JournalField(.error, error.description)]))
            }
        }
        document = read
        return read
    }
}
