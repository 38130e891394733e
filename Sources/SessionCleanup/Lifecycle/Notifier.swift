import CSystemd

/// Tells the service manager about the daemon's state (`sd_notify`).
public protocol Notifier: AnyObject {
    /// Sends the newline-joined assignments as one message.
    func send(_ assignments: [NotifyAssignment])
}

/// One `sd_notify` assignment.
public enum NotifyAssignment: Sendable, Equatable, CustomStringConvertible {
    /// `READY=1`: start-up finished (or a reload did).
    case ready
    /// `RELOADING=1` with `MONOTONIC_USEC=`: a reload began.
    case reloading(MonotonicInstant)
    /// `STOPPING=1`: the stop run began.
    case stopping
    /// `STATUS=`: one line for `systemctl status`.
    case status(String)
    /// `WATCHDOG=1`: the loop is alive.
    case watchdog
    /// `EXTEND_TIMEOUT_USEC=`: do not time out the current state within this duration.
    case extendTimeout(Duration)
    /// `ERRNO=`: why start-up failed.
    case errno(Int32)

    /// The assignment as sent.
    public var description: String {
        switch self {
        case .ready: return "READY=1"
        case .reloading(let now): return "RELOADING=1\nMONOTONIC_USEC=\(now.microseconds)"
        case .stopping: return "STOPPING=1"
        case .status(let text): return "STATUS=\(text.replacing("\n", with: " "))"
        case .watchdog: return "WATCHDOG=1"
        case .extendTimeout(let duration): return "EXTEND_TIMEOUT_USEC=\(max(0, duration.microseconds))"
        case .errno(let value): return "ERRNO=\(value)"
        }
    }
}

/// `sd_notify` on `$NOTIFY_SOCKET`; does nothing when it is unset (not run by systemd).
public final class SystemdNotifier: Notifier {
    /// Creates the notifier.
    public init() {}

    /// Sends the assignments without blocking the loop: when systemd's queue is full, a state
    /// change (READY, STOPPING, EXTEND_TIMEOUT_USEC, …) waits up to 250 ms for room, while a bare
    /// STATUS= or WATCHDOG=1 is dropped (the next one supersedes it). Not retried beyond that.
    public func send(_ assignments: [NotifyAssignment]) {
        let routine = assignments.allSatisfy {
            switch $0 {
            case .status, .watchdog: return true
            default: return false
            }
        }
        _ = csd_notify(assignments.map(\.description).joined(separator: "\n"), routine ? 0 : 250)
    }
}
