import Basics
import CSystemd
import EventLoop

/// Feeds systemd's watchdog (`WatchdogSec=`) from the event loop at half the interval, so a
/// hung loop stops the pings and systemd notices. It keeps pinging during the stop run: when
/// systemd stops the unit it no longer watches (only a starting, running or reloading service
/// is), but a stop run begun by SIGINT, or by a SIGTERM systemd did not send, runs while the
/// unit is still active, and a missed ping would get it killed halfway.
package final class Watchdog {
    /// The interval systemd expects pings within, or nil when the watchdog is off.
    package let interval: Duration?
    private let loop: EventLoop
    private let notifier: any Notifier
    private var timer: EventLoop.TimerID?

    /// Reads `$WATCHDOG_USEC`/`$WATCHDOG_PID` through `sd_watchdog_enabled`.
    package static func systemInterval() throws -> Duration? {
        var usec: UInt64 = 0
        let result = csd_watchdog_enabled(&usec)
        if result < 0 { throw SystemCallError("sd_watchdog_enabled", "$WATCHDOG_USEC", negativeErrno: result) }
        return result > 0 && usec > 0 ? .microseconds(Int64(clamping: usec)) : nil
    }

    /// Creates a watchdog feeder; nothing happens until ``start()``.
    package init(interval: Duration?, loop: EventLoop, notifier: any Notifier) {
        self.interval = interval
        self.loop = loop
        self.notifier = notifier
    }

    /// Pings now and then every half interval, until ``stop()``.
    package func start() {
        guard let interval, timer == nil else { return }
        ping(every: interval / 2)
    }

    /// Stops pinging.
    package func stop() {
        if let timer { loop.cancel(timer) }
        timer = nil
    }

    private func ping(every period: Duration) {
        notifier.send([.watchdog])
        timer = loop.schedule(after: period) { [weak self] in self?.ping(every: period) }
    }
}
