import Basics
import CSystemd
import EventLoop
import Glibc

/// Keeps systemd's stop timeout at the stop's end while the stop lasts, and ends the process
/// as a last resort before systemd's SIGKILL would.
package protocol StopDeadlineKeeping: AnyObject {
    /// From now until the process exits: systemd's stop timeout is kept at `end`, and a process
    /// still running at `exitAt` exits with the status given last. Called once, at the stop.
    func keep(until end: MonotonicInstant, exitAt: MonotonicInstant, status: Int32)
    /// The status the last-resort exit uses from now on: the daemon's own, once it knows it.
    func settle(status: Int32)
}

/// ``StopDeadlineKeeping`` on a thread of its own (`csd_stop_keeper`), so nothing the event loop
/// does — a store settle, a journal flush, a starved CPU — delays it.
///
/// systemd extends a stop timeout *from the moment* it reads `EXTEND_TIMEOUT_USEC=`
/// (sd_notify(3)) and forgets the extension across `systemctl daemon-reload` and
/// `daemon-reexec`, after which its timer runs from the stop's beginning plus `TimeoutStopSec=`
/// again. So the extension is sent every ``interval``, each time for what is left until the end:
/// a reload mid-run finds a fresh one waiting in its notify queue.
package final class SystemdStopDeadlineKeeper: StopDeadlineKeeping {
    /// How often the extension is sent again: short enough that one is queued whenever PID 1
    /// comes back from a reload (tens of milliseconds), cheap for PID 1 (20 small messages a second).
    package static let interval: Duration = .milliseconds(50)

    private let notifySocket: String?
    private let reportError: (String) -> Void

    /// A keeper sending to `notifySocket` (`$NOTIFY_SOCKET`; nil sends nothing, the last-resort
    /// exit still holds); `reportError` is told when the thread cannot start.
    package init(notifySocket: String?, reportError: @escaping (String) -> Void) {
        self.notifySocket = notifySocket
        self.reportError = reportError
    }

    /// The keeper for this process's `$NOTIFY_SOCKET`.
    package convenience init(reportError: @escaping (String) -> Void) {
        self.init(notifySocket: getenv("NOTIFY_SOCKET").map { String(cString: $0) }, reportError: reportError)
    }

    package func keep(until end: MonotonicInstant, exitAt: MonotonicInstant, status: Int32) {
        let text =
            "session-cleanup: still running at the end of the stop budget and its exit grace; "
            + "exiting now, before systemd's SIGKILL (the store keeps what was not confirmed ended)"
        let result = csd_stop_keeper_start(
            notifySocket, end.microseconds, exitAt.microseconds, UInt64(Self.interval.microseconds), status, text)
        if result < 0 {
            reportError(
                SystemCallError("start the stop deadline's keeper", "thread", negativeErrno: result).description)
        }
    }

    package func settle(status: Int32) { csd_stop_keeper_set_exit_status(status) }

    /// Stops the keeper's thread (tests; the daemon's keeper lasts until the process exits).
    package func stop() { csd_stop_keeper_stop() }

    /// Extensions sent since the keeper started (tests).
    package var sent: UInt64 { csd_stop_keeper_sent() }
}
