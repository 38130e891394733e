import Basics
import Endpoints
import EventLoop
import Journal
import Sessions
import Vocabulary

/// Where a run's outcomes go: every call's into the run's results (``RunResults``: the report,
/// and each session's result once its last call has one) and into its journal (``RunJournal``),
/// then the run's summary into both. Returns what the run's owner is to hear of; calls nothing
/// back.
struct OutcomeRecorder {
    /// The results so far.
    private(set) var results: RunResults
    /// The run's journal entries.
    let journal: RunJournal
    /// The run's sessions, by index: what a journal entry names.
    private let sessions: SessionList

    /// A recorder for run `id` of `kind` over `sessions`, in a budget of `budget`, journaling to
    /// `journal` (its batches timed by `loop`).
    init(
        id: RunID, kind: RunKind, sessions: SessionList, budget: Duration, journal: any JournalSink, loop: EventLoop
    ) {
        self.sessions = sessions
        self.journal = RunJournal(run: id, kind: kind, journal: journal, loop: loop)
        results = RunResults(sessions: sessions, report: RunReport(id: id, kind: kind, budget: budget))
    }

    /// The report so far.
    var report: RunReport { results.report }

    /// Whether the budget expired (``budgetExpired(_:budget:now:)``).
    var hasExpired: Bool { results.report.expiry != nil }

    /// Records the outcome of session `index`'s call to `endpoint` (of `template`, nil when not
    /// configured) in the results and the journal; returns the session's result when that was
    /// its last call.
    mutating func record(
        _ index: Int, _ endpoint: String, _ template: EndpointTemplate?, _ outcome: CallOutcome, attempts: Int,
        duration: Duration
    ) -> CleanupRun.SessionResult? {
        let sessionFinished = results.record(index, endpoint, outcome, attempts: attempts, duration: duration)
        journal.callFinished(
            session: sessions.id(at: index), label: sessions.label(at: index), endpoint: endpoint,
            url: template?.redactedURL, outcome: outcome, attempts: attempts, duration: duration)
        return sessionFinished
    }

    /// The budget expired for `reason` at `now`: the report says so, and the journal.
    mutating func budgetExpired(_ reason: RunExpiryReason, budget: StopBudget, now: MonotonicInstant) {
        results.report.expiry = reason
        journal.budgetExpired(
            reason, callsLeft: results.callsLeft, callsTotal: results.callsTotal, budget: budget.total,
            timeRemaining: max(.zero, budget.deadline.duration(since: now)))
    }

    /// Every call has its outcome: the run took `duration`. Journals the summary; returns the
    /// finished report, with the journal's counts.
    mutating func summarise(duration: Duration, origins: [OriginReport] = []) -> RunReport {
        results.report.duration = duration
        results.report.origins = origins
        journal.summarise(results.report)
        results.report.journalEntries = journal.entriesWritten
        results.report.journalDropped = journal.entriesDropped
        return results.report
    }

    /// `Ending sessions: 812/1000 ended, 3 failed, 6.2 s left`, with `timeRemaining` left.
    func progressText(timeRemaining: Duration) -> String {
        "Ending sessions: \(results.report.sessionsEnded)/\(sessions.count) ended, \(results.callsNotEnded) failed, "
            + "\(timeRemaining.humanReadable) left"
    }
}
