import CSystemd
import EventLoop
import Glibc

/// The control socket systemd passes when `session-cleanup.socket` activates the daemon.
public struct ActivatedSocket: Sendable, Equatable {
    /// The listening descriptor (close-on-exec, non-blocking).
    public let fd: Int32
    /// Its file path, e.g. `/run/session-cleanup/control.sock`.
    public let path: String

    /// The descriptor name `session-cleanup.socket` gives it (`FileDescriptorName=`).
    public static let descriptorName = "control"

    /// The socket passed by systemd, if any (`$LISTEN_PID`/`$LISTEN_FDS`/`$LISTEN_FDNAMES`,
    /// then unset); nil when the daemon was not socket-activated. Throws when what was passed is
    /// unusable (not a listening Unix stream socket, none of the expected name).
    public static func fromServiceManager() throws(SystemCallError) -> ActivatedSocket? {
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

extension ActivatedSocket {
    /// The `[Control] SocketMode=`/`SocketGroup=` settings that differ from the socket systemd
    /// made (whose own unit's settings rule), as `Key=value (the socket has …)` texts; empty when
    /// the socket is as configured.
    func settingsNotApplied(_ control: ControlSettings) -> [String] {
        var status = stat()
        guard !path.isEmpty, lstat(path, &status) == 0 else { return [] }
        var differences: [String] = []
        let mode = UInt32(status.st_mode) & 0o7777
        if control.socketMode != mode {
            differences.append(
                "SocketMode=\(String(control.socketMode, radix: 8)) (the socket's mode is \(String(mode, radix: 8)))")
        }
        if !control.socketGroup.isEmpty, (try? AccountLookup.groupID(control.socketGroup)) != status.st_gid {
            differences.append("SocketGroup=\(control.socketGroup) (the socket's group is gid \(status.st_gid))")
        }
        return differences
    }
}

extension ActivatedSocket {
    /// Under socket activation the socket unit's mode and group rule: journals a warning when
    /// the configuration asks for others (never ignored in silence). Returns what it said.
    @discardableResult
    func reportSettingsNotApplied(_ control: ControlSettings, to journal: any JournalSink) -> [String] {
        let differences = settingsNotApplied(control)
        guard !differences.isEmpty else { return [] }
        let note =
            "[Control] \(differences.joined(separator: ", ")) not applied: the control socket comes from "
            + "session-cleanup.socket; set SocketMode=/SocketGroup= there (systemctl edit session-cleanup.socket)"
        journal.record(JournalEntry(.controlSettingIgnored, note))
        return [note]
    }
}
