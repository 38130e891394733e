import Basics
import CSystemd
import EventLoop
import Glibc

/// What logind said or did on a ``LoginConnection``.
package enum LoginEvent: Sendable, Equatable {
    /// `PrepareForSleep`: true when the machine is about to sleep, false when it resumed.
    case prepareForSleep(Bool)
    /// `Inhibit` answered with the lock's descriptor, now the receiver's to close.
    case inhibited(fd: Int32)
    /// `Inhibit` failed: the step and the D-Bus error.
    case inhibitFailed(String)
    /// `InhibitDelayMaxUSec`: how long logind waits for delay locks.
    case delayMax(Duration)
    /// Reading `InhibitDelayMaxUSec` failed.
    case delayMaxFailed(String)
    /// The bus refused to send `PrepareForSleep` to this connection.
    case subscribeFailed(String)
    /// The connection ended; nothing more comes on it.
    case disconnected(String)
}

/// A connection to logind (`org.freedesktop.login1`) on the system bus, driven by the event
/// loop: it never blocks the daemon. Sends `Inhibit` and reads `InhibitDelayMaxUSec` without
/// waiting; hears `PrepareForSleep`. Everything it learns arrives as a ``LoginEvent``.
package final class LoginConnection {
    private let loop: EventLoop
    private let onEvent: (LoginEvent) -> Void
    private var login: OpaquePointer?
    private var fd: Int32 = -1
    private var timer: EventLoop.TimerID?

    /// Connects to the system bus (`address` instead: a broker, for tests) and subscribes to
    /// `PrepareForSleep`; `onEvent` gets what follows, on the loop.
    package init(loop: EventLoop, address: String? = nil, onEvent: @escaping (LoginEvent) -> Void) throws {
        self.loop = loop
        self.onEvent = onEvent
        var step = [CChar](repeating: 0, count: 256)
        var opened: OpaquePointer?
        let result = csd_login_open(address, &opened, &step, step.count)
        guard result == 0, let opened else {
            throw SystemCallError("logind: " + terminatedString(step), negativeErrno: result)
        }
        login = opened
        fd = csd_login_fd(opened)
        do {
            try loop.watch(fd, readable: true, writable: true) { [weak self] _ in self?.process() }
        } catch {
            csd_login_close(opened)
            login = nil
            throw error
        }
        process()
    }

    deinit { close() }

    /// False once the connection ended (``close()``, or the bus went away).
    package var isOpen: Bool { login != nil }

    /// Asks for a `sleep` lock of `mode` (`delay`), naming `who` and `why` as `systemd-inhibit
    /// --list` shows them; the answer is an ``LoginEvent/inhibited(fd:)`` or
    /// ``LoginEvent/inhibitFailed(_:)``.
    package func inhibitSleep(who: String, why: String, mode: String = "delay") throws {
        guard let login else { throw SystemCallError("logind: Inhibit", errno: ENOTCONN) }
        let result = csd_login_inhibit(login, "sleep", who, why, mode)
        guard result >= 0 else { throw SystemCallError("logind: Inhibit", negativeErrno: result) }
        process()
    }

    /// Asks for `InhibitDelayMaxUSec`; the answer is a ``LoginEvent/delayMax(_:)`` or
    /// ``LoginEvent/delayMaxFailed(_:)``.
    package func askDelayMax() throws {
        guard let login else { throw SystemCallError("logind: InhibitDelayMaxUSec", errno: ENOTCONN) }
        let result = csd_login_ask_delay_max(login)
        guard result >= 0 else {
            throw SystemCallError("logind: InhibitDelayMaxUSec", negativeErrno: result)
        }
        process()
    }

    /// Ends the connection; no event comes after this. Lock descriptors already delivered stay open.
    package func close() {
        guard let login else { return }
        if let timer { loop.cancel(timer) }
        loop.unwatch(fd)
        csd_login_close(login)
        self.login = nil
    }

    /// Lets sd-bus handle what is ready, hands the events out, then waits for what sd-bus wants next.
    private func process() {
        guard let login else { return }
        let failed = csd_login_process(login) < 0
        var events: [LoginEvent] = []
        var event = csd_login_event()
        while csd_login_next_event(login, &event) == 1 { events.append(Self.translate(&event)) }
        if failed {
            close()
        } else {
            rearm(login)
        }
        for event in events { onEvent(event) }
    }

    /// Watches the descriptor for what sd-bus waits for, and wakes at its timeout.
    private func rearm(_ login: OpaquePointer) {
        let wanted = csd_login_events(login)
        if wanted >= 0 {
            try? loop.update(fd, readable: wanted & Int32(POLLIN) != 0, writable: wanted & Int32(POLLOUT) != 0)
        }
        if let timer { loop.cancel(timer) }
        timer = nil
        let due = csd_login_timeout(login)
        guard due != UInt64.max else { return }
        timer = loop.schedule(at: MonotonicInstant(microseconds: due)) { [weak self] in
            self?.timer = nil
            self?.process()
        }
    }

    private static func translate(_ event: inout csd_login_event) -> LoginEvent {
        let text = withUnsafeBytes(of: &event.text) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        switch Int(event.kind) {
        case Int(CSD_LOGIN_PREPARE_FOR_SLEEP): return .prepareForSleep(event.value != 0)
        case Int(CSD_LOGIN_INHIBITED): return .inhibited(fd: event.fd)
        case Int(CSD_LOGIN_INHIBIT_FAILED): return .inhibitFailed(text)
        case Int(CSD_LOGIN_DELAY_MAX): return .delayMax(.microseconds(Int64(clamping: event.value)))
        case Int(CSD_LOGIN_DELAY_MAX_FAILED): return .delayMaxFailed(text)
        case Int(CSD_LOGIN_SUBSCRIBE_FAILED): return .subscribeFailed(text)
        default: return .disconnected(text)
        }
    }
}
