import EventLoop

/// Keeps systemd's `STATUS=` line (what `systemctl status` shows) in step with the running
/// daemon: a change marks the line stale, and one update goes out at most ``delay`` after the
/// first change however many follow — a burst of registrations is one notification, not one each.
package final class StatusLine {
    /// How long a change may go unreported.
    static let delay: Duration = .seconds(1)

    private let loop: EventLoop
    private let notifier: any Notifier
    private let text: () -> String
    private var pending: EventLoop.TimerID?
    private var stopped = false

    /// A line whose text is `text()` at the moment it is sent.
    package init(loop: EventLoop, notifier: any Notifier, text: @escaping () -> String) {
        self.loop = loop
        self.notifier = notifier
        self.text = text
    }

    /// Something the line shows has changed: send it within ``delay``.
    package func changed() {
        guard !stopped, pending == nil else { return }
        pending = loop.schedule(after: Self.delay) { [weak self] in
            guard let self else { return }
            self.pending = nil
            self.notifier.send([.status(self.text())])
        }
    }

    /// The line was just sent another way (with `READY=1`, say): nothing is pending any more.
    func sent() {
        if let pending { loop.cancel(pending) }
        pending = nil
    }

    /// From now on the stop run owns `STATUS=`: no more updates from here.
    package func stop() {
        sent()
        stopped = true
    }
}
