import Basics
import CSystemd

/// Whether a service runs, as its service manager says, asked without starting it: reading a
/// unit's `ActiveState` over D-Bus never activates anything, while connecting to a socket unit's
/// socket does. How the client's read-only verbs (`status`, `list`, `report`) leave a stopped
/// daemon stopped.
package struct ServiceActivity: Sendable, Equatable {
    /// The service unit's `ActiveState` (`active`, `inactive`, `failed`, `activating`, …).
    package var serviceState: String
    /// Its socket unit's `ActiveState` (`active` while systemd listens for it).
    package var socketState: String

    /// Creates an answer (tests).
    package init(serviceState: String, socketState: String) {
        self.serviceState = serviceState
        self.socketState = socketState
    }

    /// The service runs, starts, reloads or stops: a connection reaches the daemon, not systemd.
    package var serviceRuns: Bool {
        ["active", "activating", "reloading", "deactivating", "refreshing"].contains(serviceState)
    }

    /// systemd listens on the socket for the service: a connection would start the daemon.
    package var socketActivates: Bool { socketState == "active" }

    /// The bound on one query: a client waits no longer than this before falling back.
    package static let defaultTimeout: Duration = .seconds(2)

    /// Asks `manager` for the `ActiveState` of `service` and `socket`, within `timeout`.
    package static func ask(
        _ manager: ServiceManagerUnit.Manager, service: String, socket: String, timeout: Duration = defaultTimeout
    ) -> Result<ServiceActivity, ServiceManagerQueryError> {
        var states = csd_unit_states()
        var step = [CChar](repeating: 0, count: 256)
        let result = csd_unit_states_query(
            manager == .user ? CSD_MANAGER_USER : CSD_MANAGER_SYSTEM, service, socket,
            UInt64(max(0, timeout.microseconds)), &states, &step, step.count)
        guard result == 0 else {
            return .failure(ServiceManagerQueryError(errno: -result, step: terminatedString(step)))
        }
        let service = withUnsafeBytes(of: states.service) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let socket = withUnsafeBytes(of: states.socket) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return .success(ServiceActivity(serviceState: service, socketState: socket))
    }
}
