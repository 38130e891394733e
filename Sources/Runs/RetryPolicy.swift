import Vocabulary

/// Whether a call that failed in a retryable way tries again, and when: exponential backoff
/// from ``retryDelay`` (doubled per attempt made, the upper half jittered), or the server's
/// `Retry-After` if longer, while attempts are left and the budget leaves a whole request's
/// minimum after the wait. Pure: the jitter is the caller's.
///
/// No blind re-sends: only a request the server cannot have acted on is sent again — one never
/// written (connection refused or timed out, DNS, a transfer that waited for a connection), or
/// one the server answered with a retryable status (5xx, 429, 408, with its `Retry-After`). A
/// request written and then not answered (a timeout, a dropped connection, the budget's end)
/// may be in the server's hands: it is not sent again in the same run — the server would
/// spend its work twice, and a slow server is usually a busy one — but is `unconfirmed`, kept,
/// and checked first by the next start's leftover run (``unanswered(_:requestSent:)``).
/// HTTP/2 streams a server refused (`REFUSED_STREAM`, and those above a `GOAWAY`'s last
/// stream id) libcurl itself retries on a new stream.
struct RetryPolicy {
    /// What a failure without an answer means for the call.
    enum Unanswered: Equatable {
        /// The request was written: the server may have acted on it. The call ends `unconfirmed`
        /// with this cause.
        case unconfirmed(cause: String)
        /// The request waited for a connection and was never written: not an attempt.
        case notSent
    }

    /// What `failure` means when `requestSent` says whether the request was written; nil when it
    /// is judged as usual (a refused connection, DNS, TLS: never written, and an attempt).
    static func unanswered(_ failure: TransportFailure, requestSent: Bool) -> Unanswered? {
        switch failure.kind {
        case .timeout, .sendReceive, .cancelled:
            if requestSent {
                let cause =
                    failure.kind == .cancelled
                    ? "the request was sent, but the budget ran out before an answer came"
                    : "the request was sent, but no answer came: \(failure)"
                return .unconfirmed(cause: cause)
            }
            return failure.kind == .timeout ? .notSent : nil
        case .resolve, .connect, .tls, .tooLarge, .other:
            return nil
        }
    }

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
