import EventLoop
import Journal

/// Keeps entries in memory: for tests, each with its own instance. With a `bulkCapacity`, bulk
/// entries (per-call outcomes, registrations) beyond it are dropped and counted, as the real
/// journal's queue does when journald falls behind; lifecycle entries always have room.
package final class MemoryJournal: JournalSink {
    /// Everything recorded, in order.
    package private(set) var entries: [JournalEntry] = []
    /// Entries refused because `bulkCapacity` was reached.
    package private(set) var droppedEntries = 0
    /// How many bulk entries it keeps at most (nil: no limit).
    package var bulkCapacity: Int?
    private var bulkEntries = 0

    /// Creates an empty journal.
    package init(bulkCapacity: Int? = nil) { self.bulkCapacity = bulkCapacity }

    /// Appends `entry`, unless it is a bulk entry and `bulkCapacity` is reached.
    @discardableResult
    package func record(_ entry: JournalEntry) -> Bool {
        if entry.event.isBulk {
            if let bulkCapacity, bulkEntries >= bulkCapacity {
                droppedEntries += 1
                return false
            }
            bulkEntries += 1
        }
        entries.append(entry)
        return true
    }

    /// Nothing waits in memory: returns 0.
    @discardableResult
    package func flush(until deadline: MonotonicInstant) -> Int { 0 }

    /// Entries whose event is called `event`.
    package func entries(event: String) -> [JournalEntry] {
        entries.filter { $0.event.name == event }
    }
}
