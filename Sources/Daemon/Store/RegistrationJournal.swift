import Basics
import EventLoop
import Journal
import Sessions

/// Registrations as the journal sees them: one debug entry per registration or unregistration
/// (findable with `journalctl SESSION_ID=…`, and in journald's debug pool, which nothing else
/// uses), plus at most one `registrations` summary at info per ``summaryInterval`` — so that a
/// busy day never uses up the unit's rate limit before the stop run.
final class RegistrationJournal {
    /// The longest time between a registration and the summary that counts it.
    static let summaryInterval: Duration = .seconds(60)

    private let journal: any JournalSink
    private let loop: EventLoop
    private let sessionsHeld: () -> Int
    private var registeredCount = 0
    private var unregisteredCount = 0
    private var summaryTimer: EventLoop.TimerID?

    /// `sessionsHeld` gives the number of sessions in the store, for the summary.
    init(journal: any JournalSink, loop: EventLoop, sessionsHeld: @escaping () -> Int) {
        self.journal = journal
        self.loop = loop
        self.sessionsHeld = sessionsHeld
    }

    /// A session was registered.
    func registered(_ session: Session) {
        var fields = [
            JournalField(.sessionID, session.id), JournalField(.ownerUID, session.ownerUID),
            JournalField(.endpoint, session.endpoints.joined(separator: " ")),
        ]
        if let label = session.label { fields.append(JournalField(.sessionLabel, label)) }
        journal.record(JournalEntry(.registered, "Session \(session.id) registered by uid \(session.ownerUID)", fields))
        registeredCount += 1
        scheduleSummary()
    }

    /// A session was forgotten without being ended, at `uid`'s request.
    func unregistered(_ session: Session, by uid: UInt32) {
        journal.record(
            JournalEntry(
                .unregistered, "Session \(session.id) unregistered by uid \(uid) without being ended",
                [JournalField(.sessionID, session.id), JournalField(.peerUID, uid)]))
        unregisteredCount += 1
        scheduleSummary()
    }

    /// Writes the summary now if anything happened since the last one (the stop run calls this
    /// first, so its counts are complete).
    func summarise() {
        if let summaryTimer { loop.cancel(summaryTimer) }
        summaryTimer = nil
        guard registeredCount > 0 || unregisteredCount > 0 else { return }
        journal.record(
            JournalEntry(
                .registrations,
                "\(HumanText.count(registeredCount, "session")) registered, \(unregisteredCount) unregistered; \(sessionsHeld()) held",
                [
                    JournalField(.sessionsRegistered, registeredCount),
                    JournalField(.sessionsUnregistered, unregisteredCount),
                    JournalField(.sessionsTotal, sessionsHeld()),
                ]))
        registeredCount = 0
        unregisteredCount = 0
    }

    private func scheduleSummary() {
        guard summaryTimer == nil else { return }
        summaryTimer = loop.schedule(after: Self.summaryInterval) { [weak self] in
            self?.summaryTimer = nil
            self?.summarise()
        }
    }
}
