import Basics
import Journal
import Sessions

extension StoreEvent {
    /// The journal entry that tells an operator about this event.
    var journalEntry: JournalEntry {
        switch self {
        case .commitFailed(let error, let recovering):
            JournalEntry(
                .storeWriteFailed,
                "Session store not saved: \(error)"
                    + (recovering ? "; rewriting it from memory before the next commit" : ""),
                [JournalField(.error, error.description)])
        case .recovered(let sessions, let recreated):
            JournalEntry(
                .storeRecovered,
                "Session store rewritten from memory with \(HumanText.count(sessions, "session"))"
                    + (recreated ? " into a state directory made again (it had been deleted)" : "")
                    + "; changes are saved again",
                [JournalField(.sessionsTotal, sessions)])
        case .recoveryFailed(let error):
            JournalEntry(
                .storeWriteFailed,
                "Session store could not be rewritten: \(error); registrations are refused until it can be "
                    + "(tried again at the next change)",
                [JournalField(.error, error.description)])
        case .compactionFailed(let error):
            JournalEntry(
                .storeCompactionFailed, "Session store compaction failed (tried again later): \(error)",
                [JournalField(.error, error.description)])
        case .compacted(let sessions, let bytes, let microseconds):
            JournalEntry(
                .storeCompacted,
                "Session store compacted: \(HumanText.count(sessions, "session")), \(bytes) bytes in \(microseconds / 1000) ms",
                [
                    JournalField(.sessionsTotal, sessions),
                    JournalField(.durationUsec, microseconds),
                ])
        }
    }
}
