import Dispatch
import Glibc
import Synchronization

/// Why a snapshot is written, and of what.
struct SnapshotPurpose: Sendable {
    enum Kind: Sendable {
        /// The log grew too long: the new log carries over the commits made while the snapshot
        /// was being written.
        case compaction
        /// A sync failed or the directory vanished: the whole state is written from memory into
        /// new files (the directory made again if need be) and the old log is abandoned.
        case rewrite
    }

    var kind: Kind
    /// The last commit the snapshot contains.
    var lastSequence: UInt64
    /// Where that commit's frame ends in the log of the time: the commits a compaction carries
    /// into the new log start there.
    var logOffset: Int
    /// Sessions it holds.
    var sessions: Int
    /// When the work began (monotonic µs), to report how long it took.
    var startedAt: UInt64
}

/// The store's file work, away from the thread that owns the store (the daemon's event loop):
/// a log queue appends commits (one write, one fdatasync each) and switches to new logs; a
/// snapshot queue writes snapshots, so a compaction never holds up a commit. Results come back
/// through ``takeCompletions()``, announced on a pipe the owner watches (``wakeDescriptor``).
final class StoreWriter: Sendable {
    /// The result of one piece of work, for the owner.
    enum Completion: Sendable {
        /// An append finished; on success, the log's length after it.
        case appended(Result<Int, AppendFailure>)
        /// A snapshot was written (into the directory given back), or not.
        case snapshotWritten(SnapshotPurpose, Result<SnapshotWritten, StoreError>)
        /// The log was switched (its length after), or not.
        case logSwitched(SnapshotPurpose, Result<Int, AppendFailure>)
    }

    struct SnapshotWritten: Sendable {
        var directory: StoreDirectory
        var bytes: Int
        var directoryRecreated: Bool
    }

    private let logQueue = DispatchQueue(label: "session-store.log")
    private let snapshotQueue = DispatchQueue(label: "session-store.snapshot")
    /// The current log; only the log queue (and `init`, `close`) touch it. Nil once closed.
    private let log: Mutex<LogFile?>
    /// What snapshots seal session keys with; nil: they are written in clear.
    private let storeKey: StoreKey?
    private let inbox = PThreadLocked<[Completion]>([])
    /// A pipe: the writer puts a byte in whenever it posts, the owner empties it when it takes.
    private let wake: FileDescriptor
    private let wakeWriter: FileDescriptor
    /// Set by `close`: a snapshot being written stops at its next piece.
    private let closing = Atomic<Bool>(false)

    init(log: sending LogFile, storeKey: StoreKey?) throws(StoreError) {
        self.storeKey = storeKey
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw StoreError.io("pipe", path: log.directory.path, errno: errno) }
        wake = FileDescriptor(ends[0])
        wakeWriter = FileDescriptor(ends[1])
        for end in ends {
            guard fcntl(end, F_SETFL, O_NONBLOCK) == 0, fcntl(end, F_SETFD, FD_CLOEXEC) == 0 else {
                throw StoreError.io("fcntl of the writer's pipe", path: log.directory.path, errno: errno)
            }
        }
        self.log = Mutex(log)
    }

    /// Readable when completions are waiting.
    var wakeDescriptor: Int32 { wake.raw }

    /// Appends `frames` to the log and makes them durable.
    func append(_ frames: [UInt8]) {
        logQueue.async { [self] in
            let result = log.withLock { file -> Result<Int, AppendFailure> in
                guard let file else { return .failure(.notWritten(Self.closedError)) }
                do throws(AppendFailure) {
                    try file.append(frames)
                    return .success(file.logicalEnd)
                } catch {
                    return .failure(error)
                }
            }
            post(.appended(result))
        }
    }

    /// Writes a snapshot of `sessions` into `directory`, or, when it is nil, into the directory
    /// at `path`, made again if it is gone (a rewrite after the directory was deleted).
    func writeSnapshot(
        _ sessions: FrozenSessions, purpose: SnapshotPurpose, directory: StoreDirectory?, path: String
    ) {
        snapshotQueue.async { [self] in
            let result: Result<SnapshotWritten, StoreError>
            do throws(StoreError) {
                var recreated = false
                let target: StoreDirectory
                if let directory {
                    target = directory
                } else {
                    (target, recreated) = try Self.reopenDirectory(path)
                }
                let bytes = try SnapshotFile.write(
                    sessions, lastSequence: purpose.lastSequence, in: target, sealingWith: storeKey,
                    isCancelled: { closing.load(ordering: .relaxed) })
                result = .success(SnapshotWritten(directory: target, bytes: bytes, directoryRecreated: recreated))
            } catch {
                result = .failure(error)
            }
            post(.snapshotWritten(purpose, result))
        }
    }

    /// Replaces the log with a new one in `directory` continuing the snapshot of `purpose`. For a
    /// compaction it carries over the commits after the snapshot's last sequence; for a rewrite
    /// it carries nothing (the snapshot holds everything, and the old log is not trusted).
    func switchLog(purpose: SnapshotPurpose, directory: StoreDirectory) {
        logQueue.async { [self] in
            let header = LogEncoder.header(
                snapshotSequence: purpose.lastSequence, snapshotSessions: purpose.sessions,
                createdAt: StoreClock.wallMicroseconds())
            let result = log.withLock { file -> Result<Int, AppendFailure> in
                guard let current = file else { return .failure(.notWritten(Self.closedError)) }
                do throws(StoreError) {
                    var contents = header
                    if case .compaction = purpose.kind { contents += try current.bytes(from: purpose.logOffset) }
                    let replacement = try LogFile.create(in: directory, contents: contents)
                    file = replacement
                    return .success(replacement.logicalEnd)
                } catch {
                    return .failure(error.kind == .syncFailed ? .syncFailed(error) : .notWritten(error))
                }
            }
            post(.logSwitched(purpose, result))
        }
    }

    /// The results that have arrived, oldest first.
    func takeCompletions() -> [Completion] {
        var drained = [UInt8](repeating: 0, count: 256)
        while read(wake.raw, &drained, drained.count) > 0 {}
        return inbox.withLock { waiting in
            let taken = waiting
            waiting = []
            return taken
        }
    }

    /// Waits up to `milliseconds` for a completion to arrive; returns whether one did.
    func waitForCompletion(milliseconds: Int32) -> Bool {
        var pfd = pollfd(fd: wake.raw, events: Int16(POLLIN), revents: 0)
        while true {
            let n = poll(&pfd, 1, milliseconds)
            if n < 0 && errno == EINTR { continue }
            return n > 0
        }
    }

    /// For tests: holds the log queue (commits) and/or the snapshot queue (compactions, rewrites):
    /// what is handed to them waits, as behind a disk whose fdatasync takes that long, until
    /// ``release(log:snapshots:)`` with the same arguments (before ``close()``).
    func hold(log: Bool, snapshots: Bool) {
        if log { logQueue.suspend() }
        if snapshots { snapshotQueue.suspend() }
    }

    /// Lets a queue ``hold(log:snapshots:)`` held go on.
    func release(log: Bool, snapshots: Bool) {
        if log { logQueue.resume() }
        if snapshots { snapshotQueue.resume() }
    }

    /// Stops a snapshot being written at its next piece and waits for all queued work.
    func close() {
        closing.store(true, ordering: .relaxed)
        snapshotQueue.sync {}
        logQueue.sync {}
        log.withLock { $0 = nil }
    }

    private static let closedError = StoreError(kind: .closed, message: "the session store is closed")

    private func post(_ completion: Completion) {
        inbox.withLock { $0.append(completion) }
        var one: UInt8 = 1
        _ = write(wakeWriter.raw, &one, 1)  // EAGAIN: the pipe is full, so it is readable anyway
    }

    /// Opens the directory at `path` again (creating it if it was deleted) and locks it.
    private static func reopenDirectory(_ path: String) throws(StoreError) -> (StoreDirectory, recreated: Bool) {
        var recreated = false
        if access(path, F_OK) != 0 {
            try StoreDirectory.create(path)
            recreated = true
        }
        let directory = try StoreDirectory.open(path)
        try directory.lock()
        return (directory, recreated)
    }
}
