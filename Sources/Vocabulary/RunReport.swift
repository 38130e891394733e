import Basics
import Sessions

/// The result of one run of end-session calls: every call's outcome, per session, and the counts.
package struct RunReport: Sendable {
    /// One call's result. Kept for every call of a run (the `report` verb shows them), so it is
    /// stored compactly: 24 bytes a result (it was 72, then 32), the endpoint, the outcome and
    /// the requests made in a ``Shape`` that the results with the same ones share
    /// (``CallShapes``), the duration in whole microseconds.
    package struct CallResult: Sendable, Equatable {
        /// An endpoint's name, an outcome and a number of requests, shared by the results that
        /// have all three (a run's calls mostly end alike, after one request).
        package final class Shape: Sendable {
            let endpoint: String
            let outcome: CallOutcome
            let attempts: UInt32

            package init(_ endpoint: String, _ outcome: CallOutcome, attempts: Int) {
                self.endpoint = endpoint
                self.outcome = outcome
                self.attempts = UInt32(clamping: attempts)
            }
        }

        /// The session.
        package let sessionID: SessionID
        fileprivate let shape: Shape
        /// The uid that registered the session (who may see this result).
        package let ownerUID: UInt32
        /// A call lasts at most the budget (30 minutes at most, 1.8 × 10⁹ µs), which fits; a
        /// longer duration is clamped to 71 minutes.
        private let microseconds: UInt32

        /// The endpoint's name.
        package var endpoint: String { shape.endpoint }
        /// What became of the call.
        package var outcome: CallOutcome { shape.outcome }
        /// Requests made (0 when it never started).
        package var attempts: Int { Int(shape.attempts) }
        /// From the first request's start to the outcome (zero if never started), in whole
        /// microseconds (what the results file and `report` show).
        package var duration: Duration { .microseconds(microseconds) }
        /// The same as a number, without going through `Duration`: the results file writes one
        /// per call.
        package var durationMicroseconds: Int64 { Int64(microseconds) }

        /// Creates a result.
        package init(
            sessionID: SessionID, ownerUID: UInt32, endpoint: String, outcome: CallOutcome, attempts: Int,
            duration: Duration
        ) {
            self.init(
                sessionID: sessionID, ownerUID: ownerUID, shape: Shape(endpoint, outcome, attempts: attempts),
                duration: duration)
        }

        /// Creates a result whose endpoint, outcome and requests made are `shape`'s.
        package init(sessionID: SessionID, ownerUID: UInt32, shape: Shape, duration: Duration) {
            self.sessionID = sessionID
            self.ownerUID = ownerUID
            self.shape = shape
            // Whole microseconds, cut toward zero; negative is zero.
            microseconds = UInt32(clamping: duration.microseconds)
        }

        /// Equal fields; whether the shape is shared does not matter.
        package static func == (a: CallResult, b: CallResult) -> Bool {
            a.sessionID == b.sessionID && a.ownerUID == b.ownerUID && a.microseconds == b.microseconds
                && (a.shape === b.shape
                    || (a.shape.attempts == b.shape.attempts && a.shape.endpoint == b.shape.endpoint
                        && a.shape.outcome == b.shape.outcome))
        }
    }

    /// The run's id (`SESSION_CLEANUP_RUN_ID=`).
    package let id: RunID
    /// Which kind of run this was.
    package let kind: RunKind
    /// The budget it ran in.
    package let budget: Duration
    /// When it began: microseconds since the Unix epoch.
    package let startedAt: UInt64
    /// Every call, in the order they finished.
    package var calls: [CallResult] = []
    /// Sessions ended at every endpoint.
    package var sessionsEnded = 0
    /// Sessions with at least one endpoint not ended.
    package var sessionsLeft = 0
    /// How long the run took.
    package var duration: Duration = .zero
    /// Why the budget expired, if it did.
    package var expiry: RunExpiryReason?
    /// Call entries (`call-finished`, `calls-ended`) the journal took for this run.
    package var journalEntries = 0
    /// Entries the journal could not take while the run went on (it was not keeping up).
    package var journalDropped = 0
    /// The origins whose calls had an adaptive limit: its course and why it was cut.
    package var origins: [OriginReport] = []

    /// An empty report for a run beginning now.
    package init(id: RunID, kind: RunKind, budget: Duration, startedAt: UInt64 = wallClockMicroseconds()) {
        self.id = id
        self.kind = kind
        self.budget = budget
        self.startedAt = startedAt
    }

    /// Calls per outcome word (`ended`, `rejected`, `failed`, `unconfirmed`, `expired`,
    /// `not-started`).
    package var callCounts: [String: Int] {
        // Counted by case, then named: no string hashed per call.
        var ended = 0
        var rejected = 0
        var failed = 0
        var unconfirmed = 0
        var expired = 0
        var notStarted = 0
        for call in calls {
            switch call.outcome {
            case .ended: ended += 1
            case .rejected: rejected += 1
            case .failed: failed += 1
            case .unconfirmed: unconfirmed += 1
            case .expired: expired += 1
            case .notStarted: notStarted += 1
            }
        }
        let named: [(CallOutcome, Int)] = [
            (.ended(status: 0), ended), (.rejected(status: 0, reason: ""), rejected), (.failed(cause: ""), failed),
            (.unconfirmed(cause: ""), unconfirmed), (.expired, expired), (.notStarted(reason: ""), notStarted),
        ]
        var counts: [String: Int] = [:]
        for (outcome, count) in named where count > 0 { counts[outcome.word] = count }
        return counts
    }

    /// Calls by endpoint name, then by outcome word: what the metrics file counts of a run.
    package var callCountsByEndpoint: [String: [String: Int]] {
        // Counted by shape first, a run of results with the same one at a time (a run's results
        // share a few): no string hashed per call.
        var byShape: [ObjectIdentifier: (shape: CallResult.Shape, count: Int)] = [:]
        var start = calls.startIndex
        while start < calls.endIndex {
            let shape = calls[start].shape
            var end = start + 1
            while end < calls.endIndex, calls[end].shape === shape { end += 1 }
            byShape[ObjectIdentifier(shape), default: (shape, 0)].count += end - start
            start = end
        }
        var counts: [String: [String: Int]] = [:]
        for (shape, count) in byShape.values {
            counts[shape.endpoint, default: [:]][shape.outcome.word, default: 0] += count
        }
        return counts
    }

    /// Sessions in the run.
    package var sessionsTotal: Int { sessionsEnded + sessionsLeft }

    /// Adds what `other` did to `sessions`: their calls, and each counted ended (every call
    /// ended) or left. The duration is the longer one; an expiry of either is kept.
    package mutating func merge(_ other: RunReport, sessions: Set<SessionID>) {
        let taken = other.calls.filter { sessions.contains($0.sessionID) }
        calls += taken
        var allEnded: [SessionID: Bool] = [:]
        for call in taken { allEnded[call.sessionID] = (allEnded[call.sessionID] ?? true) && call.outcome.isEnded }
        sessionsEnded += allEnded.values.count { $0 }
        sessionsLeft += allEnded.values.count { !$0 }
        duration = max(duration, other.duration)
        expiry = expiry ?? other.expiry
    }
}
