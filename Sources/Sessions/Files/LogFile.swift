import Basics
import Glibc

/// Why an append did not make a commit durable, by what it means for the log file.
enum AppendFailure: Error, Sendable {
    /// Nothing became durable and the log is as good as before (e.g. ENOSPC while extending it):
    /// a later append may simply try again.
    case notWritten(StoreError)
    /// fdatasync failed. Linux may have dropped the dirty pages and cleared the error, so a later
    /// fsync proving nothing about them (fsyncgate): the file must not be trusted again.
    case syncFailed(StoreError)
    /// The data reached a file that is no longer the store's log (the state directory or the log
    /// was deleted or moved): it will not be found at the next start.
    case fileGone(StoreError)

    var error: StoreError {
        switch self {
        case .notWritten(let e), .syncFailed(let e), .fileGone(let e): return e
        }
    }
}

/// The open log (docs/store-format.md, "The log"): appends commit frames at the end of the last
/// intact frame and keeps a reserve of zero bytes after it, extended ahead of need so that a
/// full disk is found before a commit is written, not halfway through it.
///
/// Not thread-safe: one thread at a time (the store's log writer, or `open` before it exists).
final class LogFile {
    static let name = StoreFormat.logFileName

    let directory: StoreDirectory
    private let descriptor: FileDescriptor
    /// End of the last intact frame: where the next commit goes.
    private(set) var logicalEnd: Int
    /// The file's size: always at least `logicalEnd + logReserveMinimum`.
    private(set) var allocatedEnd: Int
    /// End of bytes past `logicalEnd` that a failed write may have left non-zero; the next
    /// append overwrites them with zeros.
    private var dirtyEnd: Int
    /// Set when a sync failed or the file stopped being the store's log: from then on nothing is
    /// written to it or read from it again (what a failed fsync lost cannot be known).
    private(set) var abandoned: StoreError?

    private var path: String { directory.fullPath(Self.name) }

    /// The existing log, `size` bytes long, whose last intact frame ends at `logicalEnd`.
    init(directory: StoreDirectory, descriptor: consuming FileDescriptor, logicalEnd: Int, size: Int) {
        self.directory = directory
        self.descriptor = descriptor
        self.logicalEnd = logicalEnd
        self.allocatedEnd = size
        self.dirtyEnd = logicalEnd
    }

    /// Replaces the log with a new one holding `contents` (a header frame and maybe carried-over
    /// commit frames) and its reserve, durably (temporary file, fsync, rename, directory fsync).
    static func create(in directory: StoreDirectory, contents: [UInt8]) throws(StoreError) -> LogFile {
        let size = contents.count + growth(for: contents.count)
        let fd = try directory.replaceAtomically(name) { f throws(StoreError) in
            try directory.writeAll(f, contents, at: 0, name: name + ".tmp")
            try extend(f, from: contents.count, to: size, path: directory.fullPath(name + ".tmp"))
        }
        return LogFile(directory: directory, descriptor: fd, logicalEnd: contents.count, size: size)
    }

    /// Appends `frames` and makes them durable (one write, one fdatasync), then checks that the
    /// file is still the store's log. Returns only when the commit can be acknowledged.
    func append(_ frames: [UInt8]) throws(AppendFailure) {
        if let abandoned { throw .syncFailed(abandoned) }
        do throws(AppendFailure) {
            try write(frames)
        } catch {
            if case .notWritten = error {} else { abandoned = error.error }
            throw error
        }
    }

    private func write(_ frames: [UInt8]) throws(AppendFailure) {
        let writeEnd = logicalEnd + frames.count
        try ensureRoom(upTo: writeEnd)
        var bytes = frames
        if dirtyEnd > writeEnd { bytes.append(contentsOf: repeatElement(0, count: dirtyEnd - writeEnd)) }
        do throws(StoreError) {
            try directory.writeAll(descriptor, bytes, at: logicalEnd, name: Self.name)
        } catch {
            dirtyEnd = max(dirtyEnd, logicalEnd + bytes.count)
            clearBestEffort(logicalEnd..<dirtyEnd)
            throw .notWritten(error)
        }
        guard fdatasync(descriptor.raw) == 0 else {
            throw .syncFailed(Self.syncError("fdatasync", path: path, errno: errno))
        }
        if let gone = whereabouts() { throw .fileGone(gone) }
        logicalEnd = writeEnd
        dirtyEnd = writeEnd
    }

    /// Overwrites `range` (a torn or cut tail found at open) with zeros, gives the log back its
    /// reserve if a cut took it, and makes that durable.
    func repairTail(clearing range: Range<Int>?) throws(StoreError) {
        if let range, !range.isEmpty {
            try directory.writeAll(
                descriptor, [UInt8](repeating: 0, count: range.count), at: range.lowerBound, name: Self.name)
        }
        do throws(AppendFailure) {
            try ensureRoom(upTo: logicalEnd)
        } catch {
            throw error.error
        }
        try directory.fsyncFile(descriptor, name: Self.name)
    }

    /// The bytes of the commit frames after `offset` (for carrying them into a new log).
    func bytes(from offset: Int) throws(StoreError) -> [UInt8] {
        if let abandoned { throw abandoned }
        let start = min(max(0, offset), logicalEnd)
        var failure: StoreError?
        let raw = descriptor.raw
        let bytes = [UInt8](unsafeUninitializedCapacity: logicalEnd - start) { buffer, initialized in
            while initialized < buffer.count {
                let n = pread(
                    raw, buffer.baseAddress.map { $0 + initialized }, buffer.count - initialized,
                    off_t(start + initialized))
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else {
                    failure = StoreError.io("read", path: path, errno: n < 0 ? errno : EIO, offset: start + initialized)
                    return
                }
                initialized += n
            }
        }
        if let failure { throw failure }
        return bytes
    }

    /// Nil while this file is still the log in the store's directory; otherwise an error saying
    /// what became of it.
    func whereabouts() -> StoreError? {
        var st = stat()
        let problem: String?
        if fstat(descriptor.raw, &st) != 0 {
            problem = "fstat failed: \(Errno(errno))"
        } else if st.st_nlink == 0 {
            problem = "the log file was deleted"
        } else {
            problem = directory.whereabouts().map { "the state directory: \($0)" }
        }
        return problem.map {
            StoreError(
                kind: .directoryGone, message: "\(path) is no longer the store's log (\($0))", path: directory.path)
        }
    }

    /// Extends the file when fewer than `logReserveMinimum` bytes would be left after `end`, by
    /// a growth step, and syncs the new size before anything is written into it (so that a crash
    /// can never leave a frame at the very end of the file, which would read as a cut).
    private func ensureRoom(upTo end: Int) throws(AppendFailure) {
        guard end + StoreFormat.logReserveMinimum > allocatedEnd else { return }
        let size = max(end + StoreFormat.logReserveMinimum, allocatedEnd + Self.growth(for: end))
        do throws(StoreError) {
            try Self.extend(descriptor, from: allocatedEnd, to: size, path: path)
        } catch {
            throw .notWritten(error)
        }
        guard fsync(descriptor.raw) == 0 else {
            throw .syncFailed(Self.syncError("fsync after extending", path: path, errno: errno))
        }
        allocatedEnd = size
    }

    private static func syncError(_ operation: String, path: String, errno code: Int32) -> StoreError {
        StoreError(
            kind: .syncFailed, message: "\(operation) failed for \(path): \(Errno(code))", path: path,
            errnoCode: code)
    }

    private static func growth(for size: Int) -> Int {
        min(StoreFormat.logGrowthMaximum, max(StoreFormat.logGrowthMinimum, size / 2))
    }

    /// Allocates `[from, to)` (zeros), failing with ENOSPC when the disk is full.
    private static func extend(_ f: borrowing FileDescriptor, from: Int, to: Int, path: String) throws(StoreError) {
        guard to > from else { return }
        let code = posix_fallocate(f.raw, off_t(from), off_t(to - from))
        if code == 0 { return }
        guard code == EOPNOTSUPP || code == EINVAL, ftruncate(f.raw, off_t(to)) == 0 else {
            throw StoreError.io(
                "allocating \(to - from) bytes (posix_fallocate)", path: path, errno: code, offset: from)
        }
    }

    private func clearBestEffort(_ range: Range<Int>) {
        guard !range.isEmpty else { return }
        try? directory.writeAll(
            descriptor, [UInt8](repeating: 0, count: range.count), at: range.lowerBound, name: Self.name)
    }
}
