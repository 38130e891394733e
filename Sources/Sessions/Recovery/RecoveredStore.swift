/// The state a store's files hold, and what must be done to them: the pure half of opening
/// (no I/O), so that every damage case can be tested and fuzzed on bytes alone.
struct RecoveredStore {
    /// The sessions the files hold.
    var table = SessionTable()
    /// What was found, for the journal.
    var report = LoadReport()
    /// What must be done to the files.
    var plan = RepairPlan()
    /// The last commit sequence number the recovered state contains.
    var lastSequence: UInt64 = 0
    /// The snapshot's last sequence, which a kept or fresh log continues.
    var snapshotSequence: UInt64 = 0
    /// Sessions in the snapshot, for a fresh log's header.
    var snapshotSessions = 0
    /// Where the next commit goes in a log that is kept.
    var logicalEnd = 0
}
