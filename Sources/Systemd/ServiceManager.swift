import Basics
import CSystemd
import Glibc

/// The unit this process runs in, and which service manager runs it.
package struct ServiceManagerUnit: Sendable, Equatable, CustomStringConvertible {
    /// The system manager (PID 1) or a per-user manager (`user@UID.service`).
    package enum Manager: String, Sendable {
        /// systemd as PID 1, asked over the system bus.
        case system
        /// A user's systemd, asked over the user bus or its private socket.
        case user
    }

    /// Which manager.
    package let manager: Manager
    /// The unit's name, e.g. `session-cleanup.service`.
    package let name: String

    /// Creates a unit explicitly (tests).
    package init(manager: Manager, name: String) {
        self.manager = manager
        self.name = name
    }

    /// The unit of this process, from its cgroup; nil when no service manager started it.
    package static func ofThisProcess() -> ServiceManagerUnit? {
        var buffer = [CChar](repeating: 0, count: 512)
        let result = csd_own_unit(&buffer, buffer.count)
        guard result > 0 else { return nil }
        let name = terminatedString(buffer)
        return ServiceManagerUnit(manager: result == CSD_MANAGER_USER ? .user : .system, name: name)
    }

    /// `session-cleanup.service (system manager)`.
    package var description: String { "\(name) (\(manager.rawValue) manager)" }
}

/// What the service manager said about the unit while it stops.
package struct ServiceManagerAnswer: Sendable, Equatable {
    /// The type of the unit's job (`stop`, `restart`, …); nil when it has none.
    package var jobType: String?
    /// The manager's `SystemState` (`running`, `degraded`, `stopping`, …).
    package var systemState: String

    /// Creates an answer.
    package init(jobType: String?, systemState: String) {
        self.jobType = jobType
        self.systemState = systemState
    }
}

/// The service manager could not be asked, or did not answer in time.
package struct ServiceManagerQueryError: Error, Equatable, CustomStringConvertible {
    /// The errno (positive); `ETIMEDOUT` when the time ran out.
    package let errno: Int32
    /// What failed: the connection, or which property.
    package let step: String

    /// Creates an error.
    package init(errno: Int32, step: String) {
        self.errno = errno
        self.step = step
    }

    /// Whether the time ran out.
    package var isTimeout: Bool { errno == ETIMEDOUT }

    /// `connect to the system bus: No such file or directory (errno 2)`.
    package var description: String {
        isTimeout ? step : "\(step): \(Errno(errno))"
    }
}

/// What asking the service manager about this process's unit gave.
package enum ServiceManagerReport: Sendable, Equatable {
    /// No service manager started this process (no unit in its cgroup).
    case notUnderServiceManager
    /// The manager answered.
    case answered(ServiceManagerUnit, ServiceManagerAnswer)
    /// The manager could not be asked or did not answer in time.
    case unanswered(ServiceManagerUnit, ServiceManagerQueryError)
}

/// Asks the service manager why this process is being stopped.
package protocol ServiceManagerAsking {
    /// Asks about this process's own unit; never waits longer than the implementation's bound.
    func askAboutOwnUnit() -> ServiceManagerReport
}

/// The real service manager, over D-Bus (libsystemd's sd-bus), bounded in time.
///
/// A synchronous call on purpose: it happens once, at SIGTERM, and takes about a millisecond
/// (BENCHMARKS.md); the bound keeps a wedged bus from eating the stop budget, which already runs.
package struct SystemdServiceManager: ServiceManagerAsking {
    /// The longest the daemon waits for the answer (connection and authentication included).
    package static let defaultTimeout: Duration = .seconds(1)

    /// The bound on one query.
    package var timeout: Duration

    /// Creates the query with a bound.
    package init(timeout: Duration = Self.defaultTimeout) { self.timeout = timeout }

    /// Asks about this process's unit, if it has one.
    package func askAboutOwnUnit() -> ServiceManagerReport {
        guard let unit = ServiceManagerUnit.ofThisProcess() else { return .notUnderServiceManager }
        switch Self.ask(about: unit, timeout: timeout) {
        case .success(let answer): return .answered(unit, answer)
        case .failure(let error): return .unanswered(unit, error)
        }
    }

    /// Asks `unit`'s manager for its job's type and the system state, within `timeout`.
    /// `address` replaces the manager's usual bus (a D-Bus address; `brokered`: a bus daemon, not
    /// the manager's own socket) — for tests.
    package static func ask(
        about unit: ServiceManagerUnit, timeout: Duration, address: String? = nil, brokered: Bool = true
    ) -> Result<ServiceManagerAnswer, ServiceManagerQueryError> {
        var answer = csd_manager_answer()
        var step = [CChar](repeating: 0, count: 256)
        let manager = unit.manager == .user ? CSD_MANAGER_USER : CSD_MANAGER_SYSTEM
        let usec = UInt64(max(0, timeout.microseconds))
        let result = csd_manager_query(
            manager, unit.name, usec, address, brokered ? 1 : 0, &answer, &step, step.count)
        guard result == 0 else {
            let text = terminatedString(step)
            return .failure(ServiceManagerQueryError(errno: -result, step: text))
        }
        let jobType = withUnsafeBytes(of: answer.job_type) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let state = withUnsafeBytes(of: answer.system_state) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return .success(
            ServiceManagerAnswer(jobType: answer.job_id == 0 || jobType.isEmpty ? nil : jobType, systemState: state))
    }
}

/// The text of a NUL-terminated C buffer (all of it if there is no NUL).
func terminatedString(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
