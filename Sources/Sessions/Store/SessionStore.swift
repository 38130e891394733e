import Glibc

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
package final class SessionStore {
    /// What a client change reports when it has become durable (nil) or failed.
    package typealias Completion = (StoreError?) -> Void

    /// The state directory as given to `open`.
    package let directoryPath: String
    /// When compaction happens.
    package var compactionPolicy: CompactionPolicy
    /// File sizes and counters.
    package internal(set) var statistics = StoreStatistics()
    /// Told about failed commits, recovery and compactions, for the journal.
    package var onEvent: ((StoreEvent) -> Void)?
    /// Set by an owner that turns an event loop: called when something is staged (at most once
    /// until ``submitStaged()``), so that it can submit at the end of the loop's turn and every
    /// change made in one turn shares one commit. Without it, a commit starts at once.
    package var onStaged: (() -> Void)?

    // Touched for every ended session of a run; exclusivity is not checked at run time for
    // them (issue 10's instruction count): the store is confined to one thread, and no access to
    // them is open while code runs that could reach them again (table.update's closure changes
    // its argument only).
    @exclusivity(unchecked) private var table: SessionTable
    private let writer: StoreWriter
    /// The directory the current files are in (replaced when it is made again).
    private var directory: StoreDirectory
    @exclusivity(unchecked) private var stagedRuns = RecordBuffer()
    private var stagedClients: [ClientChange] = []
    private var inFlight: Batch?
    /// The last sequence number handed to the writer.
    private var lastSequence: UInt64
    private var health = Health.healthy
    private var compaction = Compaction.idle
    /// After a commit of run results failed without harm (e.g. ENOSPC), when to try again.
    private var runRetryAt: UInt64 = 0
    private var runRetryDelay: UInt64 = 0
    private var stopping = false
    @exclusivity(unchecked) private var isClosed = false
    @exclusivity(unchecked) private var submissionRequested = false

    init(directory: StoreDirectory, log: sending LogFile, table: SessionTable, recovered: RecoveredStore)
        throws(StoreError)
    {
        self.directory = directory
        directoryPath = directory.path
        compactionPolicy = CompactionPolicy()
        let logBytes = log.logicalEnd
        writer = try StoreWriter(log: log)
        self.table = table
        lastSequence = recovered.lastSequence
        statistics.sequence = recovered.lastSequence
        statistics.logBytes = logBytes
    }

    deinit { if !isClosed { writer.close() } }

    // MARK: Reading

    /// Number of sessions (durable, with run results applied).
    package var count: Int { table.count }

    /// The session with `id`, if present.
    package func session(id: SessionID) -> Session? { table[id] }

    /// Whether a session with `id` is present, or being registered.
    package func contains(_ id: SessionID) -> Bool {
        table.contains(id) || pendingRegistrations.contains { $0.id == id }
    }

    /// All sessions ordered by `registeredAt`, then id (a sorted copy: O(n log n)), made at its
    /// final size and sorted in place. A run uses ``sessionList`` instead, which copies nothing.
    package var allSessions: [Session] {
        var all: [Session] = []
        all.reserveCapacity(table.count)
        for session in table.frozen { all.append(session) }
        all.sort(by: Self.registrationOrder)
        return all
    }

    /// The same sessions in the same order as a list that shares the store's memory (what a stop
    /// run works from): 4 bytes per session, where ``allSessions`` copies every session.
    package var sessionList: SessionList { table.listInRegistrationOrder() }

    /// The sessions `predicate` picks, ordered by `registeredAt`, then id. Picks first, sorts
    /// after, so that a few sessions out of many cost little.
    package func sessions(where predicate: (Session) -> Bool) -> [Session] {
        var picked = table.frozen.filter(predicate)
        picked.sort(by: Self.registrationOrder)
        return picked
    }

    private static func registrationOrder(_ a: Session, _ b: Session) -> Bool {
        (a.registeredAt, a.id.rawValue) < (b.registeredAt, b.id.rawValue)
    }

    /// Sessions registered by `uid`, ordered by `registeredAt`.
    package func sessions(ownedBy uid: UInt32) -> [Session] { sessions { $0.ownerUID == uid } }

    /// How many sessions name each distinct list of endpoints: questions about endpoints answered
    /// in the time of the few lists, not of the many sessions.
    package var endpointUsage: [[String]: Int] { table.endpointUsage }

    /// Sessions `uid` holds.
    package func count(ownedBy uid: UInt32) -> Int { table.count(ownedBy: uid) }

    /// Sessions `uid` holds or is registering: what `MaxSessionsPerUser=` limits.
    package func heldCount(ownedBy uid: UInt32) -> Int {
        table.count(ownedBy: uid) + pendingRegistrations.filter { $0.ownerUID == uid }.count
    }

    /// Sessions on disk once what is in flight is settled: `count` plus the removals of ended
    /// sessions not yet written. What a stop must report as kept while writes fail.
    package var durableCount: Int { table.count + stagedRuns.removals + (inFlight?.runs.removals ?? 0) }

    /// True while changes are staged or being written.
    package var hasUnsavedChanges: Bool { inFlight != nil || !stagedRuns.isEmpty || !stagedClients.isEmpty }

    /// For tests: holds the writer's commits (`log`) and/or compactions (`snapshots`), as a disk
    /// whose fdatasync takes that long would, until ``releaseWriter(log:snapshots:)`` with the
    /// same arguments, which must come before ``close()``.
    package func holdWriter(log: Bool, snapshots: Bool) { writer.hold(log: log, snapshots: snapshots) }

    /// Lets the writer go on after ``holdWriter(log:snapshots:)``.
    package func releaseWriter(log: Bool, snapshots: Bool) { writer.release(log: log, snapshots: snapshots) }

    /// Readable when the writer has results for ``processCompletions()``.
    package var completionDescriptor: Int32 { writer.wakeDescriptor }

    private var pendingRegistrations: [Session] {
        (stagedClients + (inFlight?.clients ?? [])).compactMap {
            if case .register(let s) = $0.change { return s } else { return nil }
        }
    }

    // MARK: Client changes

    /// Registers `session`; `done` runs once it is durable (nil) or has failed. Throws at once,
    /// and stages nothing, for a duplicate id or a session too large to store.
    package func register(_ session: Session, done: @escaping Completion) throws(StoreError) {
        try checkOpen()
        guard !contains(session.id) else {
            throw StoreError(
                kind: .duplicateSession, message: "session \(session.id) is already registered in \(directoryPath)")
        }
        var w = ByteWriter()
        StoreRecord.register(session).encode(into: &w)
        guard w.bytes.count <= StoreFormat.maxEncodedSessionBytes else {
            throw StoreError(
                kind: .sessionTooLarge,
                message: "session \(session.id) encodes to \(w.bytes.count) bytes, more than the limit of "
                    + "\(StoreFormat.maxEncodedSessionBytes)")
        }
        stagedClients.append(ClientChange(change: .register(session), record: w.bytes, done: done))
        requestSubmit()
    }

    /// Forgets the session `id` without ending it; `done` runs once that is durable (nil) or
    /// has failed. Returns the session, or nil (and does nothing) if it is not registered.
    @discardableResult
    package func unregister(_ id: SessionID, done: @escaping Completion) -> Session? {
        guard !isClosed, let session = table[id] else { return nil }
        var w = ByteWriter()
        StoreRecord.remove(id).encode(into: &w)
        stagedClients.append(ClientChange(change: .unregister(session), record: w.bytes, done: done))
        requestSubmit()
        return session
    }

    // MARK: Run results

    /// A run ended the session at every endpoint: it leaves the store. Returns whether it was
    /// there (nothing is done if not).
    @discardableResult
    package func recordEnded(_ id: SessionID) -> Bool {
        guard !isClosed, table.delete(id) else { return false }
        stagedRuns.append(.remove(id), isRemoval: true)
        requestSubmit()
        return true
    }

    /// Stores a new version of a registered session (same id), e.g. with fewer endpoints left.
    /// Returns false (and does nothing) if it is not registered.
    @discardableResult
    package func replace(_ session: Session) -> Bool {
        guard !isClosed, table.contains(session.id) else { return false }
        table.upsert(session)
        stagedRuns.append(.register(session), isRemoval: false)
        requestSubmit()
        return true
    }

    /// Records the outcome of an end attempt: sets `lastOutcome` and adds `attemptsDelta` to
    /// `attempts`. Returns the updated session, or nil (and does nothing) if absent.
    @discardableResult
    package func recordOutcome(id: SessionID, outcome: String, attemptsDelta: Int) -> Session? {
        guard !isClosed,
            let s = table.update(
                id,
                {
                    $0.attempts = $0.attempts &+ attemptsDelta
                    $0.lastOutcome = outcome
                })
        else { return nil }
        stagedRuns.append(.outcome(id, attempts: s.attempts, lastOutcome: outcome), isRemoval: false)
        requestSubmit()
        return s
    }

    // MARK: Completions and flushing

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
        let deadline = StoreClock.monotonicMicroseconds() + UInt64(max(0, timeoutMilliseconds)) * 1000
        runRetryAt = 0
        if case .recovering(let reason, let retryAt) = health, retryAt != .max {
            health = .recovering(reason, retryAt: 0)
        }
        while !isClosed {
            submit()
            if !hasUnsavedChanges && !isRewriting { return true }
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
            if case .idle = compaction, !hasUnsavedChanges, !isRewriting { return true }
        }
        return false
    }

    /// No compaction from now on (the daemon is stopping: its budget is for ending sessions).
    /// A snapshot already being written is left to finish but the log is not switched.
    package func beginShutdown() { stopping = true }

    /// Stops the writer (a snapshot being written is abandoned) and closes the files. Changes
    /// not yet durable are lost, exactly as in a crash; call ``flush(timeoutMilliseconds:)`` first.
    package func close() {
        guard !isClosed else { return }
        isClosed = true
        writer.close()
        directory.unlock()
    }

    // MARK: Documents

    /// Replaces a small document kept beside the sessions (e.g. the last stop run's summary),
    /// atomically and durably, mode 0600. `name` must be a plain file name.
    package func writeDocument(_ name: String, _ bytes: [UInt8]) throws(StoreError) {
        try checkOpen()
        try directory.writeAtomically(name, bytes)
    }

    /// The same with contents made a piece at a time (see `StoreDirectory.writeAtomically(_:pieces:)`):
    /// `next` fills its argument with the next piece and returns false once there is none.
    package func writeDocument(_ name: String, pieces next: (inout [UInt8]) -> Bool) throws(StoreError) {
        try checkOpen()
        try directory.writeAtomically(name, pieces: next)
    }

    /// Removes the document `name` durably (the directory is synced); nothing if there is none.
    package func removeDocument(_ name: String) throws(StoreError) {
        try checkOpen()
        try directory.removeIfPresent(name)
        try directory.fsyncDirectory()
    }

    /// The document `name`, or nil if there is none (or it cannot be read); of a document larger
    /// than `limit` bytes, its first `limit` bytes.
    package func readDocument(_ name: String, limit: Int = .max) -> [UInt8]? {
        guard !isClosed, let f = try? directory.openExisting(name, flags: O_RDONLY) else { return nil }
        return try? directory.readAll(f, name: name, limit: limit)
    }

    // MARK: Committing

    /// Hands what is staged to the writer (see ``onStaged``).
    package func submitStaged() {
        submissionRequested = false
        submit()
    }

    private func requestSubmit() {
        guard let onStaged else { return submit() }
        guard !submissionRequested else { return }
        submissionRequested = true
        onStaged()
    }

    private var isRewriting: Bool {
        if case .recovering(_, let retryAt) = health, retryAt == .max { return true }
        return false
    }

    /// Hands what is staged to the writer as one commit, unless one is in flight (it then goes
    /// into the next) or the store must recover first.
    private func submit() {
        guard !isClosed, inFlight == nil else { return }
        if case .recovering = health {
            recover()
            return
        }
        if stagedClients.isEmpty && (stagedRuns.isEmpty || StoreClock.monotonicMicroseconds() < runRetryAt) {
            compactIfNeeded()
            return
        }
        var records = stagedRuns
        for change in stagedClients { records.append(encoded: change.record, isRemoval: false) }
        let first = lastSequence &+ 1
        let (bytes, frames) = LogEncoder.commit(records: records.bytes, ends: records.ends, firstSequence: first)
        inFlight = Batch(firstSequence: first, runs: stagedRuns, clients: stagedClients, records: records.count)
        lastSequence = first &+ UInt64(frames - 1)
        stagedRuns = RecordBuffer()
        stagedClients = []
        writer.append(bytes)
    }

    private func appended(_ result: Result<Int, AppendFailure>) {
        guard let batch = inFlight else { return }
        inFlight = nil
        switch result {
        case .success(let logBytes):
            statistics.sequence = lastSequence
            statistics.logBytes = logBytes
            statistics.commits += 1
            statistics.recordsCommitted += batch.records
            runRetryDelay = 0
            for client in batch.clients {
                switch client.change {
                case .register(let s): table.upsert(s)
                case .unregister(let s): table.remove(s.id)
                }
            }
            for client in batch.clients { client.done(nil) }
        case .failure(let failure):
            statistics.failedCommits += 1
            // Run results are true whatever happened to the write: keep them for the next commit.
            stagedRuns = batch.runs + stagedRuns
            let error: StoreError
            switch failure {
            case .notWritten(let e):
                error = e
                lastSequence = batch.firstSequence &- 1  // nothing was written: reuse the numbers
                runRetryDelay = min(5_000_000, max(200_000, runRetryDelay * 2))
                runRetryAt = StoreClock.monotonicMicroseconds() + runRetryDelay
                onEvent?(.commitFailed(e, recovering: false))
            case .syncFailed(let e), .fileGone(let e):
                error = e
                health = .recovering(e, retryAt: 0)
                onEvent?(.commitFailed(e, recovering: true))
            }
            let notSaved = StoreError(
                kind: error.kind, message: "not saved: \(error.message)", path: error.path, offset: error.offset,
                errnoCode: error.errnoCode)
            for client in batch.clients { client.done(notSaved) }
        }
    }

    // MARK: Compaction and recovery

    private func compactIfNeeded() {
        guard !stopping, case .idle = compaction, case .healthy = health,
            statistics.logBytes > Self.emptyLogBytes, StoreClock.monotonicMicroseconds() >= compactionRetryAt,
            table.count == 0
                || compactionPolicy.shouldCompact(
                    logBytes: statistics.logBytes, snapshotBytes: statistics.snapshotBytes)
        else { return }
        startCompaction()
    }

    private func startCompaction() {
        // The snapshot holds what is durable plus run results (true facts, replayed harmlessly
        // by the frames that carry them); client changes in flight enter the table only once
        // durable, so they stay out of it.
        let purpose = SnapshotPurpose(
            kind: .compaction, lastSequence: statistics.sequence, logOffset: statistics.logBytes, sessions: table.count,
            startedAt: StoreClock.monotonicMicroseconds())
        compaction = .writingSnapshot
        writer.writeSnapshot(table.frozen, purpose: purpose, directory: directory, path: directoryPath)
    }

    /// At the end of a stop that ended every session: the log still holds their commits, and so
    /// their keys. Replaces both files by empty ones (a rewrite of nothing, a few small writes,
    /// so it is allowed while stopping) and waits for it, at most `timeoutMilliseconds`. Returns
    /// whether the files now hold no key.
    @discardableResult
    package func eraseIfEmpty(timeoutMilliseconds: Int) -> Bool {
        let deadline = StoreClock.monotonicMicroseconds() + UInt64(max(0, timeoutMilliseconds)) * 1000
        var started = false
        while !isClosed && StoreClock.monotonicMicroseconds() < deadline {
            if case .idle = compaction {
                guard table.count == 0, !hasUnsavedChanges, case .healthy = health else { return false }
                if statistics.logBytes <= Self.emptyLogBytes { return true }
                if started { return false }  // it ran and failed
                started = true
                startCompaction()
            }
            if writer.waitForCompletion(milliseconds: 100) { processCompletions() }
        }
        return false
    }

    /// Starts the rewrite from memory, if it is not running and its retry delay has passed;
    /// client changes that arrive meanwhile fail at once ("not saved") rather than wait.
    private func recover() {
        guard case .recovering(let reason, let retryAt) = health, retryAt != .max else { return }
        guard StoreClock.monotonicMicroseconds() >= retryAt else {
            failStagedClients(with: reason)
            return
        }
        health = .recovering(reason, retryAt: .max)
        // The new snapshot must lie above every number the abandoned log may hold.
        let purpose = SnapshotPurpose(
            kind: .rewrite, lastSequence: lastSequence, logOffset: 0, sessions: table.count,
            startedAt: StoreClock.monotonicMicroseconds())
        // After the directory was deleted or moved, the rewrite goes to the path (made again).
        let sameDirectory = directory.whereabouts() == nil
        writer.writeSnapshot(
            table.frozen, purpose: purpose, directory: sameDirectory ? directory : nil, path: directoryPath)
    }

    private func snapshotWritten(_ purpose: SnapshotPurpose, _ result: Result<StoreWriter.SnapshotWritten, StoreError>)
    {
        switch (purpose.kind, result) {
        case (.compaction, .success(let written)):
            statistics.snapshotBytes = written.bytes
            guard !stopping || purpose.sessions == 0, case .healthy = health else {
                // The snapshot is consistent with the old log (which holds everything after it);
                // the next open switches logs.
                compaction = .idle
                return
            }
            compaction = .switchingLog
            writer.switchLog(purpose: purpose, directory: directory)
        case (.compaction, .failure(let error)):
            compactionFailed(error)
        case (.rewrite, .success(let written)):
            statistics.snapshotBytes = written.bytes
            directory = written.directory
            recreatedDirectory = written.directoryRecreated
            writer.switchLog(purpose: purpose, directory: written.directory)
        case (.rewrite, .failure(let error)):
            recoveryFailed(error)
        }
    }

    private func logSwitched(_ purpose: SnapshotPurpose, _ result: Result<Int, AppendFailure>) {
        switch (purpose.kind, result) {
        case (.compaction, .success(let logBytes)):
            compaction = .idle
            statistics.logBytes = logBytes
            statistics.compactions += 1
            onEvent?(
                .compacted(
                    sessions: purpose.sessions, snapshotBytes: statistics.snapshotBytes,
                    microseconds: StoreClock.monotonicMicroseconds() - purpose.startedAt))
        case (.compaction, .failure(.notWritten(let error))):
            compactionFailed(error)  // the old log, still in place, holds everything after the snapshot
        case (.compaction, .failure(let failure)):
            compaction = .idle
            health = .recovering(failure.error, retryAt: 0)
            onEvent?(.commitFailed(failure.error, recovering: true))
        case (.rewrite, .success(let logBytes)):
            health = .healthy
            statistics.logBytes = logBytes
            statistics.sequence = purpose.lastSequence
            statistics.rewrites += 1
            onEvent?(.recovered(sessions: purpose.sessions, directoryRecreated: recreatedDirectory))
            recreatedDirectory = false
        case (.rewrite, .failure(let failure)):
            recoveryFailed(failure.error)
        }
    }

    private func compactionFailed(_ error: StoreError) {
        compaction = .idle
        compactionRetryAt = StoreClock.monotonicMicroseconds() + UInt64(compactionPolicy.retryDelaySeconds * 1e6)
        onEvent?(.compactionFailed(error))
    }

    private func recoveryFailed(_ error: StoreError) {
        recoveryDelay = min(30_000_000, max(1_000_000, recoveryDelay * 2))
        health = .recovering(error, retryAt: StoreClock.monotonicMicroseconds() + recoveryDelay)
        onEvent?(.recoveryFailed(error))
        failStagedClients(with: error)
    }

    private func failStagedClients(with reason: StoreError) {
        let waiting = stagedClients
        stagedClients = []
        let error = StoreError(
            kind: .recovering,
            message: "not saved: the session store is recovering from an earlier failure (\(reason.message)); "
                + "try again", path: reason.path, errnoCode: reason.errnoCode)
        for client in waiting { client.done(error) }
    }

    private func checkOpen() throws(StoreError) {
        if isClosed {
            throw StoreError(kind: .closed, message: "session store in \(directoryPath) is closed", path: directoryPath)
        }
    }

    private var compactionRetryAt: UInt64 = 0
    private var recoveryDelay: UInt64 = 0
    private var recreatedDirectory = false
    /// A log of only its header: an empty store whose log is longer holds keys of ended
    /// sessions, and is compacted at once (cheaply).
    private static let emptyLogBytes = LogEncoder.header(snapshotSequence: 0, snapshotSessions: 0, createdAt: 0).count
}

/// Whether commits may be written.
private enum Health {
    case healthy
    /// Rewriting (or about to rewrite) from memory after `reason`; `retryAt` is when the next
    /// attempt may start (monotonic µs), `.max` while one is running.
    case recovering(StoreError, retryAt: UInt64)
}

/// Where a compaction is.
private enum Compaction {
    case idle
    case writingSnapshot
    case switchingLog
}

/// A registration or unregistration waiting to be written, with its acknowledgement.
private struct ClientChange {
    enum Change {
        case register(Session)
        case unregister(Session)
    }

    var change: Change
    var record: [UInt8]
    var done: SessionStore.Completion
}

/// A commit handed to the writer.
private struct Batch {
    var firstSequence: UInt64
    var runs: RecordBuffer
    var clients: [ClientChange]
    var records: Int
}

/// Encoded records, each one's end noted (so a commit can be split into frames).
struct RecordBuffer {
    /// Encoded in place: a run's results (one removal per ended session) cost no array each.
    private var writer = ByteWriter()
    private(set) var ends: [Int] = []
    /// How many of them remove a session.
    private(set) var removals = 0

    var bytes: [UInt8] { writer.bytes }
    var isEmpty: Bool { ends.isEmpty }
    var count: Int { ends.count }

    mutating func append(_ record: StoreRecord, isRemoval: Bool) {
        record.encode(into: &writer)
        noteEnd(isRemoval: isRemoval)
    }

    mutating func append(encoded: [UInt8], isRemoval: Bool) {
        writer.bytes += encoded
        noteEnd(isRemoval: isRemoval)
    }

    private mutating func noteEnd(isRemoval: Bool) {
        ends.append(writer.bytes.count)
        if isRemoval { removals += 1 }
    }

    static func + (a: RecordBuffer, b: RecordBuffer) -> RecordBuffer {
        var joined = a
        let shift = a.bytes.count
        joined.writer.bytes += b.bytes
        joined.ends += b.ends.map { $0 + shift }
        joined.removals += b.removals
        return joined
    }
}
