import Basics
import CSystemd
import Glibc

/// Who is at the other end of a Unix socket, as the kernel recorded it at `connect(2)`
/// (`SO_PEERCRED`): not something the client can claim. The daemon authorizes by ``uid``.
package struct PeerCredentials: Sendable, Equatable, CustomStringConvertible {
    /// The connecting process's pid (in the daemon's pid namespace; 0 if it is outside it).
    package var pid: Int32
    /// The connecting process's effective uid.
    package var uid: UInt32
    /// The connecting process's effective gid.
    package var gid: UInt32

    /// Creates credentials explicitly (tests, fakes).
    package init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    /// The credentials of the peer of the connected Unix socket `fd`.
    package static func of(socket fd: Int32) throws(SystemCallError) -> PeerCredentials {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
        let result = csd_peer_credentials(fd, &pid, &uid, &gid)
        guard result == 0 else {
            throw SystemCallError("getsockopt SO_PEERCRED", "descriptor \(fd)", negativeErrno: result)
        }
        return PeerCredentials(pid: pid, uid: uid, gid: gid)
    }

    /// Whether the peer is root.
    package var isRoot: Bool { uid == 0 }

    /// `pid 1234 uid 1000 gid 1000`.
    package var description: String { "pid \(pid) uid \(uid) gid \(gid)" }
}
