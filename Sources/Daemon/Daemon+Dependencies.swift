import EventLoop
import Journal
import Systemd

extension Daemon {
    /// What the daemon talks to; tests pass in-memory notifier and journal.
    package struct Dependencies {
        /// The event loop everything runs on.
        package var loop: EventLoop
        /// `sd_notify`.
        package var notifier: any Notifier
        /// The journal.
        package var journal: any JournalSink
        /// The watchdog interval (`$WATCHDOG_USEC`), or nil.
        package var watchdogInterval: Duration?
        /// Asked at SIGTERM whether the unit is being restarted.
        package var serviceManager: any ServiceManagerAsking
        /// Keeps systemd's stop timeout at the stop's end and exits as a last resort; nil: none
        /// (tests, which must not exit).
        package var stopDeadline: (any StopDeadlineKeeping)?

        /// Bundles the dependencies.
        package init(
            loop: EventLoop, notifier: any Notifier, journal: any JournalSink, watchdogInterval: Duration?,
            serviceManager: any ServiceManagerAsking = SystemdServiceManager(),
            stopDeadline: (any StopDeadlineKeeping)? = nil
        ) {
            self.loop = loop
            self.notifier = notifier
            self.journal = journal
            self.watchdogInterval = watchdogInterval
            self.serviceManager = serviceManager
            self.stopDeadline = stopDeadline
        }
    }
}
