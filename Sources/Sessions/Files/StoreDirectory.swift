import Basics
import Glibc

/// The state directory, open: POSIX file helpers that work relative to its descriptor, so the
/// store keeps addressing the same directory even if its path changes, and every error names
/// the full path and the errno text. Immutable and safe to use from several threads (each call
/// is one or a few system calls on descriptors it owns or opens itself).
final class StoreDirectory: Sendable {
    /// Path as given by the caller (used in messages, and to notice that it was deleted).
    let path: String
    /// `O_DIRECTORY` descriptor; also carries the `flock` that keeps out a second daemon.
    private let descriptor: FileDescriptor
    /// Device and inode the path led to when opened.
    private let identity: (dev: UInt64, ino: UInt64)

    private init(path: String, descriptor: consuming FileDescriptor, identity: (dev: UInt64, ino: UInt64)) {
        self.path = path
        self.descriptor = descriptor
        self.identity = identity
    }

    var fd: Int32 { descriptor.raw }

    /// Opens (never creates) the directory. A missing or unreadable directory is an error: the
    /// daemon must refuse to start rather than begin with an empty store.
    static func open(_ path: String) throws(StoreError) -> StoreDirectory {
        let raw = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard raw >= 0 else { throw StoreError.io("open(O_DIRECTORY) of state directory", path: path, errno: errno) }
        let fd = FileDescriptor(raw)
        var st = stat()
        guard fstat(fd.raw, &st) == 0 else { throw StoreError.io("fstat of state directory", path: path, errno: errno) }
        return StoreDirectory(path: path, descriptor: fd, identity: (UInt64(st.st_dev), UInt64(st.st_ino)))
    }

    /// Creates the directory (and missing parents) with mode 0700, as the daemon does at start.
    static func create(_ path: String) throws(StoreError) {
        var current = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            current += "/" + component
            if mkdir(current, 0o700) != 0 && errno != EEXIST {
                throw StoreError.io("mkdir", path: current, errno: errno)
            }
        }
    }

    func fullPath(_ name: String) -> String { path.hasSuffix("/") ? path + name : path + "/" + name }

    /// Takes an exclusive, non-blocking `flock` on the directory.
    func lock() throws(StoreError) {
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let e = errno
            if e == EINTR { continue }
            if e == EWOULDBLOCK {
                throw StoreError(
                    kind: .locked,
                    message: "state directory \(path) is locked by another open store (flock: \(Errno(e)))",
                    path: path, errnoCode: e)
            }
            throw StoreError.io("flock(LOCK_EX) of state directory", path: path, errno: e)
        }
    }

    /// Releases the lock (the store is closed; the descriptor closes with the last reference).
    func unlock() { _ = flock(fd, LOCK_UN) }

    /// Nil while the path still leads to this directory and it has not been deleted; otherwise
    /// what happened to it. Files written into a deleted directory are lost at the next start.
    func whereabouts() -> String? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return "fstat failed: \(Errno(errno))" }
        if st.st_nlink == 0 { return "it was deleted" }
        var now = stat()
        guard fstatat(AT_FDCWD, path, &now, 0) == 0 else {
            return "the path no longer leads to it (\(Errno(errno)))"
        }
        if UInt64(now.st_dev) != identity.dev || UInt64(now.st_ino) != identity.ino {
            return "the path now leads to another directory"
        }
        return nil
    }

    /// Opens an existing file; returns nil if it does not exist.
    func openExisting(_ name: String, flags: Int32) throws(StoreError) -> FileDescriptor? {
        let f = openat(fd, name, flags | O_CLOEXEC | O_NOFOLLOW)
        if f >= 0 { return FileDescriptor(f) }
        let e = errno
        if e == ENOENT { return nil }
        throw StoreError.io("open", path: fullPath(name), errno: e)
    }

    /// Creates (or truncates) a file with mode 0600 regardless of the umask.
    func create(_ name: String, exclusive: Bool = false) throws(StoreError) -> FileDescriptor {
        let flags = O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (exclusive ? O_EXCL : O_TRUNC)
        let raw = openat(fd, name, flags, 0o600)
        guard raw >= 0 else { throw StoreError.io("open(O_CREAT, 0600)", path: fullPath(name), errno: errno) }
        let f = FileDescriptor(raw)
        guard fchmod(f.raw, 0o600) == 0 else { throw StoreError.io("fchmod(0600)", path: fullPath(name), errno: errno) }
        return f
    }

    /// Maps the whole file `name` read-only, or returns nil if there is none; sets its mode to
    /// 0600 on the way (unless `settingMode` is false: a read-only store changes nothing). Reading
    /// a store this way copies nothing onto the heap.
    func map(_ name: String, settingMode: Bool = true) throws(StoreError) -> MappedFile? {
        guard let f = try openExisting(name, flags: O_RDONLY) else { return nil }
        guard !settingMode || fchmod(f.raw, 0o600) == 0 else {
            throw StoreError.io("fchmod(0600)", path: fullPath(name), errno: errno)
        }
        let size = try regularFileSize(f, name: name)
        guard size > 0 else { return MappedFile(base: nil, count: 0) }
        guard let base = mmap(nil, size, PROT_READ, MAP_PRIVATE, f.raw, 0), base != MAP_FAILED else {
            throw StoreError.io("mmap", path: fullPath(name), errno: errno)
        }
        return MappedFile(base: base, count: size)
    }

    /// The size of the open file `name`; throws if it is not a regular file.
    private func regularFileSize(_ f: borrowing FileDescriptor, name: String) throws(StoreError) -> Int {
        var st = stat()
        guard fstat(f.raw, &st) == 0 else { throw StoreError.io("fstat", path: fullPath(name), errno: errno) }
        guard st.st_mode & S_IFMT == S_IFREG else {
            throw StoreError(
                kind: .io, message: "\(fullPath(name)) is not a regular file", path: fullPath(name), errnoCode: EINVAL)
        }
        return Int(st.st_size)
    }

    /// Reads a whole file from offset 0, or of a file larger than `limit` bytes its first `limit`.
    func readAll(_ f: borrowing FileDescriptor, name: String, limit: Int = .max) throws(StoreError) -> [UInt8] {
        let size = min(try regularFileSize(f, name: name), limit)
        var failure: StoreError?
        let raw = f.raw
        let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            var done = 0
            while done < size {
                let n = pread(raw, buffer.baseAddress.map { $0 + done }, size - done, off_t(done))
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = StoreError.io("read", path: fullPath(name), errno: errno, offset: done)
                    break
                }
                if n == 0 { break }  // file shrank underneath us; use what we have
                done += n
            }
            initialized = done
        }
        if let failure { throw failure }
        return bytes
    }

    /// Writes all of `bytes` at `offset`, retrying short writes and EINTR.
    func writeAll(_ f: borrowing FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int, name: String)
        throws(StoreError)
    {
        var done = 0
        while done < bytes.count {
            let n = pwrite(f.raw, bytes.baseAddress.map { $0 + done }, bytes.count - done, off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                throw StoreError.io("write", path: fullPath(name), errno: errno, offset: offset + done)
            }
            done += n
        }
    }

    /// Writes all of `bytes` at `offset`, retrying short writes and EINTR.
    func writeAll(_ f: borrowing FileDescriptor, _ bytes: [UInt8], at offset: Int, name: String) throws(StoreError) {
        try bytes.withStoreBytes { raw throws(StoreError) in try writeAll(f, raw, at: offset, name: name) }
    }

    func fsyncFile(_ f: borrowing FileDescriptor, name: String) throws(StoreError) {
        guard fsync(f.raw) == 0 else { throw StoreError.io("fsync", path: fullPath(name), errno: errno) }
    }

    func fsyncDirectory() throws(StoreError) {
        guard fsync(fd) == 0 else { throw StoreError.io("fsync of state directory", path: path, errno: errno) }
    }

    /// Deletes `name` if present.
    func removeIfPresent(_ name: String) throws(StoreError) {
        if unlinkat(fd, name, 0) != 0, errno != ENOENT {
            throw StoreError.io("unlink", path: fullPath(name), errno: errno)
        }
    }

    /// Replaces `name` atomically with what `write` puts into a new file: write `name.tmp`
    /// (0600), fsync, rename over `name`, fsync the directory. After a crash, `name` is either
    /// the old or the new file, never a mix. On failure the temporary file is removed; a failure
    /// of the final directory fsync leaves the rename done but of unknown durability.
    /// Returns the new file, open for reading and writing.
    func replaceAtomically(_ name: String, _ write: (borrowing FileDescriptor) throws(StoreError) -> Void)
        throws(StoreError) -> FileDescriptor
    {
        let tmp = name + ".tmp"
        let f = try create(tmp)
        do throws(StoreError) {
            try write(f)
            try fsyncFile(f, name: tmp)
        } catch {
            try? removeIfPresent(tmp)
            throw error
        }
        guard renameat(fd, tmp, fd, name) == 0 else {
            let e = errno
            try? removeIfPresent(tmp)
            throw StoreError.io("rename to \(fullPath(name))", path: fullPath(tmp), errno: e)
        }
        guard fsync(fd) == 0 else {
            let e = errno
            throw StoreError(
                kind: .syncFailed,
                message: "fsync of state directory failed for \(path) after renaming \(name) into place: "
                    + Errno(e).description, path: path, errnoCode: e)
        }
        return f
    }

    /// Makes `name` a file of `size` bytes whose space is allocated (`posix_fallocate`), durably,
    /// unless it already is one: a later ``fillReserved(_:_:as:)`` needs no new space, so a full
    /// disk cannot refuse it.
    func reserve(_ name: String, size: Int) throws(StoreError) {
        if let f = try openExisting(name, flags: O_RDONLY), (try? regularFileSize(f, name: name)) == size { return }
        let f = try create(name)
        let code = posix_fallocate(f.raw, 0, off_t(size))
        guard code == 0 else {
            try? removeIfPresent(name)
            throw StoreError.io("allocating \(size) bytes (posix_fallocate)", path: fullPath(name), errno: code)
        }
        try fsyncFile(f, name: name)
        try fsyncDirectory()
    }

    /// Writes `bytes` over the start of the reserved file `reserved` (in place: into space already
    /// allocated), syncs it, then renames it to `name` and syncs the directory. `bytes` must not
    /// be longer than the reserved file; what they do not cover keeps its old contents.
    func fillReserved(_ reserved: String, _ bytes: [UInt8], as name: String) throws(StoreError) {
        guard let f = try openExisting(reserved, flags: O_WRONLY) else {
            throw StoreError.io("open", path: fullPath(reserved), errno: ENOENT)
        }
        guard bytes.count <= (try regularFileSize(f, name: reserved)) else {
            throw StoreError.io("write", path: fullPath(reserved), errno: EFBIG)
        }
        try writeAll(f, bytes, at: 0, name: reserved)
        guard fdatasync(f.raw) == 0 else { throw StoreError.io("fdatasync", path: fullPath(reserved), errno: errno) }
        guard renameat(fd, reserved, fd, name) == 0 else {
            throw StoreError.io("rename to \(fullPath(name))", path: fullPath(reserved), errno: errno)
        }
        try fsyncDirectory()
    }

    /// `replaceAtomically` with fixed contents.
    func writeAtomically(_ name: String, _ bytes: [UInt8]) throws(StoreError) {
        _ = try replaceAtomically(name) { f throws(StoreError) in try writeAll(f, bytes, at: 0, name: name + ".tmp") }
    }

    /// `replaceAtomically` with contents made a piece at a time: `next` fills its argument with
    /// the next piece and returns false once there is none (a large document is never whole in
    /// memory).
    func writeAtomically(_ name: String, pieces next: (inout [UInt8]) -> Bool) throws(StoreError) {
        _ = try replaceAtomically(name) { f throws(StoreError) in
            var offset = 0
            var piece: [UInt8] = []
            while next(&piece) {
                try writeAll(f, piece, at: offset, name: name + ".tmp")
                offset += piece.count
            }
        }
    }

    /// UTC timestamp like 20260101T120000Z for names of preserved files.
    static func timestamp() -> String {
        var t = time(nil)
        var parts = tm()
        gmtime_r(&t, &parts)
        func pad(_ v: Int32, _ width: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return pad(parts.tm_year + 1900, 4) + pad(parts.tm_mon + 1, 2) + pad(parts.tm_mday, 2) + "T"
            + pad(parts.tm_hour, 2) + pad(parts.tm_min, 2) + pad(parts.tm_sec, 2) + "Z"
    }

    /// Keeps the current contents of `name` under `name.corrupt-<timestamp>[-n]` with a hard
    /// link (so `name` itself stays in place until it is atomically replaced), then fsyncs the
    /// directory. Returns the full path of the preserved copy.
    func preserve(_ name: String) throws(StoreError) -> String {
        let base = name + ".corrupt-" + StoreDirectory.timestamp()
        var candidate = base
        var n = 0
        while linkat(fd, name, fd, candidate, 0) != 0 {
            let e = errno
            guard e == EEXIST, n < 1000 else {
                throw StoreError.io("link to \(fullPath(candidate))", path: fullPath(name), errno: e)
            }
            n += 1
            candidate = base + "-\(n)"
        }
        try fsyncDirectory()
        return fullPath(candidate)
    }

    /// Writes `bytes` to a new file `name.corrupt-<timestamp>[-n]` (0600, fsynced). Used to keep
    /// the bytes of a torn log tail before they are cleared. Returns the full path.
    func preserveBytes(_ bytes: ArraySlice<UInt8>, from name: String) throws(StoreError) -> String {
        let base = name + ".corrupt-" + StoreDirectory.timestamp()
        var candidate = base
        var n = 0
        while true {
            do throws(StoreError) {
                let f = try create(candidate, exclusive: true)
                try writeAll(f, Array(bytes), at: 0, name: candidate)
                try fsyncFile(f, name: candidate)
                try fsyncDirectory()
                return fullPath(candidate)
            } catch  where error.errnoCode == EEXIST && n < 1000 {
                n += 1
                candidate = base + "-\(n)"
            }
        }
    }
}

/// A file mapped read-only into memory; unmapped when released. The store holds the directory
/// lock while it reads, so nothing of its own truncates the file underneath.
final class MappedFile {
    private let base: UnsafeMutableRawPointer?
    /// The file's bytes.
    let bytes: UnsafeRawBufferPointer

    init(base: UnsafeMutableRawPointer?, count: Int) {
        self.base = base
        bytes = UnsafeRawBufferPointer(start: base, count: count)
    }

    deinit { if let base { munmap(base, bytes.count) } }
}
