import Glibc

/// Small, explicit file reading on plain system calls (no Foundation: idle-memory budget).
package enum FileReading {
    /// The whole regular file at `path`, at most `limit` bytes (larger files are an error: `EFBIG`).
    ///
    /// Anything but a regular file (after symlinks) is refused without reading: opening a FIFO
    /// would wait for a writer for ever (so it is opened non-blocking), and a device may never end.
    package static func contents(of path: String, limit: Int = 1 << 20) throws(SystemCallError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else { throw SystemCallError.current("open", path) }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw SystemCallError.current("fstat", path) }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw SystemCallError("read", "\(path) (not a regular file: \(kind(status.st_mode)))", errno: EINVAL)
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw SystemCallError.current("read", path)
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > limit { throw SystemCallError("read", path, errno: EFBIG) }
        }
    }

    /// The names in directory `path` (without `.` and `..`), or nil if it does not exist.
    package static func directoryEntries(_ path: String) throws(SystemCallError) -> [String]? {
        guard let directory = opendir(path) else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw SystemCallError.current("opendir", path)
        }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// `a FIFO`, `a directory`, … for a file type.
    private static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFIFO: return "a FIFO"
        case S_IFDIR: return "a directory"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFSOCK: return "a socket"
        default: return "an unknown file type"
        }
    }

    /// Whether something exists at `path`.
    package static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }
}
