import EventLoop
import Vocabulary

/// The time a run of end-session calls may take — the Linux counterpart of a background task
/// with an expiration handler.
///
/// It begins when the run begins (for the stop run: at SIGTERM), knows its ``timeRemaining``,
/// refuses new requests once less than ``minimumRequest`` remains, caps every request's timeout
/// by what remains, and runs its expiration handler exactly once: when the owner's timer fires
/// at ``deadline``, or at once when ``expire(reason:)`` is called early (a second SIGTERM).
package final class StopBudget {
    /// The whole budget.
    package let total: Duration
    /// No request starts with less than this remaining.
    package let minimumRequest: Duration
    /// When the budget began.
    package let startedAt: MonotonicInstant
    /// When it ends.
    package let deadline: MonotonicInstant
    /// Why it expired, once it has.
    // Read twice per call of a run; exclusivity is not checked at run time (issue 10's
    // instruction count): the budget is confined to the loop's thread, and the one write
    // (`expire`) is a single statement, before the handler runs.
    @exclusivity(unchecked) package private(set) var expiry: RunExpiryReason?
    private let clock: any MonotonicClock
    private var expirationHandler: ((RunExpiryReason) -> Void)?

    /// Begins a budget of `total` now.
    package init(total: Duration, minimumRequest: Duration, clock: any MonotonicClock) {
        self.total = total
        self.minimumRequest = minimumRequest
        self.clock = clock
        startedAt = clock.now()
        deadline = startedAt.advanced(by: total)
    }

    /// Sets what runs, once, when the budget expires (replacing an earlier handler).
    package func onExpiration(_ handler: @escaping (RunExpiryReason) -> Void) {
        expirationHandler = handler
    }

    /// Time left before the deadline; zero once expired.
    package var timeRemaining: Duration { remaining(at: clock.now()) }

    /// Time left at `now`; zero once expired.
    private func remaining(at now: MonotonicInstant) -> Duration {
        guard expiry == nil else { return .zero }
        let left = deadline.duration(since: now)
        return left > .zero ? left : .zero
    }

    /// Time since the budget began.
    package var elapsed: Duration { clock.now().duration(since: startedAt) }

    /// Whether a new request may start: not expired and at least ``minimumRequest`` left.
    package var allowsNewRequest: Bool { expiry == nil && timeRemaining >= minimumRequest }

    /// The timeout for a request that would take at most `limit`: the smaller of `limit` and the
    /// time remaining less `margin` (kept for recording results before the deadline); nil when
    /// no request may start.
    package func requestTimeout(limit: Duration, margin: Duration) -> Duration? {
        // One clock reading for both questions (``allowsNewRequest`` and the remainder).
        guard expiry == nil else { return nil }
        let remaining = remaining(at: clock.now())
        guard remaining >= minimumRequest else { return nil }
        let capped = min(limit, remaining - margin)
        return capped > .zero ? capped : nil
    }

    /// Expires the budget now. Returns true the first time (the handler ran), false after.
    @discardableResult
    package func expire(reason: RunExpiryReason) -> Bool {
        guard expiry == nil else { return false }
        expiry = reason
        let handler = expirationHandler
        expirationHandler = nil
        handler?(reason)
        return true
    }

    /// Called by the owner's timer at ``deadline``: expires the budget unless already expired.
    @discardableResult
    package func expireIfDue() -> Bool {
        guard expiry == nil, clock.now() >= deadline else { return false }
        return expire(reason: .timeUp)
    }
}
