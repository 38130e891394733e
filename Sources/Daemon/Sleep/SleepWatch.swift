import Basics
import EventLoop
import Glibc
import Journal
import Systemd

/// `[Sleep] EndSessions=yes`: holds logind's delay lock for sleep and, when the machine is about
/// to sleep, has every session ended before letting it go; the laptop's counterpart of an app's
/// background task. The decisions are ``SleepLockState``'s; this carries them out on the loop:
/// the connection to logind, the lock's descriptor, the journal, the runs (through the closures
/// the daemon sets).
///
/// Retries: sessions the sleep run could not end stay registered; a leftover run retries them
/// ``resumeRetryDelay`` after the resume (the network needs a moment to come back), and the stop
/// run ends them in any case.
final class SleepWatch {
    /// How `systemd-inhibit --list` names the lock's holder.
    static let who = "session-cleanup"
    /// Why, as `systemd-inhibit --list` shows it.
    static let why = "Ending registered sessions before sleep"
    /// How long the store may take to make the sleep run's results durable before the lock goes
    /// (within the budget's margin).
    static let storeFlushLimit: Duration = .milliseconds(500)
    /// How long after the resume the leftover run begins.
    static let resumeRetryDelay: Duration = .seconds(5)

    /// Begins the sleep run within the budget; calls the closure it is given once the run finished
    /// (at once if there was nothing to end).
    var beginSleepRun: (Duration, @escaping () -> Void) -> Void = { _, finished in finished() }
    /// Begins a leftover run of what an earlier run could not end.
    var retryLeftovers: () -> Void = {}

    private let loop: EventLoop
    private let journal: any JournalSink
    /// Sessions registered now, and those an earlier run could not end.
    private let sessionCounts: () -> (total: Int, left: Int)
    /// The system bus's address (nil: the default, `$DBUS_SYSTEM_BUS_ADDRESS` or the socket).
    private let busAddress: String?
    private var state = SleepLockState()
    private var connection: LoginConnection?
    private var retryTimer: EventLoop.TimerID?
    /// Why the lock could not be taken, the last time.
    private var lastFailure: String?
    /// The lock is being taken again after a resume (journaled as the resume, not again as taken).
    private var retakingAfterResume = false

    init(
        loop: EventLoop, journal: any JournalSink, busAddress: String? = nil,
        sessionCounts: @escaping () -> (total: Int, left: Int)
    ) {
        self.loop = loop
        self.journal = journal
        self.busAddress = busAddress
        self.sessionCounts = sessionCounts
    }

    /// Where the lock is, for `status` (nil: `EndSessions=no`): `held`, `ending sessions before
    /// sleep`, … or `not held: ` and logind's answer.
    var statusText: String? {
        switch state.phase {
        case .off: return nil
        case .taking: return "being taken"
        case .held: return "held"
        case .ending: return "ending sessions before sleep"
        case .asleep: return "released for sleep"
        case .unavailable: return "not held: " + (lastFailure ?? "logind did not grant it")
        }
    }

    /// Applies `[Sleep] EndSessions=` (at start and after each reload): takes or drops the lock.
    func configure(endSessions: Bool) {
        retakingAfterResume = false
        perform(state.setEnabled(endSessions))
    }

    /// The daemon began stopping or handing over: its stop run (or the next daemon) has the
    /// sessions; the lock and the connection go.
    func daemonStopping() {
        if let retryTimer { loop.cancel(retryTimer) }
        retryTimer = nil
        perform(state.daemonStopping())
    }

    private func handle(_ event: LoginEvent) {
        switch event {
        case .prepareForSleep(let sleeping):
            perform(state.prepareForSleep(sleeping))
        case .inhibited(let fd):
            perform(state.lockTaken(fd: fd))
            guard case .held = state.phase else { return }
            if retakingAfterResume {
                retakingAfterResume = false
                return
            }
            let budget = SleepLockState.budget(delayMax: state.delayMax)
            journal.record(
                JournalEntry(
                    .sleepLockTaken,
                    "Holding a sleep delay lock: sessions are ended before the machine sleeps, within \(budget.humanReadable)",
                    [JournalField(.budgetUsec, budget.microseconds)]))
        case .delayMax(let delay):
            state.delayMax = delay
        case .delayMaxFailed:
            break  // logind's default (5 s) is assumed; the lock itself says whether logind answers
        case .inhibitFailed(let text), .subscribeFailed(let text), .disconnected(let text):
            lockUnavailable(text)
        }
    }

    private func lockUnavailable(_ cause: String) {
        guard state.phase != .off, state.phase != .unavailable else { return }
        lastFailure = cause
        journal.record(
            JournalEntry(
                .sleepLockFailed, "Cannot hold the sleep lock, sessions are not ended before sleep: \(cause)",
                [JournalField(.error, cause)]))
        perform(state.lockUnavailable())
    }

    private func perform(_ actions: [SleepLockState.Action]) {
        for action in actions {
            switch action {
            case .take: take()
            case .disconnect:
                connection?.close()
                connection = nil
            case .release(let fd):
                close(fd)
            case .beginSleepRun(let budget): beginSleep(budget)
            case .retryLeftovers: resumed()
            }
        }
    }

    /// Connects if need be; asks for the delay first, so it is known when the lock is granted.
    private func take() {
        do {
            if connection?.isOpen != true {
                connection = try LoginConnection(loop: loop, address: busAddress) { [weak self] event in
                    self?.handle(event)
                }
            }
            try connection?.askDelayMax()
            try connection?.inhibitSleep(who: Self.who, why: Self.why)
        } catch {
            lockUnavailable("\(error)")
        }
    }

    private func beginSleep(_ budget: Duration) {
        let counts = sessionCounts()
        journal.record(
            JournalEntry(
                .sleeping,
                "The machine is about to sleep: ending \(HumanText.count(counts.total, "session")) "
                    + "within \(budget.humanReadable), then releasing the sleep lock",
                [JournalField(.sessionsTotal, counts.total), JournalField(.budgetUsec, budget.microseconds)]))
        beginSleepRun(budget) { [weak self] in
            guard let self else { return }
            self.perform(self.state.sleepRunFinished())
        }
    }

    private func resumed() {
        retakingAfterResume = state.phase == .taking
        let left = sessionCounts().left
        journal.record(
            JournalEntry(
                .resumed,
                left == 0
                    ? "The machine resumed: taking the sleep lock again"
                    : "The machine resumed: taking the sleep lock again; \(HumanText.count(left, "session")) "
                        + "the sleep run could not end are retried in \(Self.resumeRetryDelay.humanReadable)",
                [JournalField(.sessionsLeft, left)]))
        // Also when none is left yet: a sleep run the delay cut short may still be finishing.
        if let retryTimer { loop.cancel(retryTimer) }
        retryTimer = loop.schedule(after: Self.resumeRetryDelay) { [weak self] in
            self?.retryTimer = nil
            self?.retryLeftovers()
        }
    }
}
