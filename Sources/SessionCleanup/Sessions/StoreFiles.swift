import Glibc

/// POSIX file helpers that work relative to an open directory descriptor, so that the store
/// keeps working on the same directory even if its path is renamed, and every error names the
/// full path and the errno text.
struct StoreDirectory {
    /// Path as given by the caller (used in messages).
    let path: String
    /// `O_DIRECTORY` descriptor; also carries the `flock` that keeps out a second daemon.
    let fd: Int32

    /// Opens (never creates) the directory. A missing or unreadable directory is an error:
    /// the daemon must refuse to start rather than begin with an empty store.
    static func open(_ path: String) throws(StoreError) -> StoreDirectory {
        let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw StoreError.io("open(O_DIRECTORY) of state directory", path: path, errno: errno) }
        return StoreDirectory(path: path, fd: fd)
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
                    message: "state directory \(path) is locked by another open store (flock: \(errnoText(e)))",
                    path: path, errnoCode: e)
            }
            throw StoreError.io("flock(LOCK_EX) of state directory", path: path, errno: e)
        }
    }

    func close() { _ = Glibc.close(fd) }

    /// Opens an existing file; returns nil if it does not exist.
    func openExisting(_ name: String, flags: Int32) throws(StoreError) -> Int32? {
        let f = openat(fd, name, flags | O_CLOEXEC | O_NOFOLLOW)
        if f >= 0 { return f }
        let e = errno
        if e == ENOENT { return nil }
        throw StoreError.io("open", path: fullPath(name), errno: e)
    }

    /// Creates (or truncates) a file with mode 0600 regardless of the umask.
    func create(_ name: String, exclusive: Bool = false) throws(StoreError) -> Int32 {
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (exclusive ? O_EXCL : O_TRUNC)
        let f = openat(fd, name, flags, 0o600)
        guard f >= 0 else { throw StoreError.io("open(O_CREAT, 0600)", path: fullPath(name), errno: errno) }
        guard fchmod(f, 0o600) == 0 else {
            let e = errno
            _ = Glibc.close(f)
            throw StoreError.io("fchmod(0600)", path: fullPath(name), errno: e)
        }
        return f
    }

    /// Reads a whole file from offset 0.
    func readAll(_ f: Int32, name: String) throws(StoreError) -> [UInt8] {
        var st = stat()
        guard fstat(f, &st) == 0 else { throw StoreError.io("fstat", path: fullPath(name), errno: errno) }
        let size = Int(st.st_size)
        var failure: StoreError?
        let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            var done = 0
            while done < size {
                let n = pread(f, buffer.baseAddress.map { $0 + done }, size - done, off_t(done))
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
    func writeAll(_ f: Int32, _ bytes: [UInt8], at offset: Int, name: String) throws(StoreError) {
        let failure: StoreError? = bytes.withUnsafeBytes { raw in
            do throws(StoreError) {
                try writeAll(f, raw, at: offset, name: name)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }

    /// Writes all of `bytes` at `offset`, retrying short writes and EINTR.
    func writeAll(_ f: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int, name: String) throws(StoreError) {
        var done = 0
        while done < bytes.count {
            let n = pwrite(f, bytes.baseAddress.map { $0 + done }, bytes.count - done, off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                throw StoreError.io("write", path: fullPath(name), errno: errno, offset: offset + done)
            }
            done += n
        }
    }

    func fsyncFile(_ f: Int32, name: String) throws(StoreError) {
        guard fsync(f) == 0 else { throw StoreError.io("fsync", path: fullPath(name), errno: errno) }
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

    /// Replaces `name` atomically: write `name.tmp` (0600), fsync, rename over `name`, fsync the
    /// directory. After a crash, `name` is either the old or the new file, never a mix.
    func writeAtomically(_ name: String, _ bytes: [UInt8]) throws(StoreError) {
        let tmp = name + ".tmp"
        let f = try create(tmp)
        do throws(StoreError) {
            try writeAll(f, bytes, at: 0, name: tmp)
            try fsyncFile(f, name: tmp)
        } catch {
            _ = Glibc.close(f)
            try? removeIfPresent(tmp)
            throw error
        }
        _ = Glibc.close(f)
        guard renameat(fd, tmp, fd, name) == 0 else {
            throw StoreError.io("rename to \(fullPath(name))", path: fullPath(tmp), errno: errno)
        }
        try fsyncDirectory()
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
    /// the bytes of a torn log tail before it is cut off. Returns the full path.
    func preserveBytes(_ bytes: [UInt8], from name: String) throws(StoreError) -> String {
        let base = name + ".corrupt-" + StoreDirectory.timestamp()
        var candidate = base
        var n = 0
        var f: Int32 = -1
        while true {
            f = openat(fd, candidate, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
            if f >= 0 { break }
            let e = errno
            guard e == EEXIST, n < 1000 else {
                throw StoreError.io("open(O_CREAT|O_EXCL, 0600)", path: fullPath(candidate), errno: e)
            }
            n += 1
            candidate = base + "-\(n)"
        }
        defer { _ = Glibc.close(f) }
        guard fchmod(f, 0o600) == 0 else {
            throw StoreError.io("fchmod(0600)", path: fullPath(candidate), errno: errno)
        }
        try writeAll(f, bytes, at: 0, name: candidate)
        try fsyncFile(f, name: candidate)
        try fsyncDirectory()
        return fullPath(candidate)
    }
}
