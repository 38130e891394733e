import Basics
import CSystemd
import Glibc

/// The control socket systemd passes when `session-cleanup.socket` activates the daemon.
package struct ActivatedSocket: Sendable, Equatable {
    /// The listening descriptor (close-on-exec, non-blocking).
    package let fd: Int32
    /// Its file path, e.g. `/run/session-cleanup/control.sock`.
    package let path: String

    /// The descriptor name `session-cleanup.socket` gives it (`FileDescriptorName=`).
    package static let descriptorName = "control"

    /// The socket passed by systemd, if any (`$LISTEN_PID`/`$LISTEN_FDS`/`$LISTEN_FDNAMES`,
    /// then unset); nil when the daemon was not socket-activated. Throws when what was passed is
    /// unusable (not a listening Unix stream socket, none of the expected name).
    package static func fromServiceManager() throws(SystemCallError) -> ActivatedSocket? {
        var path = [CChar](repeating: 0, count: 128)
        var problem = [CChar](repeating: 0, count: 256)
        let fd = csd_listen_socket(descriptorName, &path, path.count, &problem, problem.count)
        guard fd != 0 else { return nil }
        guard fd > 0 else {
            throw SystemCallError("socket activation", terminatedString(problem), negativeErrno: fd)
        }
        return ActivatedSocket(fd: fd, path: terminatedString(path))
    }
}
