import EventLoop
import Sessions

/// The result of one run of end-session calls: every call's outcome, per session, and the counts.
public struct RunReport: Sendable {
    /// One call's result. Kept for every call of a run (the `report` verb shows them), so it is
    /// stored compactly: 32 bytes a result (it was 72), the endpoint and the outcome in a
    /// ``Shape`` that the results with the same ones share (``CallShapes``).
    public struct CallResult: Sendable, Equatable {
        /// An endpoint's name and an outcome, shared by the results that have both.
        final class Shape: Sendable {
            let endpoint: String
            let outcome: CallOutcome

            init(_ endpoint: String, _ outcome: CallOutcome) {
                self.endpoint = endpoint
                self.outcome = outcome
            }
        }

        /// The session.
        public let sessionID: SessionID
        private let nanoseconds: Int64
        private let shape: Shape
        /// The uid that registered the session (who may see this result).
        public let ownerUID: UInt32
        private let attemptCount: UInt32

        /// The endpoint's name.
        public var endpoint: String { shape.endpoint }
        /// What became of the call.
        public var outcome: CallOutcome { shape.outcome }
        /// Requests made (0 when it never started).
        public var attempts: Int { Int(attemptCount) }
        /// From the first request's start to the outcome (zero if never started), to the nanosecond.
        public var duration: Duration { .nanoseconds(nanoseconds) }
        /// The same in whole microseconds, cut toward zero as `Duration.microseconds` cuts, without
        /// going through `Duration`: the results file writes one per call.
        var durationMicroseconds: Int64 { nanoseconds / 1000 }

        /// Creates a result.
        public init(
            sessionID: SessionID, ownerUID: UInt32, endpoint: String, outcome: CallOutcome, attempts: Int,
            duration: Duration
        ) {
            self.init(
                sessionID: sessionID, ownerUID: ownerUID, shape: Shape(endpoint, outcome), attempts: attempts,
                duration: duration)
        }

        /// Creates a result whose endpoint and outcome are `shape`'s.
        init(sessionID: SessionID, ownerUID: UInt32, shape: Shape, attempts: Int, duration: Duration) {
            self.sessionID = sessionID
            self.ownerUID = ownerUID
            self.shape = shape
            attemptCount = UInt32(clamping: attempts)
            let (seconds, attoseconds) = duration.components
            // ±292 years fit; anything longer is clamped.
            let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
            nanoseconds = overflow ? (seconds < 0 ? .min : .max) : whole &+ attoseconds / 1_000_000_000
        }

        /// Equal fields; whether the shape is shared does not matter.
        public static func == (a: CallResult, b: CallResult) -> Bool {
            a.sessionID == b.sessionID && a.ownerUID == b.ownerUID && a.attemptCount == b.attemptCount
                && a.nanoseconds == b.nanoseconds
                && (a.shape === b.shape || (a.shape.endpoint == b.shape.endpoint && a.shape.outcome == b.shape.outcome))
        }
    }

    /// The run's id (`SESSION_CLEANUP_RUN_ID=`).
    public let id: RunID
    /// Which kind of run this was.
    public let kind: CleanupRun.Kind
    /// The budget it ran in.
    public let budget: Duration
    /// When it began: microseconds since the Unix epoch.
    public let startedAt: UInt64
    /// Every call, in the order they finished.
    public internal(set) var calls: [CallResult] = []
    /// Sessions ended at every endpoint.
    public internal(set) var sessionsEnded = 0
    /// Sessions with at least one endpoint not ended.
    public internal(set) var sessionsLeft = 0
    /// How long the run took.
    public internal(set) var duration: Duration = .zero
    /// Why the budget expired, if it did.
    public internal(set) var expiry: StopBudget.ExpiryReason?
    /// Call entries (`call-finished`, `calls-ended`) the journal took for this run.
    public internal(set) var journalEntries = 0
    /// Entries the journal could not take while the run went on (it was not keeping up).
    public internal(set) var journalDropped = 0

    /// An empty report for a run beginning now.
    public init(id: RunID, kind: CleanupRun.Kind, budget: Duration, startedAt: UInt64 = wallClockMicroseconds()) {
        self.id = id
        self.kind = kind
        self.budget = budget
        self.startedAt = startedAt
    }

    /// Calls per outcome word (`ended`, `rejected`, `failed`, `expired`, `not-started`).
    public var callCounts: [String: Int] {
        // Counted by case, then named: no string hashed per call.
        var ended = 0
        var rejected = 0
        var failed = 0
        var expired = 0
        var notStarted = 0
        for call in calls {
            switch call.outcome {
            case .ended: ended += 1
            case .rejected: rejected += 1
            case .failed: failed += 1
            case .expired: expired += 1
            case .notStarted: notStarted += 1
            }
        }
        let named: [(CallOutcome, Int)] = [
            (.ended(status: 0), ended), (.rejected(status: 0, reason: ""), rejected), (.failed(cause: ""), failed),
            (.expired, expired), (.notStarted(reason: ""), notStarted),
        ]
        var counts: [String: Int] = [:]
        for (outcome, count) in named where count > 0 { counts[outcome.word] = count }
        return counts
    }

    /// Sessions in the run.
    public var sessionsTotal: Int { sessionsEnded + sessionsLeft }

    /// Adds what `other` did to `sessions`: their calls, and each counted ended (every call
    /// ended) or left. The duration is the longer one; an expiry of either is kept.
    mutating func merge(_ other: RunReport, sessions: Set<SessionID>) {
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
