import Basics
import CSystemd
import EventLoop
import Glibc

/// The signals the daemon acts on.
package enum DaemonSignal: Sendable, Equatable, CustomStringConvertible {
    /// SIGTERM: systemd asks the daemon to stop.
    case terminate
    /// SIGINT: Ctrl-C in a terminal; treated as SIGTERM.
    case interrupt
    /// SIGHUP: reload the configuration.
    case hangUp
    /// SIGUSR1: the units' `RestartKillSignal=`, which systemd (≥ 250) sends instead of SIGTERM
    /// when the unit is being restarted — a restart told without asking over D-Bus.
    case restart

    /// `SIGTERM`, `SIGINT`, `SIGHUP`, `SIGUSR1`.
    package var description: String {
        switch self {
        case .terminate: return "SIGTERM"
        case .interrupt: return "SIGINT"
        case .hangUp: return "SIGHUP"
        case .restart: return "SIGUSR1"
        }
    }
}

/// SIGTERM, SIGINT, SIGHUP and SIGUSR1 as ordinary events on the event loop, through a `signalfd`.
///
/// ``open()`` blocks the signals in the calling thread; it must run first thing in a synchronous
/// `main`, before any other thread exists, so every later thread inherits the mask.
package final class SignalSource {
    private let fd: Int32

    /// Blocks the signals and opens the descriptor that reports them.
    package static func open() throws -> SignalSource {
        let fd = csd_signals_open()
        guard fd >= 0 else { throw SystemCallError("signalfd", "SIGTERM SIGINT SIGHUP SIGUSR1", negativeErrno: fd) }
        return SignalSource(fd: fd)
    }

    private init(fd: Int32) { self.fd = fd }

    deinit { close(fd) }

    /// Delivers every signal to `handler` as it arrives, with the sender's pid.
    package func attach(to loop: EventLoop, _ handler: @escaping (DaemonSignal, Int32) -> Void) throws {
        try loop.watch(fd) { [fd] _ in
            while true {
                var sender: Int32 = 0
                let number = csd_signals_read(fd, &sender)
                guard number > 0 else { return }
                switch number {
                case SIGTERM: handler(.terminate, sender)
                case SIGINT: handler(.interrupt, sender)
                case SIGHUP: handler(.hangUp, sender)
                case SIGUSR1: handler(.restart, sender)
                default: continue
                }
            }
        }
    }
}
