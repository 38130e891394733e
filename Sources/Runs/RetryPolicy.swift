import Vocabulary

/// Whether a call that failed in a retryable way (connect, DNS, timeout, 5xx, 429) tries again,
/// and when: exponential backoff from ``retryDelay`` (doubled per attempt made, the upper half
/// jittered), or the server's `Retry-After` if longer, while attempts are left and the budget
/// leaves a whole request's minimum after the wait. Pure: the jitter is the caller's.
struct RetryPolicy {
    /// What a call does after a retryable failure.
    enum Decision: Equatable {
        /// Try again after this wait.
        case retry(after: Duration)
        /// Stop trying: the call ends with its last failure.
        case giveUp
    }

    /// Requests per call at most.
    let maxAttempts: Int
    /// The first retry's backoff.
    let retryDelay: Duration

    /// The wait before the next request of a call that made `attempts` requests: half of
    /// `retryDelay × 2^(attempts − 1)` plus `jitter` (0…1) of the other half, or `notBefore`
    /// (the server's `Retry-After`) if that is longer.
    func delay(afterAttempts attempts: Int, notBefore: Duration?, jitter: Double) -> Duration {
        var delay = retryDelay * (1 << min(max(attempts - 1, 0), 16))
        delay = delay / 2 + delay / 2 * jitter
        if let notBefore, notBefore > delay { delay = notBefore }
        return delay
    }

    /// Whether a call that made `attempts` requests tries again in `budget`, and after how long.
    func decide(attempts: Int, notBefore: Duration?, jitter: Double, budget: StopBudget) -> Decision {
        let delay = delay(afterAttempts: attempts, notBefore: notBefore, jitter: jitter)
        let canRetry =
            attempts < maxAttempts && budget.expiry == nil && budget.timeRemaining - delay >= budget.minimumRequest
        return canRetry ? .retry(after: delay) : .giveUp
    }

    /// The outcome of a call that gives up, its last request having failed with `cause` (and
    /// HTTP `status` if the server answered): `rejected` when it answered. The number of
    /// attempts is the result's own field (`ATTEMPTS=`, the reports' ATTEMPTS column), never
    /// repeated in the cause: one form of it everywhere.
    static func outcomeOfGivingUp(cause: String, status: Int?) -> CallOutcome {
        status.map { .rejected(status: $0, reason: cause) } ?? .failed(cause: cause)
    }
}
