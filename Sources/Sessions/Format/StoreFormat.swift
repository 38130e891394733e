/// Names and constants of the store's on-disk format; docs/store-format.md describes it in full.
enum StoreFormat {
    /// The format this version writes. It reads format 1 as well and rewrites it as format 2.
    static let version: UInt32 = 2
    /// Full state as of a commit sequence number; replaced only by rename.
    static let snapshotFileName = "sessions.snapshot"
    /// Commits since that snapshot, one frame each, followed by a reserve of zero bytes.
    static let logFileName = "sessions.log"
    /// Largest encoded size of a single session.
    static let maxEncodedSessionBytes = 1 << 20
    /// Zero bytes always left unwritten at the end of the log. A log that ends without them was
    /// cut (by something other than this store), so commits after its end may be missing.
    static let logReserveMinimum = 512
    /// The log grows by at least this much at a time, so extending it (and syncing the new size)
    /// is rare.
    static let logGrowthMinimum = 64 << 10
    /// ... and by at most this much.
    static let logGrowthMaximum = 1 << 20
    /// Sequence numbers above this are renumbered from 0 at the next full rewrite, so that
    /// `+ 1` can never overflow (no real store gets anywhere near: one commit per nanosecond
    /// takes 292 years to reach it).
    static let sequenceRenumberThreshold: UInt64 = 1 << 63
}
