import Glibc

// MARK: - Design
//
// Durable store of registered sessions, kept in the daemon's state directory.
//
// Files (all mode 0600, created with O_CREAT 0600 and then fchmod, so the umask does not matter):
//   sessions.snapshot   full state as of generation G (written only by compaction, via tmp+rename)
//   sessions.log        changes committed since that snapshot, appended one frame per commit
//   *.tmp               half-written replacement files; deleted on open (never authoritative)
//   *.corrupt-<UTC>     damaged data kept for a human; never deleted by the store
// The directory itself is flock()ed so a second daemon cannot open the same store.
//
// Framing (both files): magic FF 53 43 FE | payloadLength u32 LE | crc32 u32 LE | payload,
// crc32 (IEEE) over the length bytes and the payload; payload = generation u64 | recordCount u32 |
// records. Records are compact binary (see StoreCodec.swift): register(session), remove(id),
// outcome(id, absolute attempts, lastOutcome) and, in snapshots only, a header and an end marker
// that both carry the session count. Every record is idempotent (absolute values, overwrite /
// remove), so applying a frame twice changes nothing.
//
// Group commit: register/remove/recordOutcome update the in-memory map and append encoded
// records to a pending buffer. commit() turns the whole buffer into one frame (more only if it
// exceeds 16 MiB), writes it with one pwrite and makes it durable with one fdatasync. Only then
// may the daemon acknowledge. A frame is all-or-nothing on replay, so a batch is atomic.
//
// Crash windows (kill -9, crash or power cut at any instant):
//  * during commit's write / before fdatasync returns: the tail frame is missing or torn; its CRC
//    (or length) fails, replay stops at the last good frame and the tail is cut off (the cut bytes
//    are kept in sessions.log.corrupt-<UTC>). Nothing acknowledged is lost: acks follow fdatasync.
//  * during compaction, before the snapshot rename: the old snapshot and old log are untouched;
//    the stray .tmp is deleted on open.
//  * after the snapshot rename (generation G+1) but before the fresh log replaces the old one:
//    the old log's frames carry generation G < G+1, so replay skips them as already contained in
//    the snapshot, then the log is reset. If frames of generation G+1 follow (new log could not
//    be installed), they are applied and the snapshot is rewritten.
//  * during the log reset: rename is atomic, so the log is either the old (stale) or the empty one.
//  * first start: the empty log is installed before the first snapshot, so "no snapshot, empty
//    log" means an interrupted first start, whereas "no snapshot, log with frames" is reported.
//    Whenever the snapshot is missing, open writes one before returning.
// In memory: a dense [Session] plus an id -> position index (SessionTable.swift), ~440 B/session
// for realistic keys/endpoints; the whole file is read at once and decoded without per-frame
// arrays (frames are validated by a non-allocating pass, then decoded straight into the table).
// Damage that is not a torn tail (a bad frame with good frames after it, or a snapshot that fails
// validation) is never read as "fewer sessions" silently: the file is hard-linked aside to
// <name>.corrupt-<UTC>, every good frame is kept (the scanner resynchronises on the magic; 0xFF/0xFE
// cannot occur inside UTF-8 strings, so a client cannot plant a fake frame in a key or label),
// the recovered state is written as a new snapshot (generation+1) plus an empty log, and
// LoadReport lists each problem with file and byte offset. The original name is only ever replaced
// by rename, after the corrupt copy is linked, so there is no window in which data exists nowhere.
// An fsync/fdatasync failure poisons the store (durability unknown; see fsyncgate): later commits
// throw until the daemon restarts and re-reads what is really on disk.

/// When `compactIfNeeded` rewrites the snapshot.
public struct CompactionPolicy: Sendable, Equatable {
    /// Never compact a log smaller than this.
    public var minimumLogBytes: Int
    /// Compact when the log exceeds this multiple of the snapshot size...
    public var snapshotRatio: Int
    /// ...or this absolute size.
    public var maximumLogBytes: Int

    /// Defaults: at least 64 KiB, and more than 2× the snapshot or more than 4 MiB.
    public init(minimumLogBytes: Int = 64 << 10, snapshotRatio: Int = 2, maximumLogBytes: Int = 4 << 20) {
        self.minimumLogBytes = minimumLogBytes
        self.snapshotRatio = snapshotRatio
        self.maximumLogBytes = maximumLogBytes
    }

    /// Whether a log of `logBytes` next to a snapshot of `snapshotBytes` should be compacted.
    public func shouldCompact(logBytes: Int, snapshotBytes: Int) -> Bool {
        logBytes >= minimumLogBytes
            && (logBytes > snapshotRatio.multipliedReportingOverflow(by: snapshotBytes).partialValue
                || logBytes > maximumLogBytes)
    }
}

/// Counters describing the store's files and work done since open.
public struct StoreStatistics: Sendable, Equatable {
    /// Generation of the current snapshot (log frames carry the same number).
    public var generation: UInt64 = 0
    /// Current log size in bytes.
    public var logBytes = 0
    /// Current snapshot size in bytes.
    public var snapshotBytes = 0
    /// Successful commits that wrote something.
    public var commits = 0
    /// fdatasync calls made by commits (one per non-empty commit).
    public var syncs = 0
    /// Records made durable by commits.
    public var recordsCommitted = 0
    /// Snapshots written (compactions, including any forced by recovery on open).
    public var compactions = 0
}

/// The durable set of sessions. Not thread-safe: confine an instance to one actor or thread.
///
/// Staging (`register`, `remove`, `recordOutcome`) changes the in-memory view immediately;
/// `commit()` makes all staged changes durable with one write and one fdatasync.
public final class SessionStore {
    /// Name of the snapshot file inside the state directory.
    public static let snapshotFileName = "sessions.snapshot"
    /// Name of the log file inside the state directory.
    public static let logFileName = "sessions.log"
    /// Largest encoded size of a single session.
    public static let maxEncodedSessionBytes = 1 << 20
    static let formatVersion: UInt32 = 1
    static let sessionsPerSnapshotFrame = 32

    /// The state directory as given to `open`.
    public let directoryPath: String
    /// Compaction thresholds used by `compactIfNeeded`.
    public var compactionPolicy: CompactionPolicy
    /// File sizes and counters.
    public private(set) var statistics = StoreStatistics()

    private let directory: StoreDirectory
    private var logFD: Int32
    private var table: SessionTable
    private var sortedCache: [Session]?
    private var pending = ByteWriter()
    private var pendingEnds: [Int] = []
    private var failure: StoreError?
    private var isClosed = false

    private init(directory: StoreDirectory, logFD: Int32, sessions: SessionTable, policy: CompactionPolicy) {
        self.directory = directory
        self.directoryPath = directory.path
        self.logFD = logFD
        self.table = sessions
        self.compactionPolicy = policy
    }

    deinit {
        if !isClosed {
            _ = Glibc.close(logFD)
            directory.close()
        }
    }

    /// Closes the files and releases the directory lock. Staged but uncommitted changes are
    /// discarded (exactly as a crash would). Further commits throw `.closed`.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        _ = Glibc.close(logFD)
        directory.close()
    }

    // MARK: Documents

    /// Replaces a small document kept beside the sessions (e.g. the last stop run's summary),
    /// atomically and durably, mode 0600. `name` must be a plain file name.
    public func writeDocument(_ name: String, _ bytes: [UInt8]) throws {
        try checkOpen()
        try directory.writeAtomically(name, bytes)
    }

    /// Removes the document `name` durably (the directory is synced); nothing if there is none.
    public func removeDocument(_ name: String) throws {
        try checkOpen()
        try directory.removeIfPresent(name)
        try directory.fsyncDirectory()
    }

    /// The document `name`, or nil if there is none (or it cannot be read).
    public func readDocument(_ name: String) -> [UInt8]? {
        guard !isClosed, let f = try? directory.openExisting(name, flags: O_RDONLY) else { return nil }
        defer { _ = Glibc.close(f) }
        return try? directory.readAll(f, name: name)
    }

    // MARK: Reading

    /// Number of sessions (including staged changes).
    public var count: Int { table.count }

    /// The session with `id`, if present (including staged changes).
    public func session(id: SessionID) -> Session? { table[id] }

    /// Whether a session with `id` is present.
    public func contains(_ id: SessionID) -> Bool { table.contains(id) }

    /// All sessions ordered by `registeredAt`, then id. Cached until the next change.
    public var allSessions: [Session] {
        if let sortedCache { return sortedCache }
        let sorted = table.sessions.sorted {
            ($0.registeredAt, $0.id.rawValue) < ($1.registeredAt, $1.id.rawValue)
        }
        sortedCache = sorted
        return sorted
    }

    /// Sessions registered by `uid`, ordered by `registeredAt`.
    public func sessions(ownedBy uid: UInt32) -> [Session] { allSessions.filter { $0.ownerUID == uid } }

    /// True when there are staged changes that `commit()` has not yet made durable.
    public var hasPendingChanges: Bool { !pendingEnds.isEmpty }

    /// Number of staged records.
    public var pendingChangeCount: Int { pendingEnds.count }

    // MARK: Staging

    /// Stages a new session. Throws `.duplicateSession` if the id is present and
    /// `.sessionTooLarge` if it encodes to more than `maxEncodedSessionBytes`; nothing is staged then.
    public func register(_ session: Session) throws {
        try checkOpen()
        guard !table.contains(session.id) else {
            throw StoreError(
                kind: .duplicateSession,
                message: "session \(session.id) is already registered in \(directoryPath)")
        }
        let before = pending.bytes.count
        StoreRecord.register(session).encode(into: &pending)
        let size = pending.bytes.count - before
        guard size <= Self.maxEncodedSessionBytes else {
            pending.bytes.removeSubrange(before...)
            throw StoreError(
                kind: .sessionTooLarge,
                message: "session \(session.id) encodes to \(size) bytes, more than the limit of "
                    + "\(Self.maxEncodedSessionBytes)")
        }
        pendingEnds.append(pending.bytes.count)
        table.upsert(session)
        sortedCache = nil
    }

    /// Stages a new version of a registered session (same id), e.g. with fewer endpoints left.
    /// A register record replaces the session on replay, so this is one atomic change.
    /// Returns false (and stages nothing) if the id is not registered.
    @discardableResult
    public func replace(_ session: Session) -> Bool {
        guard !isClosed, table.contains(session.id) else { return false }
        stage(.register(session))
        table.upsert(session)
        sortedCache = nil
        return true
    }

    /// Stages removal of a session; returns it, or nil (and stages nothing) if absent.
    @discardableResult
    public func remove(_ id: SessionID) -> Session? {
        guard !isClosed, let removed = table.remove(id) else { return nil }
        stage(.remove(id))
        sortedCache = nil
        return removed
    }

    /// Stages the outcome of an end attempt: sets `lastOutcome` and adds `attemptsDelta` to
    /// `attempts`. Returns the updated session, or nil (and stages nothing) if absent.
    @discardableResult
    public func recordOutcome(id: SessionID, outcome: String, attemptsDelta: Int) -> Session? {
        guard !isClosed,
            let s = table.update(
                id,
                {
                    $0.attempts = $0.attempts &+ attemptsDelta
                    $0.lastOutcome = outcome
                })
        else { return nil }
        stage(.outcome(id, attempts: s.attempts, lastOutcome: outcome))
        sortedCache = nil
        return s
    }

    private func stage(_ record: StoreRecord) {
        record.encode(into: &pending)
        pendingEnds.append(pending.bytes.count)
    }

    private func checkOpen() throws(StoreError) {
        if isClosed {
            throw StoreError(kind: .closed, message: "session store in \(directoryPath) is closed", path: directoryPath)
        }
        if let failure { throw failure }
    }

    // MARK: Durability

    /// Makes every staged change durable: one write of one frame (more only past 16 MiB), then
    /// one fdatasync. Returns only when the data is on stable storage; acknowledge afterwards.
    ///
    /// If the write fails, the log is cut back to its previous length and the changes stay
    /// staged (a later commit retries them). If fdatasync fails the store is poisoned.
    public func commit() throws {
        try checkOpen()
        guard !pendingEnds.isEmpty else { return }
        let generation = statistics.generation
        var out: [UInt8] = []
        out.reserveCapacity(pending.bytes.count + StoreFrame.headerSize + StoreFrame.payloadPrefixSize)
        var frames = 0
        pending.bytes.withUnsafeBytes { raw in
            var i = 0
            var start = 0
            let limit = StoreFrame.maxPayload - StoreFrame.payloadPrefixSize
            while i < pendingEnds.count {
                var j = i + 1
                while j < pendingEnds.count && pendingEnds[j] - start <= limit { j += 1 }
                let end = pendingEnds[j - 1]
                StoreFrame.append(
                    generation: generation, recordCount: j - i,
                    records: UnsafeRawBufferPointer(rebasing: raw[start..<end]), to: &out)
                frames += 1
                start = end
                i = j
            }
        }
        let offset = statistics.logBytes
        do throws(StoreError) {
            try directory.writeAll(logFD, out, at: offset, name: Self.logFileName)
        } catch {
            if ftruncate(logFD, off_t(offset)) != 0 {
                failure = StoreError(
                    kind: .failed,
                    message: "log \(directory.fullPath(Self.logFileName)) could not be cut back to byte \(offset) "
                        + "after a failed write (\(errnoText(errno))); restart to recover",
                    path: directory.fullPath(Self.logFileName), offset: offset)
            }
            throw error
        }
        guard fdatasync(logFD) == 0 else {
            let e = errno
            let err = StoreError(
                kind: .failed,
                message: "fdatasync failed for \(directory.fullPath(Self.logFileName)) after writing "
                    + "\(out.count) bytes at byte \(offset): \(errnoText(e)); durability unknown, "
                    + "store refuses further commits until restart",
                path: directory.fullPath(Self.logFileName), offset: offset, errnoCode: e)
            failure = err
            throw err
        }
        statistics.logBytes = offset + out.count
        statistics.commits += 1
        statistics.syncs += 1
        statistics.recordsCommitted += pendingEnds.count
        pending.bytes.removeAll(keepingCapacity: pending.bytes.capacity <= 1 << 20)
        pendingEnds.removeAll(keepingCapacity: true)
    }

    /// Compacts when `compactionPolicy` says the log has grown too large. Returns whether it did.
    @discardableResult
    public func compactIfNeeded() throws -> Bool {
        guard compactionPolicy.shouldCompact(logBytes: statistics.logBytes, snapshotBytes: statistics.snapshotBytes)
        else { return false }
        try compact()
        return true
    }

    /// Writes a snapshot of the current state (generation + 1) and starts an empty log.
    /// Staged changes are committed first.
    public func compact() throws {
        try checkOpen()
        if hasPendingChanges { try commit() }
        let newGeneration = statistics.generation + 1
        let bytes = Self.encodeSnapshot(table.sessions, count: table.count, generation: newGeneration)
        do throws(StoreError) {
            try directory.writeAtomically(Self.snapshotFileName, bytes)
        } catch {
            // The rename may have happened (e.g. the directory fsync failed). Appending frames of
            // the old generation after a newer snapshot would make them stale: refuse instead.
            failure = StoreError(
                kind: .failed, message: "compaction failed: \(error.message); restart to recover",
                path: error.path, offset: error.offset, errnoCode: error.errnoCode)
            throw error
        }
        statistics.generation = newGeneration
        statistics.snapshotBytes = bytes.count
        statistics.compactions += 1
        try resetLog()
    }

    /// Installs an empty log by rename and reopens it. Any failure poisons the store, because
    /// the open descriptor might then refer to a file that is no longer the log.
    private func resetLog() throws(StoreError) {
        do throws(StoreError) {
            try directory.writeAtomically(Self.logFileName, [])
            guard let fd = try directory.openExisting(Self.logFileName, flags: O_RDWR) else {
                throw StoreError.io("open", path: directory.fullPath(Self.logFileName), errno: ENOENT)
            }
            _ = Glibc.close(logFD)
            logFD = fd
            statistics.logBytes = 0
        } catch {
            failure = StoreError(
                kind: .failed, message: "log reset failed: \(error.message); restart to recover",
                path: error.path, offset: error.offset, errnoCode: error.errnoCode)
            throw error
        }
    }

    static func encodeSnapshot<S: Sequence>(_ sessions: S, count: Int, generation: UInt64) -> [UInt8]
    where S.Element == Session {
        var out: [UInt8] = []
        out.reserveCapacity(count * 128 + 256)
        var w = ByteWriter(capacity: 80 << 10)
        func flush(_ records: Int) {
            w.bytes.withUnsafeBytes {
                StoreFrame.append(generation: generation, recordCount: records, records: $0, to: &out)
            }
            w.bytes.removeAll(keepingCapacity: true)
        }
        StoreRecord.snapshotHeader(
            formatVersion: formatVersion, sessionCount: UInt64(count), createdAt: wallClockMicroseconds()
        )
        .encode(into: &w)
        flush(1)
        var inFrame = 0
        for s in sessions {
            StoreRecord.register(s).encode(into: &w)
            inFrame += 1
            if inFrame == sessionsPerSnapshotFrame || w.bytes.count >= 64 << 10 {
                flush(inFrame)
                inFrame = 0
            }
        }
        if inFrame > 0 { flush(inFrame) }
        StoreRecord.snapshotEnd(sessionCount: UInt64(count)).encode(into: &w)
        flush(1)
        return out
    }

    // MARK: Opening

    /// Opens the store in `directory` (which must exist), recovering from any crash, and reports
    /// what it found. Throws if the directory cannot be opened, locked, read or written, or if a
    /// file was written by a newer format: the daemon must then refuse to start.
    public static func open(
        directory path: String, compactionPolicy: CompactionPolicy = CompactionPolicy()
    ) throws -> (SessionStore, LoadReport) {
        let clock = SystemMonotonicClock()
        let started = clock.now()
        let dir = try StoreDirectory.open(path)
        do {
            try dir.lock()
            var (store, report) = try load(dir, policy: compactionPolicy)
            report.durationMicroseconds = UInt64(max(0, clock.now().duration(since: started).microseconds))
            return (store, report)
        } catch {
            dir.close()
            throw error
        }
    }

    private static func readFile(_ dir: StoreDirectory, _ name: String, flags: Int32) throws(StoreError) -> (
        fd: Int32, bytes: [UInt8]
    )? {
        guard let fd = try dir.openExisting(name, flags: flags) else { return nil }
        do throws(StoreError) {
            return (fd, try dir.readAll(fd, name: name))
        } catch {
            _ = Glibc.close(fd)
            throw error
        }
    }

    private static func unsupported(_ path: String, offset: Int, tag: UInt8) -> StoreError {
        StoreError(
            kind: .unsupportedFormat,
            message: "\(path) holds record type \(tag) at byte \(offset), which this version does not "
                + "understand (written by a newer session-cleanup?); refusing to open",
            path: path, offset: offset)
    }

    // swiftlint:disable:next function_body_length cyclomatic_complexity
    private static func load(_ dir: StoreDirectory, policy: CompactionPolicy) throws(StoreError) -> (
        SessionStore, LoadReport
    ) {
        let snapshotPath = dir.fullPath(snapshotFileName)
        let logPath = dir.fullPath(logFileName)
        try dir.removeIfPresent(snapshotFileName + ".tmp")
        try dir.removeIfPresent(logFileName + ".tmp")

        var report = LoadReport()
        let snapshotFile = try readFile(dir, snapshotFileName, flags: O_RDONLY)
        if let snapshotFile { _ = Glibc.close(snapshotFile.fd) }
        var logFile = try readFile(dir, logFileName, flags: O_RDWR)
        var logFD: Int32 = logFile?.fd ?? -1
        func closeLog() {
            if logFD >= 0 {
                _ = Glibc.close(logFD)
                logFD = -1
            }
        }

        // A brand-new (or interrupted first-start) directory.
        if snapshotFile == nil, logFile?.bytes.isEmpty ?? true {
            closeLog()
            try dir.writeAtomically(logFileName, [])
            let snapshot = encodeSnapshot([Session](), count: 0, generation: 1)
            try dir.writeAtomically(snapshotFileName, snapshot)
            guard let fd = try dir.openExisting(logFileName, flags: O_RDWR) else {
                throw StoreError.io("open", path: logPath, errno: ENOENT)
            }
            let store = SessionStore(directory: dir, logFD: fd, sessions: SessionTable(), policy: policy)
            store.statistics.generation = 1
            store.statistics.snapshotBytes = snapshot.count
            report.generation = 1
            report.createdNewStore = true
            return (store, report)
        }

        var sessions = SessionTable()
        var snapshotGeneration: UInt64?
        var snapshotCorrupt = false
        var highestGeneration: UInt64 = 0

        // Snapshot.
        if let snapshotFile {
            let read = snapshotFile.bytes.withUnsafeBytes { readSnapshot($0) }
            if let u = read.unknownTag { throw unsupported(snapshotPath, offset: u.offset, tag: u.tag) }
            if let version = read.formatVersion, version > formatVersion {
                throw StoreError(
                    kind: .unsupportedFormat,
                    message: "\(snapshotPath) has format version \(version); this version reads up to "
                        + "\(formatVersion); refusing to open",
                    path: snapshotPath, offset: 0)
            }
            sessions = read.table
            snapshotGeneration = read.generation
            highestGeneration = read.highestGeneration
            if !read.reasons.isEmpty {
                snapshotCorrupt = true
                report.problems.append(
                    StoreProblem(
                        kind: .corruptSnapshot, path: snapshotPath, offset: read.damage.first?.start,
                        frameNumber: read.damage.first?.frameNumber,
                        bytesAffected: read.damage.reduce(0) { $0 + ($1.end - $1.start) },
                        detail: "snapshot failed validation (" + read.reasons.prefix(8).joined(separator: "; ")
                            + (read.reasons.count > 8 ? "; …" : "")
                            + "); kept \(read.table.count) sessions from good frames"))
            }
            report.snapshotSessions = sessions.count
        }

        // Log.
        var logDamaged = false
        var tail: StoreFrame.Damage?
        var appliedFrames = 0
        var newerFrames = 0
        var logGoodEnd = 0
        if let file = logFile {
            let scan = file.bytes.withUnsafeBytes { raw -> StoreFrame.ScanResult in
                let scan = StoreFrame.scan(raw)
                guard scan.unknownTag == nil else { return scan }
                for frame in scan.frames {
                    highestGeneration = max(highestGeneration, frame.generation)
                    if let g = snapshotGeneration {
                        if frame.generation < g {
                            report.staleLogFramesSkipped += 1
                            continue
                        }
                        if frame.generation > g { newerFrames += 1 }
                    }
                    appliedFrames += 1
                    do throws(DecodeError) {
                        try StoreFrame.forEachRecord(raw, frame) { record in
                            if apply(record, to: &sessions) {
                                report.logRecordsApplied += 1
                            } else {
                                report.orphanRecords += 1
                            }
                        }
                    } catch {
                        // Unreachable: `scan` walked every record of this frame already.
                        report.orphanRecords += 1
                    }
                }
                return scan
            }
            if let u = scan.unknownTag { throw unsupported(logPath, offset: u.offset, tag: u.tag) }
            logGoodEnd = scan.goodEnd
            report.logFramesApplied = appliedFrames
            for d in scan.damage {
                if d.reachesEnd {
                    tail = d
                    report.droppedTailBytes = d.end - d.start
                    report.problems.append(
                        StoreProblem(
                            kind: .truncatedLogTail, path: logPath, offset: d.start, frameNumber: d.frameNumber,
                            bytesAffected: d.end - d.start,
                            detail: "\(d.reason); cut the log after the last good frame"))
                } else {
                    logDamaged = true
                    report.problems.append(
                        StoreProblem(
                            kind: .corruptLogRecord, path: logPath, offset: d.start, frameNumber: d.frameNumber,
                            bytesAffected: d.end - d.start,
                            detail: "\(d.reason); skipped to the next good frame at byte \(d.end)"))
                }
            }
            if snapshotFile == nil, !scan.frames.isEmpty {
                report.problems.append(
                    StoreProblem(
                        kind: .missingSnapshot, path: snapshotPath, offset: nil, frameNumber: nil, bytesAffected: 0,
                        detail: "snapshot missing but the log holds \(scan.frames.count) committed frames; "
                            + "sessions from before the last compaction may be lost"))
            }
        } else {
            report.problems.append(
                StoreProblem(
                    kind: .missingLog, path: logPath, offset: nil, frameNumber: nil, bytesAffected: 0,
                    detail: "log missing; changes committed since the last compaction may be lost"))
        }
        if newerFrames > 0, let g = snapshotGeneration {
            report.problems.append(
                StoreProblem(
                    kind: .generationMismatch, path: logPath, offset: nil, frameNumber: nil, bytesAffected: 0,
                    detail: "\(newerFrames) log frames are newer than snapshot generation \(g); applied them"))
        }

        // Repair. Order matters: preserve damaged bytes first, then replace files only by rename.
        if let tail, let file = logFile {
            report.preservedFiles.append(
                try dir.preserveBytes(Array(file.bytes[tail.start..<tail.end]), from: logFileName))
        }
        if logDamaged { report.preservedFiles.append(try dir.preserve(logFileName)) }
        if snapshotCorrupt { report.preservedFiles.append(try dir.preserve(snapshotFileName)) }

        let needsSnapshot =
            snapshotCorrupt || logDamaged || newerFrames > 0 || snapshotFile == nil
            || (report.staleLogFramesSkipped > 0 && appliedFrames > 0)
        var generation = snapshotGeneration ?? highestGeneration
        var snapshotBytes = snapshotFile?.bytes.count ?? 0
        if needsSnapshot {
            generation = max(snapshotGeneration ?? 0, highestGeneration) + 1
            let bytes = encodeSnapshot(sessions.sessions, count: sessions.count, generation: generation)
            try dir.writeAtomically(snapshotFileName, bytes)
            snapshotBytes = bytes.count
            report.rewroteSnapshot = true
        }
        var logBytes = logGoodEnd
        if needsSnapshot || report.staleLogFramesSkipped > 0 || logFile == nil {
            closeLog()
            logFile = nil
            try dir.writeAtomically(logFileName, [])
            logBytes = 0
        } else if tail != nil {
            guard ftruncate(logFD, off_t(logGoodEnd)) == 0 else {
                let e = errno
                closeLog()
                throw StoreError.io("ftruncate to \(logGoodEnd) bytes", path: logPath, errno: e)
            }
            guard fsync(logFD) == 0 else {
                let e = errno
                closeLog()
                throw StoreError.io("fsync after truncating torn tail", path: logPath, errno: e)
            }
        }
        if logFD < 0 {
            guard let fd = try dir.openExisting(logFileName, flags: O_RDWR) else {
                throw StoreError.io("open", path: logPath, errno: ENOENT)
            }
            logFD = fd
        }
        guard fchmod(logFD, 0o600) == 0 else {
            let e = errno
            closeLog()
            throw StoreError.io("fchmod(0600)", path: logPath, errno: e)
        }

        let store = SessionStore(directory: dir, logFD: logFD, sessions: sessions, policy: policy)
        store.statistics.generation = generation
        store.statistics.logBytes = logBytes
        store.statistics.snapshotBytes = snapshotBytes
        if needsSnapshot { store.statistics.compactions = 1 }
        report.generation = generation
        report.sessionCount = sessions.count
        return (store, report)
    }

    /// What a snapshot file held.
    struct SnapshotRead {
        var table = SessionTable()
        var generation: UInt64?
        var highestGeneration: UInt64 = 0
        var formatVersion: UInt32?
        /// Why the snapshot is not intact; empty when it is.
        var reasons: [String] = []
        var damage: [StoreFrame.Damage] = []
        var unknownTag: (offset: Int, tag: UInt8)?
    }

    /// Validates a snapshot and collects every session from its good frames.
    static func readSnapshot(_ raw: UnsafeRawBufferPointer) -> SnapshotRead {
        var read = SnapshotRead()
        let scan = StoreFrame.scan(raw)
        read.damage = scan.damage
        if let u = scan.unknownTag {
            read.unknownTag = u
            return read
        }
        var headerCount: UInt64?
        var endCount: UInt64?
        if let first = scan.frames.first, first.offset == 0, first.recordCount == 1,
            let records = try? StoreFrame.records(raw, first),
            case .snapshotHeader(let version, let count, _) = records.first
        {
            read.formatVersion = version
            read.generation = first.generation
            headerCount = count
            read.table = SessionTable(minimumCapacity: Int(min(count, UInt64(raw.count / 16))))
        } else {
            read.reasons.append("no valid header frame at byte 0")
        }
        if let last = scan.frames.last, last.recordCount == 1,
            let records = try? StoreFrame.records(raw, last),
            case .snapshotEnd(let count) = records.first
        {
            endCount = count
        } else {
            read.reasons.append("no valid end frame (file truncated?)")
        }
        var registered = 0
        for (index, frame) in scan.frames.enumerated() {
            read.highestGeneration = max(read.highestGeneration, frame.generation)
            if let g = read.generation, frame.generation != g {
                read.reasons.append(
                    "frame \(index) at byte \(frame.offset) has generation \(frame.generation), header says \(g)")
            }
            let isMarkerFrame = index == 0 || index == scan.frames.count - 1
            do throws(DecodeError) {
                try StoreFrame.forEachRecord(raw, frame) { record in
                    switch record {
                    case .register(let s):
                        read.table.upsert(s)
                        registered += 1
                    case .snapshotHeader, .snapshotEnd:
                        if !isMarkerFrame {
                            read.reasons.append("unexpected marker record in frame \(index) at byte \(frame.offset)")
                        }
                    case .remove, .outcome:
                        read.reasons.append("log record in snapshot frame \(index) at byte \(frame.offset)")
                    }
                }
            } catch {
                read.reasons.append("frame \(index) at byte \(frame.offset): \(error.reason)")
            }
        }
        if let h = headerCount, let e = endCount, h != e || h != UInt64(registered) {
            read.reasons.append("session count mismatch: header \(h), end \(e), found \(registered)")
        }
        for d in scan.damage {
            read.reasons.append("bytes \(d.start)..<\(d.end) (frame \(d.frameNumber)): \(d.reason)")
        }
        if read.generation == nil, !scan.frames.isEmpty { read.generation = read.highestGeneration }
        return read
    }

    /// Applies one record; returns false when it refers to an unknown session (or is a marker).
    static func apply(_ record: StoreRecord, to sessions: inout SessionTable) -> Bool {
        switch record {
        case .register(let s):
            sessions.upsert(s)
            return true
        case .remove(let id):
            return sessions.remove(id) != nil
        case .outcome(let id, let attempts, let lastOutcome):
            return sessions.update(id) {
                $0.attempts = attempts
                $0.lastOutcome = lastOutcome
            } != nil
        case .snapshotHeader, .snapshotEnd:
            return false
        }
    }
}
