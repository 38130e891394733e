/// The daemon's state as control requests see it: the daemon hands it with each request
/// (``Daemon/Phase/state``), so the request handler never asks the daemon for it.
enum DaemonState: String {
    /// Serving: every request is answered.
    case running
    /// Handing its sessions over to the restarted daemon: registrations are still taken.
    case restarting
    /// The stop run is ending every session: no registrations, no `end` or `report`.
    case stopping
    /// Stopped: the process is about to exit.
    case stopped

    /// Registrations are taken until the daemon exits, except while a stop run ends everything.
    var acceptsRegistrations: Bool {
        switch self {
        case .running, .restarting: return true
        case .stopping, .stopped: return false
        }
    }
}
