import Basics

/// What is kept of a finished run for `session-cleanup report`: its facts, every call's result
/// (up to ``maxResults``) and how the journal fared. No keys: results name sessions by id.
package struct RunRecord: Sendable, Equatable {
    /// Results kept at most (about 30 MB in the state directory); beyond it, results of ended
    /// calls are left out first, and ``resultsOmitted`` says how many.
    package static let maxResults = 250_000

    /// The run's id.
    package var id: RunID
    /// `stop`, `leftover`, `on-demand` or `sleep`.
    package var kind: String
    /// When the run began and finished: microseconds since the Unix epoch.
    package var startedAt: UInt64
    /// When it finished.
    package var finishedAt: UInt64
    /// The budget it ran in.
    package var budget: Duration
    /// How long it took.
    package var duration: Duration
    /// Why the budget expired (`deadline`, `second-signal`), if it did.
    package var expiry: String?
    /// Sessions in the run, ended at every endpoint, and kept.
    package var sessionsTotal: Int
    /// Sessions ended at every endpoint.
    package var sessionsEnded: Int
    /// Sessions kept for a later attempt.
    package var sessionsLeft: Int
    /// Calls per outcome word, over every call (kept or omitted).
    package var callCounts: [String: Int]
    /// Call entries the journal took for the run.
    package var journalEntries: Int
    /// Entries of the run the journal could not take (the journal was not keeping up).
    package var journalDropped: Int
    /// Every call's result, unless there were more than ``maxResults``.
    package var results: [RunReport.CallResult]
    /// Results left out to keep the record bounded.
    package var resultsOmitted: Int
    /// The origins whose calls had an adaptive limit (``RunReport/origins``).
    package var origins: [OriginReport] = []

    /// The record of `report`, finished at `finishedAt`, with `journalDropped` entries lost
    /// (including any lost after the run's summary was written).
    package init(_ report: RunReport, finishedAt: UInt64 = wallClockMicroseconds(), journalDropped: Int? = nil) {
        id = report.id
        kind = report.kind.rawValue
        startedAt = report.startedAt
        self.finishedAt = finishedAt
        budget = report.budget
        duration = report.duration
        expiry = report.expiry?.rawValue
        sessionsTotal = report.sessionsTotal
        sessionsEnded = report.sessionsEnded
        sessionsLeft = report.sessionsLeft
        callCounts = report.callCounts
        journalEntries = report.journalEntries
        self.journalDropped = journalDropped ?? report.journalDropped
        (results, resultsOmitted) = Self.bounded(report.calls)
        origins = report.origins
    }

    /// A record read back from the state directory.
    package init(
        id: RunID, kind: String, startedAt: UInt64, finishedAt: UInt64, budget: Duration, duration: Duration,
        expiry: String?, sessionsTotal: Int, sessionsEnded: Int, sessionsLeft: Int, callCounts: [String: Int],
        journalEntries: Int, journalDropped: Int, results: [RunReport.CallResult], resultsOmitted: Int
    ) {
        self.id = id
        self.kind = kind
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.budget = budget
        self.duration = duration
        self.expiry = expiry
        self.sessionsTotal = sessionsTotal
        self.sessionsEnded = sessionsEnded
        self.sessionsLeft = sessionsLeft
        self.callCounts = callCounts
        self.journalEntries = journalEntries
        self.journalDropped = journalDropped
        self.results = results
        self.resultsOmitted = resultsOmitted
    }

    /// Calls made, whatever their outcome.
    package var callsTotal: Int { callCounts.values.reduce(0, +) }

    /// At most ``maxResults`` results: every call that did not end its session first.
    static func bounded(_ calls: [RunReport.CallResult]) -> ([RunReport.CallResult], Int) {
        guard calls.count > maxResults else { return (calls, 0) }
        var kept = calls.filter { !$0.outcome.isEnded }
        if kept.count > maxResults { kept.removeLast(kept.count - maxResults) }
        let room = maxResults - kept.count
        kept += calls.lazy.filter(\.outcome.isEnded).prefix(room)
        return (kept, calls.count - kept.count)
    }
}
