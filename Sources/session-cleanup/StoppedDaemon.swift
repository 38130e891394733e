import Basics
import Daemon
import Glibc
import Systemd

/// A daemon found stopped by asking systemd — never by connecting to its socket, which would
/// start it (socket activation). The read-only verbs (`status`, `list`, `report`) then answer
/// from the state directory or say so; the writing verbs (`register`, `end`, `unregister`) go
/// on, and say that they start it.
struct StoppedDaemon {
    /// What systemd said of the service and its socket.
    var activity: ServiceActivity
    /// Which daemon.
    var instance: DaemonPaths.Instance
    /// The verb that asked (for the advice).
    var verb: String

    /// The service unit the packages install, system and user alike.
    static let service = "session-cleanup.service"
    /// Its socket unit.
    static let socket = "session-cleanup.socket"

    /// The daemon `target` names, if systemd says it is stopped. nil when it runs, when the
    /// target is a socket named on the command line or in the environment (no unit to ask), or
    /// when systemd cannot be asked (no bus): then the verb connects as before. A service that is
    /// stopped while nothing listens for it but the socket file exists is a daemon started by
    /// hand (`session-cleanup daemon`): connecting to it starts nothing, so that counts as running.
    static func find(_ options: Options, target: DaemonTarget, verb: String) -> StoppedDaemon? {
        guard !target.isExplicit else { return nil }
        let manager: ServiceManagerUnit.Manager = options.instance == .user ? .user : .system
        guard case .success(let activity) = ServiceActivity.ask(manager, service: service, socket: socket),
            !activity.serviceRuns
        else { return nil }
        if !activity.socketActivates && FileReading.exists(target.socketPath) { return nil }
        return StoppedDaemon(activity: activity, instance: options.instance, verb: verb)
    }

    /// `systemctl` or `systemctl --user`.
    var systemctl: String { instance == .user ? "systemctl --user" : "systemctl" }

    /// `The daemon is stopped (session-cleanup.service: inactive); nothing was started to answer.`
    var sentence: String {
        "The daemon is stopped (\(Self.service): \(activity.serviceState.isEmpty ? "unknown" : activity.serviceState))"
    }

    /// What starts it again and how it stays stopped; for a user asking the system daemon, where
    /// their own is.
    var advice: [String] {
        var lines =
            activity.socketActivates
            ? [
                "\(Self.socket) still listens: the next register or end starts the daemon again.",
                "To stop it for good: \(systemctl) stop \(Self.socket) \(Self.service)",
                "  (and \(systemctl) disable \(Self.socket) \(Self.service) to keep it stopped after a reboot).",
            ] : ["Start it with: \(systemctl) start \(Self.socket)"]
        if instance == .system && getuid() != 0 {
            lines.append("For your own daemon: session-cleanup --user \(verb)")
        }
        return lines
    }

    /// The state directory a stopped daemon left its documents in.
    var stateDirectory: String { DaemonPaths.resolve(instance, configOption: nil).stateDirectory }
}
