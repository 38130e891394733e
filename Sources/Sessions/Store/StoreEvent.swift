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
