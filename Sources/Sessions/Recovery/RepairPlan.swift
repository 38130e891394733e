/// What opening a store must do to its files once they are read. Damaged data is always kept
/// aside before anything is replaced, and files are only ever replaced by rename.
struct RepairPlan: Equatable, Sendable {
    /// Hard-link the damaged snapshot aside.
    var preserveSnapshot = false
    /// Hard-link the damaged log aside.
    var preserveLog = false
    /// Copy these bytes of the log aside (a torn or cut tail).
    var preserveLogBytes: Range<Int>?
    /// Write a snapshot of the recovered state and a fresh log.
    var rewrite = false
    /// Keep the snapshot; start a fresh log continuing it (the old log held nothing newer).
    var freshLog = false
    /// Keep the log, overwriting these bytes (a torn or cut tail) with zeros.
    var clearLogBytes: Range<Int>?
    /// Keep the log, giving back the reserve that a cut took away.
    var restoreReserve = false
}
