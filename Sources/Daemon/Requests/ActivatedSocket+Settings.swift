import Basics
import Configuration
import Glibc
import Journal
import Systemd

extension ActivatedSocket {
    /// The `[Control] SocketMode=`/`SocketGroup=` settings that differ from the socket systemd
    /// made (whose own unit's settings rule), as `Key=value (the socket has …)` texts; empty when
    /// the socket is as configured.
    func settingsNotApplied(_ control: ControlSettings) -> [String] {
        var status = stat()
        guard !path.isEmpty, lstat(path, &status) == 0 else { return [] }
        var differences: [String] = []
        let mode = UInt32(status.st_mode) & 0o7777
        if control.socketModeIsSet, control.socketMode != mode {
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
    func reportSettingsNotApplied(
        _ control: ControlSettings, instance: DaemonPaths.Instance, to journal: any JournalSink
    ) -> [String] {
        let differences = settingsNotApplied(control)
        guard !differences.isEmpty else { return [] }
        let systemctl = instance == .user ? "systemctl --user" : "systemctl"
        let note =
            "[Control] \(differences.joined(separator: ", ")) not applied: the control socket comes from "
            + "session-cleanup.socket; set SocketMode=/SocketGroup= there (\(systemctl) edit session-cleanup.socket)"
        journal.record(JournalEntry(.controlSettingIgnored, note))
        return [note]
    }
}
