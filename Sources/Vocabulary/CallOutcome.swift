/// What became of one session × endpoint call. Every call ends with exactly one.
package enum CallOutcome: Sendable, Equatable {
    /// The session is ended at this endpoint (the server said so, or said it was already gone).
    case ended(status: Int)
    /// The server answered, but not with success; `reason` says how.
    case rejected(status: Int, reason: String)
    /// No usable answer (connection, DNS, TLS, timeout); `cause` names it.
    case failed(cause: String)
    /// The request was written, but no answer came: it timed out, the connection dropped, or
    /// the budget ran out while the server had it. The server may have ended the session; the
    /// session is kept, and the next start's leftover run checks these calls first.
    case unconfirmed(cause: String)
    /// The budget ran out before the call's request was written (waiting for a connection,
    /// a retry, or its turn after a failed attempt).
    case expired
    /// The call never started: too little budget was left, or its host was known unreachable.
    case notStarted(reason: String)

    /// The word journal entries and the store use: ended, rejected, failed, unconfirmed,
    /// expired, not-started.
    package var word: String {
        switch self {
        case .ended: return "ended"
        case .rejected: return "rejected"
        case .failed: return "failed"
        case .unconfirmed: return "unconfirmed"
        case .expired: return "expired"
        case .notStarted: return "not-started"
        }
    }

    /// Whether the session is ended at this endpoint.
    package var isEnded: Bool {
        if case .ended = self { return true }
        return false
    }

    /// The HTTP status, when the server answered.
    package var httpStatus: Int? {
        switch self {
        case .ended(let status), .rejected(let status, _): return status
        default: return nil
        }
    }

    /// The cause, for everything but `ended`.
    package var cause: String? {
        switch self {
        case .ended: return nil
        case .rejected(_, let reason): return reason
        case .failed(let cause): return cause
        case .unconfirmed(let cause): return cause
        case .expired: return "the budget ran out"
        case .notStarted(let reason): return reason
        }
    }
}
