import Vocabulary

/// What the metrics file says of one finished run: its calls' outcomes by endpoint and its
/// timing. Counts only: no session id, key, label or URL.
package struct RunMetrics: Sendable, Equatable {
    /// `stop`, `leftover`, `on-demand`.
    package var kind: String
    /// Calls by endpoint name, then by outcome word (`ended`, `failed`, …).
    package var outcomes: [String: [String: Int]]
    /// How long the run took.
    package var duration: Duration
    /// Its budget.
    package var budget: Duration
    /// Whether the journal took every entry of the run.
    package var journalComplete: Bool
    /// When it finished, in microseconds since the epoch.
    package var finishedAt: UInt64

    /// Creates the figures explicitly.
    package init(
        kind: String, outcomes: [String: [String: Int]], duration: Duration, budget: Duration,
        journalComplete: Bool, finishedAt: UInt64
    ) {
        self.kind = kind
        self.outcomes = outcomes
        self.duration = duration
        self.budget = budget
        self.journalComplete = journalComplete
        self.finishedAt = finishedAt
    }

    /// The figures of `report`, which finished at `finishedAt` with `journalDropped` entries lost.
    package init(_ report: RunReport, finishedAt: UInt64, journalDropped: Int) {
        self.init(
            kind: report.kind.rawValue, outcomes: report.callCountsByEndpoint, duration: report.duration,
            budget: report.budget, journalComplete: journalDropped == 0, finishedAt: finishedAt)
    }
}
