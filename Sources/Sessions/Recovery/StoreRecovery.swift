/// Reads a snapshot and a log (either may be missing) into the state they hold
/// (docs/store-format.md, "Opening and recovery").
enum StoreRecovery {
    /// Full paths, for messages.
    struct Paths {
        /// The snapshot's.
        var snapshot: String
        /// The log's.
        var log: String
    }

    /// Throws only when a file was written by a newer format: nothing is changed then.
    static func recover(snapshot: [UInt8]?, log: [UInt8]?, paths: Paths, storeKey: StoreKey? = nil)
        throws(StoreError) -> RecoveredStore
    {
        try snapshot.withOptionalBytes { s throws(StoreError) in
            try log.withOptionalBytes { l throws(StoreError) in
                try recover(mapped: s, log: l, paths: paths, storeKey: storeKey)
            }
        }
    }

    /// Throws when a file was written by a newer format, or when its sealed session keys cannot
    /// be opened with `storeKey` (none given, or the wrong one): nothing is changed then.
    static func recover(
        mapped snapshot: UnsafeRawBufferPointer?, log: UnsafeRawBufferPointer?, paths: Paths,
        storeKey: StoreKey? = nil
    ) throws(StoreError) -> RecoveredStore {
        var recovery = RecoveryPass(paths: paths, storeKey: storeKey)
        guard snapshot != nil || !(log?.isEmpty ?? true) else {
            recovery.state.report.createdNewStore = true
            recovery.state.plan.rewrite = true
            return recovery.state
        }
        var snapshotContents: SnapshotContents?
        if let snapshot { snapshotContents = try recovery.readSnapshot(snapshot) }
        if let log {
            try recovery.replayLog(log, snapshot: snapshotContents)
        } else {
            recovery.logMissing(snapshot: snapshotContents)
        }
        try recovery.settleKeys()
        recovery.finish()
        return recovery.state
    }

    /// Applies one record; returns false when it refers to an unknown session (or is a marker).
    static func apply(_ record: StoreRecord, to table: inout SessionTable) -> Bool {
        switch record {
        case .register(let s):
            table.upsert(s)
            return true
        case .remove(let id):
            return table.delete(id)
        case .outcome(let id, let attempts, let lastOutcome):
            return table.update(id) {
                $0.attempts = attempts
                $0.lastOutcome = lastOutcome
            } != nil
        case .snapshotHeader, .snapshotEnd, .logHeader:
            return false
        }
    }
}
