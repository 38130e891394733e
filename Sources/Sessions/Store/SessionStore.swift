/// The durable set of sessions: the table in memory and the commit policy that keeps the files
/// (docs/store-format.md) in step with it. Confine an instance to one thread (the daemon's event
/// loop); the file work happens on the store's writer queues, whose results the owner collects
/// with ``processCompletions()`` when ``completionDescriptor`` becomes readable.
///
/// Two kinds of change, with two rules:
/// - **Client changes** (`register`, `unregister`) are acknowledged only once durable, and take
///   effect in memory only then: until their `done` runs with nil they are not listed, not
///   counted, not ended by a run. One that fails (`done` gets the error) is gone everywhere:
///   what is answered "not saved" is not in the store, in memory or on disk.
/// - **Run results** (`recordEnded`, `recordOutcome`, `replace`) are facts about the remote
///   sessions: they take effect at once and are written by the next commit, retried until one
///   succeeds.
///
/// Group commit: what is staged while a commit is in flight goes into the next one, as one
/// frame, with one write and one fdatasync. When the log grows too long, a snapshot is written
/// in the background from a frozen copy of the table while commits go on; never while stopping.
///
/// A failed sync (fsyncgate: Linux may drop the unwritten pages and forget the error, so the
/// file is never trusted again) or a deleted state directory sends the store into recovery: it
/// rewrites its whole state from memory into new files — making the directory again if it has
/// to — and commits again only when that has succeeded, so a transient fault (a full disk, an
/// operator's `rm -r`) heals without a restart.
///
/// Its parts, one file each: opening (`SessionStore+Open`), reading the table
/// (`+Reading`), the changes (`+Changes`), committing them (`+Commit`, with ``CommitQueue`` and
/// ``CommitRequest``), compaction and recovery (`+Maintenance`, with ``CompactionSchedule`` and
/// ``StoreHealth``), the documents kept beside the sessions (`+Documents`). The store calls its
/// owner only to report — each client change's `done`, and ``onEvent`` — never to be driven by
/// it: the owner asks (``takeCommitRequest()``) and acts.
package final class SessionStore {
    /// What a client change reports when it has become durable (nil) or failed.
    package typealias Completion = (StoreError?) -> Void

    /// The state directory as given to `open`.
    package let directoryPath: String
    /// File sizes and counters.
    package internal(set) var statistics = StoreStatistics()
    /// Told about failed commits, recovery and compactions, for the journal: a report, which
    /// expects nothing back.
    package var onEvent: ((StoreEvent) -> Void)?

    // Touched for every ended session of a run; exclusivity is not checked at run time for
    // them (issue 10's instruction count): the store is confined to one thread, and no access to
    // them is open while code runs that could reach them again (table.update's closure changes
    // its argument only; CommitQueue and CommitRequest call out to nothing).
    /// The sessions: durable, with run results applied.
    @exclusivity(unchecked) var table: SessionTable
    /// Staged changes, the commit in flight, sequence numbers.
    @exclusivity(unchecked) var commits: CommitQueue
    /// Whether a change commits at once or waits for the owner's ``submitStaged()``.
    @exclusivity(unchecked) var commitRequest = CommitRequest()
    /// Sessions whose unregistration is staged or being written, each with whether a run result
    /// for it was held back meanwhile: written after the removal, a run's record would bring the
    /// session back at the next start (`+Changes`).
    @exclusivity(unchecked) var unregistering: [SessionID: Bool] = [:]
    /// Set by ``close()``: from then on nothing is staged and nothing is written.
    @exclusivity(unchecked) var isClosed = false
    /// What session keys are sealed with in the files; nil: they are stored in clear.
    let storeKey: StoreKey?
    /// The file work, on queues of its own.
    let writer: StoreWriter
    /// The directory the current files are in (replaced when it is made again).
    var directory: StoreDirectory
    /// Whether commits may be written, and the rewrite from memory when not.
    var health = StoreHealth()
    /// When compaction happens, and where one is.
    var compaction = CompactionSchedule(policy: CompactionPolicy())
    /// Why the store is read-only (``openReadOnly(directory:)``), or nil: then no commit is ever
    /// written, client changes are refused at once, and run results stay in memory.
    package internal(set) var readOnlyCause: StoreError?

    init(
        directory: StoreDirectory, log: sending LogFile, table: SessionTable, recovered: RecoveredStore,
        storeKey: StoreKey?
    ) throws(StoreError) {
        self.directory = directory
        directoryPath = directory.path
        self.storeKey = storeKey
        let logBytes = log.logicalEnd
        writer = try StoreWriter(log: log, storeKey: storeKey)
        self.table = table
        commits = CommitQueue(lastSequence: recovered.lastSequence, storeKey: storeKey)
        statistics.sequence = recovered.lastSequence
        statistics.logBytes = logBytes
    }

    deinit { if !isClosed { writer.close() } }

    /// When compaction happens.
    package var compactionPolicy: CompactionPolicy {
        get { compaction.policy }
        set { compaction.policy = newValue }
    }

    /// Readable when the writer has results for ``processCompletions()``.
    package var completionDescriptor: Int32 { writer.wakeDescriptor }

    /// Collects what the writer finished: acknowledges or fails client changes, starts the next
    /// commit, steps compaction and recovery on. Call when ``completionDescriptor`` is readable.
    package func processCompletions() {
        for completion in writer.takeCompletions() {
            switch completion {
            case .appended(let result): appended(result)
            case .snapshotWritten(let purpose, let result): snapshotWritten(purpose, result)
            case .logSwitched(let purpose, let result): logSwitched(purpose, result)
            }
        }
        requestSubmit()
    }

    /// Waits (up to `timeoutMilliseconds`) until every staged change is written or has failed,
    /// processing completions meanwhile; after a failed sync this includes the rewrite. Returns
    /// true when nothing is left unsaved. For the end of a stop, and for tests.
    @discardableResult
    package func flush(timeoutMilliseconds: Int = 10_000) -> Bool {
        if readOnlyCause != nil { return !hasUnsavedChanges }
        let deadline = StoreClock.monotonicMicroseconds() + UInt64(max(0, timeoutMilliseconds)) * 1000
        commits.retryRunsNow()
        health.retryNow()
        while !isClosed {
            submit()
            if !hasUnsavedChanges && !health.isRewriting { return true }
            let now = StoreClock.monotonicMicroseconds()
            guard now < deadline else { return false }
            if writer.waitForCompletion(milliseconds: Int32(min(100, (deadline - now) / 1000 + 1))) {
                processCompletions()
            }
        }
        return false
    }

    /// `flush`, then also waits for a compaction in progress to finish (tests).
    @discardableResult
    func waitUntilIdle(timeoutMilliseconds: Int = 10_000) -> Bool {
        let deadline = StoreClock.monotonicMicroseconds() + UInt64(timeoutMilliseconds) * 1000
        guard flush(timeoutMilliseconds: timeoutMilliseconds) else { return false }
        while StoreClock.monotonicMicroseconds() < deadline {
            if writer.waitForCompletion(milliseconds: 100) { processCompletions() }
            if compaction.isIdle, !hasUnsavedChanges, !health.isRewriting { return true }
        }
        return false
    }

    /// For tests: holds the writer's commits (`log`) and/or compactions (`snapshots`), as a disk
    /// whose fdatasync takes that long would, until ``releaseWriter(log:snapshots:)`` with the
    /// same arguments, which must come before ``close()``.
    package func holdWriter(log: Bool, snapshots: Bool) { writer.hold(log: log, snapshots: snapshots) }

    /// Lets the writer go on after ``holdWriter(log:snapshots:)``.
    package func releaseWriter(log: Bool, snapshots: Bool) { writer.release(log: log, snapshots: snapshots) }

    /// No compaction from now on (the daemon is stopping: its budget is for ending sessions).
    /// A snapshot already being written is left to finish but the log is not switched.
    package func beginShutdown() { compaction.beginShutdown() }

    /// Stops the writer (a snapshot being written is abandoned) and closes the files. Changes
    /// not yet durable are lost, exactly as in a crash; call ``flush(timeoutMilliseconds:)`` first.
    package func close() {
        guard !isClosed else { return }
        isClosed = true
        writer.close()
        directory.unlock()
    }

    /// Throws `.closed` once ``close()`` has run.
    /// Throws the read-only store's refusal (``readOnlyCause``).
    func checkWritable() throws(StoreError) {
        if let readOnlyCause { throw readOnlyCause }
    }

    func checkOpen() throws(StoreError) {
        if isClosed {
            throw StoreError(kind: .closed, message: "session store in \(directoryPath) is closed", path: directoryPath)
        }
    }
}
