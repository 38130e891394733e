/// The group commit's bookkeeping (no I/O): the changes staged since the last commit, the commit
/// being written, and the commit sequence numbers. ``SessionStore`` hands what
/// ``startCommit()`` encodes to its writer and reports the answer with ``commitSucceeded()`` or
/// ``commitFailed(nothingWritten:now:)``; one commit is in flight at a time, and what is staged
/// meanwhile goes into the next one.
///
/// Its methods never call a change's `done`: they hand the changes back, and the store answers
/// them once no access to this value is open (it is kept without run-time exclusivity checks).
struct CommitQueue {
    /// A registration or unregistration waiting to be written, with its acknowledgement.
    struct ClientChange {
        /// What the client asked for.
        enum Change {
            case register(Session)
            case unregister(Session)
        }

        /// What the client asked for.
        var change: Change
        /// Its record, encoded when it was staged.
        var record: [UInt8]
        /// Runs once the commit carrying it is durable (nil) or has failed.
        var done: SessionStore.Completion
    }

    /// A commit handed to the writer.
    struct Batch {
        /// The sequence number of its first frame.
        var firstSequence: UInt64
        /// The run results it carries.
        var runs: RecordBuffer
        /// The client changes it carries, acknowledged when it is durable.
        var clients: [ClientChange]
        /// Records in it.
        var records: Int
    }

    /// Run results staged for the next commit.
    private(set) var stagedRuns = RecordBuffer()
    /// Client changes staged for the next commit.
    private(set) var stagedClients: [ClientChange] = []
    /// The commit being written.
    private(set) var inFlight: Batch?
    /// The last sequence number handed to the writer.
    private(set) var lastSequence: UInt64
    /// After a commit of run results failed without harm (e.g. ENOSPC), when to try again
    /// (monotonic µs), and the delay that led there (doubled from 0.2 s up to 5 s).
    private var runRetryAt: UInt64 = 0
    private var runRetryDelay: UInt64 = 0

    /// What register records' keys are sealed with; nil: they are stored in clear.
    let storeKey: StoreKey?

    /// A queue whose next commit follows `lastSequence`, sealing keys with `storeKey`.
    init(lastSequence: UInt64, storeKey: StoreKey? = nil) {
        self.lastSequence = lastSequence
        self.storeKey = storeKey
    }

    /// True while changes are staged or being written.
    var hasUnsavedChanges: Bool { inFlight != nil || !stagedRuns.isEmpty || !stagedClients.isEmpty }

    /// Whether a commit is being written.
    var isCommitting: Bool { inFlight != nil }

    /// Removals of ended sessions staged or being written: not on disk yet.
    var unwrittenRemovals: Int { stagedRuns.removals + (inFlight?.runs.removals ?? 0) }

    /// Sessions staged or being written as registrations (not in the table until durable).
    var pendingRegistrations: [Session] {
        (stagedClients + (inFlight?.clients ?? [])).compactMap {
            if case .register(let s) = $0.change { return s } else { return nil }
        }
    }

    /// Stages a run result.
    mutating func stage(_ record: StoreRecord, isRemoval: Bool) {
        stagedRuns.append(record, isRemoval: isRemoval, sealingWith: storeKey)
    }

    /// Stages a client change.
    mutating func stage(_ change: ClientChange) { stagedClients.append(change) }

    /// Whether the staged changes should be committed now (none is in flight): any client
    /// change, or run results whose retry delay has passed at `now`.
    func isCommitDue(at now: @autoclosure () -> UInt64) -> Bool {
        !stagedClients.isEmpty || (!stagedRuns.isEmpty && now() >= runRetryAt)
    }

    /// Lets run results go into the next commit without waiting out their retry delay.
    mutating func retryRunsNow() { runRetryAt = 0 }

    /// Moves everything staged into the commit in flight and returns its frames: one write and
    /// one fdatasync for all of it. Only when nothing is in flight.
    mutating func startCommit() -> [UInt8] {
        var records = stagedRuns
        for change in stagedClients { records.append(encoded: change.record, isRemoval: false) }
        let first = lastSequence &+ 1
        let (bytes, frames) = LogEncoder.commit(records: records.bytes, ends: records.ends, firstSequence: first)
        inFlight = Batch(firstSequence: first, runs: stagedRuns, clients: stagedClients, records: records.count)
        lastSequence = first &+ UInt64(frames - 1)
        stagedRuns = RecordBuffer()
        stagedClients = []
        return bytes
    }

    /// The commit in flight is durable: returns it (nil if there was none), for its client
    /// changes to take effect and be acknowledged.
    mutating func commitSucceeded() -> Batch? {
        guard let batch = inFlight else { return nil }
        inFlight = nil
        runRetryDelay = 0
        return batch
    }

    /// The commit in flight failed: its run results, true whatever happened to the write, go
    /// back in front of those staged since. When `nothingWritten`, its sequence numbers are used
    /// again and its run results wait a growing delay from `now`. Returns its client changes, to
    /// be answered "not saved" (nil if nothing was in flight).
    mutating func commitFailed(nothingWritten: Bool, now: @autoclosure () -> UInt64) -> [ClientChange]? {
        guard let batch = inFlight else { return nil }
        inFlight = nil
        stagedRuns = batch.runs + stagedRuns
        if nothingWritten {
            lastSequence = batch.firstSequence &- 1
            runRetryDelay = min(5_000_000, max(200_000, runRetryDelay * 2))
            runRetryAt = now() + runRetryDelay
        }
        return batch.clients
    }

    /// Removes and returns the client changes staged (the store cannot commit them).
    mutating func takeStagedClients() -> [ClientChange] {
        let taken = stagedClients
        stagedClients = []
        return taken
    }
}
