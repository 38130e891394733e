/// Counters describing the store's files and the work done since it was opened.
package struct StoreStatistics: Sendable, Equatable {
    /// The last commit sequence number known durable.
    package var sequence: UInt64 = 0
    /// The log's length up to the end of its last commit (its reserve not counted).
    package var logBytes = 0
    /// The snapshot's size.
    package var snapshotBytes = 0
    /// Commits made durable.
    package var commits = 0
    /// Commits that failed (nothing acknowledged).
    package var failedCommits = 0
    /// Records made durable by commits.
    package var recordsCommitted = 0
    /// Snapshots written by compaction (and by recovery on open).
    package var compactions = 0
    /// Full rewrites from memory after a failed sync or a deleted directory.
    package var rewrites = 0
}

/// Something the store did or suffered that the daemon should tell the journal about.
package enum StoreEvent: Sendable {
    /// A commit failed; what it carried from clients was answered "not saved". `recovering`
    /// says whether the store now rewrites itself from memory before it commits again.
    case commitFailed(StoreError, recovering: Bool)
    /// The rewrite from memory succeeded: commits work again. `directoryRecreated` when the
    /// state directory had to be made again.
    case recovered(sessions: Int, directoryRecreated: Bool)
    /// The rewrite from memory failed; it is tried again at the next change after a delay.
    case recoveryFailed(StoreError)
    /// A background compaction failed; the log keeps growing until a later one succeeds.
    case compactionFailed(StoreError)
    /// A background compaction replaced the snapshot and the log.
    case compacted(sessions: Int, snapshotBytes: Int, microseconds: UInt64)
}
