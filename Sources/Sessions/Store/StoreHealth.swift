/// Whether the store may commit, and where its rewrite from memory is (no I/O). A failed sync
/// or a vanished log makes the files untrustworthy: the store then rewrites its whole state
/// into new files, and commits again only once that has succeeded. A failed rewrite is tried
/// again after a delay doubled from 1 s up to 30 s.
struct StoreHealth {
    /// Whether commits may be written.
    enum State {
        case healthy
        /// Rewriting (or about to rewrite) from memory after `reason`; `retryAt` is when the next
        /// attempt may start (monotonic µs), `.max` while one is running.
        case recovering(StoreError, retryAt: UInt64)
    }

    /// What the store should do about recovery before it commits.
    enum RewriteStep {
        /// Nothing: the store is healthy, or a rewrite is running.
        case none
        /// The last rewrite failed a short while ago; until the next may start, client changes
        /// are answered at once with `reason`.
        case wait(reason: StoreError)
        /// Start a rewrite now (it is marked running).
        case start
    }

    /// Whether commits may be written.
    private(set) var state = State.healthy
    /// The delay before the next rewrite after a failed one (µs). Kept after a success, as before.
    private var retryDelay: UInt64 = 0
    /// Whether the running rewrite went into a directory made again (it had been deleted).
    private var directoryRecreated = false

    /// Whether commits may be written.
    var isHealthy: Bool {
        if case .healthy = state { return true }
        return false
    }

    /// Whether a rewrite is running.
    var isRewriting: Bool {
        if case .recovering(_, let retryAt) = state, retryAt == .max { return true }
        return false
    }

    /// A write cannot be trusted (`reason`): rewrite before the next commit, at once.
    mutating func lost(_ reason: StoreError) { state = .recovering(reason, retryAt: 0) }

    /// Lets a rewrite waiting out its delay start at the next chance (a flush).
    mutating func retryNow() {
        if case .recovering(let reason, let retryAt) = state, retryAt != .max {
            state = .recovering(reason, retryAt: 0)
        }
    }

    /// Decides, at `now`, whether a rewrite starts; marks it running if so.
    mutating func nextRewrite(now: @autoclosure () -> UInt64) -> RewriteStep {
        guard case .recovering(let reason, let retryAt) = state, retryAt != .max else { return .none }
        guard now() >= retryAt else { return .wait(reason: reason) }
        state = .recovering(reason, retryAt: .max)
        return .start
    }

    /// The rewrite's snapshot is written, into a directory made again if `directoryRecreated`.
    mutating func rewroteSnapshot(directoryRecreated: Bool) { self.directoryRecreated = directoryRecreated }

    /// The rewrite succeeded: commits may be written again. Returns whether the directory had
    /// been made again.
    mutating func recovered() -> Bool {
        state = .healthy
        defer { directoryRecreated = false }
        return directoryRecreated
    }

    /// The rewrite failed with `error` at `now`: the next waits a longer delay.
    mutating func rewriteFailed(_ error: StoreError, now: UInt64) {
        retryDelay = min(30_000_000, max(1_000_000, retryDelay * 2))
        state = .recovering(error, retryAt: now + retryDelay)
    }
}
