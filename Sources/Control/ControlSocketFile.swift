import Basics
import CSystemd
import Glibc

/// The control socket as a file: created at its path with its mode and group, replacing a
/// stale socket nobody listens on and refusing anything else. (Under socket activation systemd
/// makes it; the daemon makes it itself only when started by hand.)
enum ControlSocketFile {
    static func listen(path: String, mode: UInt32, group: String) throws(ControlServerError)
        -> (Int32, (device: UInt64, inode: UInt64))
    {
        guard let address = UnixSocketAddress(path: path) else {
            throw ControlServerError(
                "control socket path \(path) is empty or too long (\(path.utf8.count) bytes, at most "
                    + "\(UnixSocketAddress.maxPathBytes))")
        }
        let gid = try group.isEmpty ? nil : groupID(group)
        try removeStaleSocket(address)

        let fd = socket(
            AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw failure("socket", path) }
        var bound = false
        func fail(_ operation: String) -> ControlServerError {
            let error = failure(operation, path)
            Glibc.close(fd)
            if bound { unlink(path) }
            return error
        }
        // The socket inode's mode, less the umask, becomes the file's mode at bind(2): the file is
        // never more open than configured, not even between bind and chmod.
        guard fchmod(fd, mode_t(mode)) == 0 else { throw fail("fchmod") }
        guard address.bind(fd) == 0 else { throw fail("bind") }
        bound = true
        if let gid {
            guard chown(path, uid_t.max, gid) == 0 else { throw fail("chown to group \(group) (gid \(gid))") }
        }
        // Exactly the configured mode, whatever the umask took away.
        guard chmod(path, mode_t(mode)) == 0 else { throw fail("chmod \(String(mode, radix: 8))") }
        guard Glibc.listen(fd, SOMAXCONN) == 0 else { throw fail("listen") }
        var status = stat()
        guard lstat(path, &status) == 0 else { throw fail("stat") }
        return (fd, (UInt64(status.st_dev), UInt64(status.st_ino)))
    }

    /// Removes a socket file nobody listens on; refuses to touch anything else.
    private static func removeStaleSocket(_ address: UnixSocketAddress) throws(ControlServerError) {
        let path = address.path
        var status = stat()
        guard lstat(path, &status) == 0 else {
            if errno == ENOENT { return }
            throw failure("stat", path)
        }
        guard status.st_mode & S_IFMT == S_IFSOCK else {
            throw ControlServerError("cannot create control socket \(path): the path exists and is not a socket")
        }
        switch probe(address) {
        case 0:
            throw ControlServerError(
                "cannot create control socket \(path): another process is listening on it (is the daemon already running?)"
            )
        case ECONNREFUSED:
            guard unlink(path) == 0 || errno == ENOENT else { throw failure("unlink stale socket", path) }
        case let error:
            throw ControlServerError(
                "cannot check existing control socket \(path): \(Errno(error))")
        }
    }

    /// Connects to `address` without blocking: 0 if someone listens (or its backlog is full), else errno.
    private static func probe(_ address: UnixSocketAddress) -> Int32 {
        let fd = socket(
            AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return errno }
        defer { Glibc.close(fd) }
        if address.connect(fd) == 0 || errno == EAGAIN { return 0 }
        return errno
    }

    /// The gid of `SocketGroup=`: a group name or a number.
    static func groupID(_ name: String) throws(ControlServerError) -> gid_t {
        do {
            return try AccountLookup.groupID(name)
        } catch {
            throw ControlServerError("SocketGroup=\(name): \(error)")
        }
    }

    private static func failure(_ operation: String, _ path: String) -> ControlServerError {
        let error = errno
        return ControlServerError(
            "control socket \(path): \(operation): \(Errno(error))")
    }
}
