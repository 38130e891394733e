import Basics
import CSystemd
import EventLoop
import Glibc
import Journal

/// Tells the service manager about the daemon's state (`sd_notify`).
package protocol Notifier: AnyObject {
    /// Sends the newline-joined assignments as one message.
    func send(_ assignments: [NotifyAssignment])

    /// Waits, at most until `deadline`, for messages not yet delivered. For the last moments
    /// before exit.
    func flush(until deadline: MonotonicInstant)
}

/// One `sd_notify` assignment.
package enum NotifyAssignment: Sendable, Equatable, CustomStringConvertible {
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
    package var description: String {
        switch self {
        case .ready: return "READY=1"
        case .reloading(let now): return "RELOADING=1\nMONOTONIC_USEC=\(now.microseconds)"
        case .stopping: return "STOPPING=1"
        case .status(let text): return "STATUS=\(text.replacingText("\n", with: " "))"
        case .watchdog: return "WATCHDOG=1"
        case .extendTimeout(let duration): return "EXTEND_TIMEOUT_USEC=\(max(0, duration.microseconds))"
        case .errno(let value): return "ERRNO=\(value)"
        }
    }

    /// Whether a later message of the same kind supersedes this one (`STATUS=`, `WATCHDOG=1`);
    /// everything else is a state change that must arrive.
    var isRoutine: Bool {
        switch self {
        case .status, .watchdog: return true
        default: return false
        }
    }
}

/// The notify socket as ``SystemdNotifier`` uses it; tests substitute their own.
protocol NotifyChannel: AnyObject {
    /// The descriptor that becomes writable when the receiver has room.
    var descriptor: Int32 { get }
    /// Sends one message without blocking: 0, `-EAGAIN` when the receiver's queue is full, -errno.
    func send(_ bytes: [UInt8]) -> Int32
    /// Connects afresh after `-ECONNREFUSED` (systemd re-executed and bound a new socket).
    func reconnect() -> Bool
}

/// `$NOTIFY_SOCKET`, connected and non-blocking, so writability means "PID 1 has room".
final class ConnectedNotifySocket: NotifyChannel {
    private(set) var descriptor: Int32

    /// Connects to `$NOTIFY_SOCKET`; nil when it is unset (not run by systemd) or unusable.
    init?() {
        var fd: Int32 = -1
        guard csd_notify_connect(&fd) == 1 else { return nil }
        descriptor = fd
    }

    deinit { close(descriptor) }

    func send(_ bytes: [UInt8]) -> Int32 {
        bytes.withUnsafeBytes { csd_notify_send(descriptor, $0.baseAddress, $0.count) }
    }

    func reconnect() -> Bool {
        var fd: Int32 = -1
        guard csd_notify_connect(&fd) == 1 else { return false }
        close(descriptor)
        descriptor = fd
        return true
    }
}

/// `sd_notify` on `$NOTIFY_SOCKET` that never blocks the event loop yet never silently loses a
/// state change; does nothing when `$NOTIFY_SOCKET` is unset (not run by systemd).
///
/// A message goes out at once when PID 1's queue has room. Otherwise it waits, in order, and
/// goes out as soon as the socket is writable (the event loop watches it): state changes
/// (`READY=1`, `STOPPING=1`, `RELOADING=1`, `EXTEND_TIMEOUT_USEC=`, …) are kept until sent, a
/// waiting `STATUS=` or `WATCHDOG=1` is replaced by the next one. A state change still not
/// delivered after ``deliveryBound`` — or that cannot be sent at all — is journaled as
/// `notify-failed` (error). Before the loop runs and at exit, ``flush(until:)`` waits a bounded
/// time instead.
package final class SystemdNotifier: Notifier {
    /// How long a state change may wait for room before the daemon says, loudly, that it was lost.
    package static let deliveryBound: Duration = .seconds(5)

    private struct Pending {
        let assignments: [NotifyAssignment]
        let bytes: [UInt8]
        let since: MonotonicInstant
        var isRoutine: Bool { assignments.allSatisfy(\.isRoutine) }
    }

    private let socket: (any NotifyChannel)?
    private let journal: any JournalSink
    private let clock: any MonotonicClock
    private var pending: [Pending] = []
    private weak var loop: EventLoop?
    private var watched: Int32?
    private var boundTimer: EventLoop.TimerID?

    /// Creates the notifier on `$NOTIFY_SOCKET`; failures are journaled to `journal`.
    package convenience init(journal: any JournalSink) {
        self.init(socket: ConnectedNotifySocket(), journal: journal, clock: SystemMonotonicClock())
    }

    init(socket: (any NotifyChannel)?, journal: any JournalSink, clock: any MonotonicClock) {
        self.socket = socket
        self.journal = journal
        self.clock = clock
    }

    /// Messages waiting for room in PID 1's queue.
    package var pendingMessages: Int { pending.count }

    /// From now on, waiting messages go out when the socket becomes writable.
    package func attach(to loop: EventLoop) {
        self.loop = loop
        deliver()
    }

    /// Sends the assignments as one message, now or as soon as there is room (see above).
    package func send(_ assignments: [NotifyAssignment]) {
        guard socket != nil, !assignments.isEmpty else { return }
        let text = assignments.map(\.description).joined(separator: "\n")
        let message = Pending(assignments: assignments, bytes: Array(text.utf8), since: clock.now())
        if message.isRoutine, let last = pending.last, last.isRoutine,
            last.assignments.map(Self.kind) == assignments.map(Self.kind)
        {
            pending[pending.count - 1] = message  // superseded before it went out
        } else {
            pending.append(message)
        }
        deliver()
    }

    /// Waits, at most until `deadline`, for waiting state changes to go out; journals those that
    /// could not (and drops waiting `STATUS=`/`WATCHDOG=1`). Blocks: for start-up failures and
    /// the last moments before exit.
    package func flush(until deadline: MonotonicInstant) {
        deliver()
        // Only state changes are worth waiting for; a STATUS= or WATCHDOG=1 is not.
        while pending.contains(where: { !$0.isRoutine }), let socket {
            let now = clock.now()
            guard now < deadline else { break }
            let wait = Int32(clamping: deadline.duration(since: now).millisecondsRoundedUp)
            guard csd_wait_writable(socket.descriptor, wait) > 0 else { break }
            deliver()
        }
        giveUp(on: pending, cause: "PID 1's notify queue stayed full")
        pending = []
        disarm()
    }

    // MARK: Delivery

    private func deliver() {
        guard let socket else { return }
        while let message = pending.first {
            var result = socket.send(message.bytes)
            if result == -ECONNREFUSED || result == -ENOTCONN, socket.reconnect() {
                disarm()
                result = socket.send(message.bytes)
            }
            if result == -EAGAIN {
                arm()
                return
            }
            pending.removeFirst()
            if result < 0 {
                giveUp(
                    on: [message], cause: SystemCallError("send", "$NOTIFY_SOCKET", negativeErrno: result).description)
            }
        }
        disarm()
    }

    private func giveUp(on messages: [Pending], cause: String) {
        for message in messages where !message.isRoutine {
            let text = message.assignments.filter { !$0.isRoutine }.map(\.description).joined(separator: " ")
            journal.record(
                JournalEntry(
                    .notifyFailed, "State change \"\(text)\" did not reach systemd: \(cause)",
                    [JournalField(.notifyState, text), JournalField(.error, cause)]))
        }
    }

    /// State changes waiting longer than the bound are given up on, loudly.
    private func checkBound() {
        boundTimer = nil
        let now = clock.now()
        let overdue = pending.filter { !$0.isRoutine && now.duration(since: $0.since) >= Self.deliveryBound }
        guard !overdue.isEmpty else {
            scheduleBoundCheck()
            return
        }
        let cause = "PID 1's notify queue stayed full for \(Self.deliveryBound.humanReadable)"
        giveUp(on: overdue, cause: cause)
        pending.removeAll { !$0.isRoutine && now.duration(since: $0.since) >= Self.deliveryBound }
        if pending.isEmpty { disarm() } else { scheduleBoundCheck() }
    }

    private func scheduleBoundCheck() {
        guard boundTimer == nil, let loop, let oldest = pending.first(where: { !$0.isRoutine }) else { return }
        boundTimer = loop.schedule(at: oldest.since.advanced(by: Self.deliveryBound)) { [weak self] in
            self?.checkBound()
        }
    }

    private func arm() {
        scheduleBoundCheck()
        guard let loop, let socket, watched != socket.descriptor else { return }
        disarm()
        do {
            try loop.watch(socket.descriptor, readable: false, writable: true) { [weak self] _ in self?.deliver() }
            watched = socket.descriptor
        } catch {
            loop.schedule(after: .milliseconds(10)) { [weak self] in self?.deliver() }
        }
    }

    private func disarm() {
        if let boundTimer, pending.allSatisfy(\.isRoutine) {
            loop?.cancel(boundTimer)
            self.boundTimer = nil
        }
        guard let fd = watched else { return }
        loop?.unwatch(fd)
        watched = nil
    }

    /// Which kind an assignment is, to tell when a routine message supersedes another.
    private static func kind(_ assignment: NotifyAssignment) -> Int {
        switch assignment {
        case .status: return 0
        case .watchdog: return 1
        default: return 2
        }
    }
}
