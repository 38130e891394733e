import Basics
import EventLoop
import Journal
import Sessions

/// The store's events on their way to the journal, with its write failures coalesced: the first
/// failure is journaled at once, then at most one entry per ``interval`` saying how many followed
/// (`FAILURES=`) and the last one's cause. A disk that refuses every commit while registrations
/// flow would otherwise write an `err` entry per commit — tens of thousands a second.
final class StoreFailureJournal {
    /// The shortest time between two failure entries.
    static let interval: Duration = .seconds(10)

    private let journal: any JournalSink
    private let loop: EventLoop
    /// Whether a failure was journaled less than ``interval`` ago (a timer then ends the window).
    private var windowOpen = false
    /// Failures since the window opened, not journaled yet, and the last one's cause.
    private var pending = 0
    private var lastCause = ""

    /// Journals into `journal`, timing the windows on `loop`.
    init(journal: any JournalSink, loop: EventLoop) {
        self.journal = journal
        self.loop = loop
    }

    /// Journals `event`, coalescing it when it is a write failure.
    func record(_ event: StoreEvent) {
        var cause: StoreError?
        if case .commitFailed(let error, _) = event { cause = error }
        if case .recoveryFailed(let error) = event { cause = error }
        guard let cause else {
            journal.record(event.journalEntry)
            return
        }
        guard windowOpen else {
            journal.record(event.journalEntry)
            openWindow()
            return
        }
        pending += 1
        lastCause = cause.description
    }

    /// Journals the failures not journaled yet (at the stop, before exit).
    func flush() {
        guard pending > 0 else { return }
        journal.record(
            JournalEntry(
                .storeWriteFailed,
                "Session store not saved \(HumanText.count(pending, "more time")) in the last "
                    + "\(Self.interval.humanReadable) (coalesced); the last cause: \(lastCause)",
                [JournalField(.error, lastCause), JournalField(.failures, pending)]))
        pending = 0
    }

    private func openWindow() {
        windowOpen = true
        _ = loop.schedule(after: Self.interval) { [weak self] in
            guard let self else { return }
            if self.pending > 0 {
                self.flush()
                self.openWindow()
            } else {
                self.windowOpen = false
            }
        }
    }
}
