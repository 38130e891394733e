import Glibc

extension SessionStore {
    /// Opens the store in `directory` (which must exist), recovering from any crash or damage,
    /// and reports what it found. With a `storeKey`, session keys are sealed in the files
    /// (docs/store-format.md, "Sealed keys"), and files holding keys in clear are rewritten
    /// sealed (``LoadReport/keysSealed``). Throws if the directory cannot be opened, locked, read
    /// or written, if a file was written by a newer format, or if the files hold sealed keys and
    /// `storeKey` is nil or not the key that sealed them: the daemon must then refuse to start.
    package static func open(
        directory path: String, compactionPolicy: CompactionPolicy = CompactionPolicy(), storeKey: StoreKey? = nil
    ) throws(StoreError) -> (SessionStore, LoadReport) {
        let started = StoreClock.monotonicMicroseconds()
        let directory = try StoreDirectory.open(path)
        try directory.lock()
        try directory.removeIfPresent(SnapshotFile.name + ".tmp")
        try directory.removeIfPresent(LogFile.name + ".tmp")
        let snapshot = try directory.map(SnapshotFile.name)
        let log = try directory.map(LogFile.name)
        var recovered = try StoreRecovery.recover(
            mapped: snapshot?.bytes, log: log?.bytes,
            paths: StoreRecovery.Paths(
                snapshot: directory.fullPath(SnapshotFile.name), log: directory.fullPath(LogFile.name)),
            storeKey: storeKey)
        let (file, snapshotBytes) = try repair(&recovered, in: directory, log: log?.bytes, storeKey: storeKey)
        let snapshotSize = snapshotBytes ?? snapshot?.bytes.count ?? 0
        let store = try SessionStore(
            directory: directory, log: file, table: recovered.table, recovered: recovered, storeKey: storeKey)
        store.compactionPolicy = compactionPolicy
        store.statistics.snapshotBytes = snapshotSize
        if recovered.plan.rewrite { store.statistics.compactions = 1 }
        recovered.report.durationMicroseconds = StoreClock.monotonicMicroseconds() - started
        return (store, recovered.report)
    }

    /// Opens the store in `directory` without writing anything — for a directory that cannot be
    /// written (a read-only file system): reads and recovers what both files hold, in memory
    /// only (damage is reported, nothing is kept aside or repaired), and returns a store that
    /// refuses every client change with a `.readOnly` error naming `cause` and writes no commit
    /// (run results stay in memory; ``durableCount`` counts what the files still hold).
    package static func openReadOnly(directory path: String, cause: StoreError, storeKey: StoreKey? = nil)
        throws(StoreError) -> (SessionStore, LoadReport)
    {
        let started = StoreClock.monotonicMicroseconds()
        let directory = try StoreDirectory.open(path)
        try directory.lock()
        let snapshot = try directory.map(SnapshotFile.name, settingMode: false)
        let log = try directory.map(LogFile.name, settingMode: false)
        var recovered = try StoreRecovery.recover(
            mapped: snapshot?.bytes, log: log?.bytes,
            paths: StoreRecovery.Paths(
                snapshot: directory.fullPath(SnapshotFile.name), log: directory.fullPath(LogFile.name)),
            storeKey: storeKey)
        // The writer needs a log; this one is opened read-only and never written (no commit is
        // submitted while `readOnlyCause` is set). With no log, the directory stands in for it.
        let name = log == nil ? "." : LogFile.name
        guard let fd = try directory.openExisting(name, flags: O_RDONLY) else {
            throw StoreError.io("open", path: directory.fullPath(name), errno: ENOENT)
        }
        let file = LogFile(
            directory: directory, descriptor: fd, logicalEnd: recovered.logicalEnd, size: log?.bytes.count ?? 0)
        let store = try SessionStore(
            directory: directory, log: file, table: recovered.table, recovered: recovered, storeKey: storeKey)
        store.readOnlyCause = StoreError(
            kind: .readOnly,
            message: "the state directory \(path) cannot be written (\(cause.message)): the daemon runs degraded, "
                + "accepts nothing new and ends the stored sessions at the stop",
            path: path, errnoCode: cause.errnoCode)
        recovered.report.durationMicroseconds = StoreClock.monotonicMicroseconds() - started
        return (store, recovered.report)
    }

    /// Carries out what recovery planned; returns the log to append to and, if it wrote one, the
    /// new snapshot's size. Damaged data is kept aside before anything is replaced.
    private static func repair(
        _ recovered: inout RecoveredStore, in directory: StoreDirectory, log: UnsafeRawBufferPointer?,
        storeKey: StoreKey?
    )
        throws(StoreError) -> (LogFile, snapshotBytes: Int?)
    {
        let plan = recovered.plan
        if plan.preserveSnapshot {
            recovered.report.preservedFiles.append(try directory.preserve(SnapshotFile.name))
        }
        if plan.preserveLog {
            recovered.report.preservedFiles.append(try directory.preserve(LogFile.name))
        } else if let range = plan.preserveLogBytes, let log, !range.isEmpty {
            let bytes = Array(UnsafeRawBufferPointer(rebasing: log[range]))
            recovered.report.preservedFiles.append(try directory.preserveBytes(bytes[...], from: LogFile.name))
        }
        if plan.rewrite {
            let header = LogEncoder.header(
                snapshotSequence: recovered.lastSequence, snapshotSessions: recovered.table.count,
                createdAt: StoreClock.wallMicroseconds())
            if recovered.report.createdNewStore {
                // The log first: a crash before the snapshot leaves a log that says "new store",
                // while a snapshot without its log always means damage.
                let log = try LogFile.create(in: directory, contents: header)
                let size = try SnapshotFile.write(
                    recovered.table.frozen, lastSequence: recovered.lastSequence, in: directory,
                    sealingWith: storeKey)
                return (log, size)
            }
            // The snapshot first: a crash before the new log leaves the old one, whose commits
            // the snapshot holds (the next open skips them).
            let size = try SnapshotFile.write(
                recovered.table.frozen, lastSequence: recovered.lastSequence, in: directory, sealingWith: storeKey)
            return (try LogFile.create(in: directory, contents: header), size)
        }
        if plan.freshLog {
            let header = LogEncoder.header(
                snapshotSequence: recovered.snapshotSequence, snapshotSessions: recovered.snapshotSessions,
                createdAt: StoreClock.wallMicroseconds())
            return (try LogFile.create(in: directory, contents: header), nil)
        }
        guard let fd = try directory.openExisting(LogFile.name, flags: O_RDWR) else {
            throw StoreError.io("open", path: directory.fullPath(LogFile.name), errno: ENOENT)
        }
        let file = LogFile(
            directory: directory, descriptor: fd, logicalEnd: recovered.logicalEnd, size: log?.count ?? 0)
        if plan.clearLogBytes != nil || plan.restoreReserve { try file.repairTail(clearing: plan.clearLogBytes) }
        return (file, nil)
    }
}
