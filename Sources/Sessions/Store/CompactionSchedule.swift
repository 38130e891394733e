/// When the store compacts (no I/O): a snapshot is written in the background once the
/// ``CompactionPolicy`` says the log is too long, then the log is switched; one at a time, never
/// while the store recovers, and none started once the daemon stops.
struct CompactionSchedule {
    /// Where a compaction is.
    enum Phase {
        case idle
        case writingSnapshot
        case switchingLog
    }

    /// When compaction happens.
    var policy: CompactionPolicy
    /// Where a compaction is.
    private(set) var phase = Phase.idle
    /// After a failed compaction, none starts before this (monotonic µs).
    private var retryAt: UInt64 = 0
    /// Set once the daemon stops: its budget is for ending sessions.
    private(set) var stopping = false

    /// A schedule following `policy`.
    init(policy: CompactionPolicy) { self.policy = policy }

    /// Whether no compaction is running.
    var isIdle: Bool {
        if case .idle = phase { return true }
        return false
    }

    /// Whether a compaction should start at `now` for a table of `sessions` whose files hold
    /// `logBytes` and `snapshotBytes`: a log longer than a bare header and, for an empty table,
    /// at once (the log holds ended sessions' keys), or else when the policy says so.
    func isDue(
        sessions: Int, logBytes: Int, snapshotBytes: Int, healthy: Bool, now: @autoclosure () -> UInt64
    ) -> Bool {
        !stopping && isIdle && healthy && logBytes > Self.emptyLogBytes && now() >= retryAt
            && (sessions == 0 || policy.shouldCompact(logBytes: logBytes, snapshotBytes: snapshotBytes))
    }

    /// A compaction's snapshot is being written.
    mutating func started() { phase = .writingSnapshot }

    /// Its snapshot of `sessions` is written: returns whether to switch the log now. Not while
    /// recovering (not `healthy`), nor while stopping unless the snapshot is empty (its keys
    /// must go); the snapshot is then consistent with the old log, and the next open switches.
    mutating func snapshotWritten(sessions: Int, healthy: Bool) -> Bool {
        guard !stopping || sessions == 0, healthy else {
            phase = .idle
            return false
        }
        phase = .switchingLog
        return true
    }

    /// The compaction finished or gave way to recovery.
    mutating func finished() { phase = .idle }

    /// The compaction failed at `now`: the next waits the policy's retry delay.
    mutating func failed(now: UInt64) {
        phase = .idle
        retryAt = now + UInt64(policy.retryDelaySeconds * 1e6)
    }

    /// The daemon stops: no compaction from now on (one already running finishes its snapshot).
    mutating func beginShutdown() { stopping = true }

    /// A log of only its header: an empty store whose log is longer holds keys of ended
    /// sessions, and is compacted at once (cheaply).
    static let emptyLogBytes = LogEncoder.header(snapshotSequence: 0, snapshotSessions: 0, createdAt: 0).count
}
