/// The long-running daemon: starts, reports ready, feeds the watchdog, reloads on SIGHUP, and
/// on SIGTERM runs the stop run inside its budget, then returns the exit status.
///
/// Data flows one way: signal → budget → calls → outcomes → store and journal → exit.
/// Everything runs on the event loop's thread.
public final class Daemon {
    /// What the daemon talks to; tests pass in-memory notifier and journal.
    public struct Dependencies {
        /// The event loop everything runs on.
        public var loop: EventLoop
        /// `sd_notify`.
        public var notifier: any Notifier
        /// The journal.
        public var journal: any JournalSink
        /// The watchdog interval (`$WATCHDOG_USEC`), or nil.
        public var watchdogInterval: Duration?

        /// Bundles the dependencies.
        public init(loop: EventLoop, notifier: any Notifier, journal: any JournalSink, watchdogInterval: Duration?) {
            self.loop = loop
            self.notifier = notifier
            self.journal = journal
            self.watchdogInterval = watchdogInterval
        }
    }

    /// Time kept between the budget's end and systemd's kill, for recording results and exiting.
    public static let exitGrace: Duration = .seconds(5)

    private enum Phase {
        case running
        case stopping(StopBudget)
        case finished(ExitStatus)
    }

    private let paths: DaemonPaths
    private var configuration: Configuration
    private var configurationFiles: [String]
    private let loop: EventLoop
    private let notifier: any Notifier
    private let journal: any JournalSink
    private let watchdog: Watchdog
    private var phase = Phase.running
    private let startedAt: MonotonicInstant

    /// Creates the daemon with a configuration already loaded (and validated) from `files`.
    public init(paths: DaemonPaths, configuration: Configuration, configurationFiles: [String], dependencies: Dependencies)
    {
        self.paths = paths
        self.configuration = configuration
        self.configurationFiles = configurationFiles
        loop = dependencies.loop
        notifier = dependencies.notifier
        journal = dependencies.journal
        watchdog = Watchdog(interval: dependencies.watchdogInterval, loop: loop, notifier: notifier)
        startedAt = loop.clock.now()
    }

    /// Starts (signals are handled once ``run()`` turns the loop), reports ready.
    public func start(signals: SignalSource) throws {
        journal.record(
            JournalEntry(
                .info, "session-cleanup \(SessionCleanupVersion.string) starting",
                [
                    JournalField(.event, "started"),
                    JournalField(.configFile, configurationFiles.joined(separator: " ")),
                ]))
        try DaemonPaths.makeDirectory(paths.stateDirectory)
        try DaemonPaths.makeDirectory(paths.runtimeDirectory)
        try signals.attach(to: loop) { [weak self] signal, sender in self?.handle(signal, from: sender) }
        watchdog.start()
        notifier.send([.ready, .status(readyStatus)])
        journal.record(
            JournalEntry(
                .info, "Ready: stop budget \(configuration.stop.budget.humanReadable)",
                [
                    JournalField(.event, "ready"),
                    JournalField(.budgetUsec, configuration.stop.budget.microseconds),
                    JournalField(.durationUsec, loop.clock.now().duration(since: startedAt).microseconds),
                ]))
    }

    /// Turns the event loop until the stop run has finished; returns the exit status.
    public func run() throws -> ExitStatus {
        while true {
            if case .finished(let status) = phase { return status }
            try loop.runOnce()
        }
    }

    private var readyStatus: String {
        "Ready: \(configuration.endpoints.count) endpoints, stop budget \(configuration.stop.budget.humanReadable)"
    }

    // MARK: Signals

    private func handle(_ signal: DaemonSignal, from sender: Int32) {
        switch (signal, phase) {
        case (.hangUp, .running):
            reload()
        case (.terminate, .running), (.interrupt, .running):
            beginStop(signal: signal, sender: sender)
        case (.terminate, .stopping(let budget)), (.interrupt, .stopping(let budget)):
            journal.record(
                JournalEntry(
                    .warning, "\(signal) during the stop run: expiring the budget now",
                    [
                        JournalField(.event, "second-signal"), JournalField(.signal, signal.description),
                        JournalField(.senderPID, sender),
                    ]))
            budget.expire(reason: .secondSignal)
        case (.hangUp, .stopping):
            journal.record(
                JournalEntry(.notice, "SIGHUP ignored: the daemon is stopping", [JournalField(.event, "reload-ignored")]))
        case (_, .finished):
            break
        }
    }

    // MARK: Reload

    private func reload() {
        notifier.send([.reloading(loop.clock.now()), .status("Reloading configuration")])
        journal.record(JournalEntry(.info, "Reloading configuration", [JournalField(.event, "reloading")]))
        do {
            let (loaded, files) = try ConfigurationLoader.load(path: paths.configFile, required: paths.configRequired)
            configuration = loaded
            configurationFiles = files
            journal.record(
                JournalEntry(
                    .info, "Configuration reloaded from \(files.count) file(s)",
                    [JournalField(.event, "reloaded"), JournalField(.configFile, files.joined(separator: " "))]))
            notifier.send([.ready, .status(readyStatus)])
        } catch {
            journal.record(
                JournalEntry(
                    .error, "Configuration not reloaded, keeping the previous one: \(error)",
                    [
                        JournalField(.event, "reload-failed"), JournalField(.error, error.description),
                        JournalField(.configFile, error.file),
                    ]))
            notifier.send([.ready, .status(readyStatus + " (reload failed: \(error))")])
        }
    }

    // MARK: Stop run

    private func beginStop(signal: DaemonSignal, sender: Int32) {
        let settings = configuration.stop
        let budget = StopBudget(total: settings.budget, minimumRequest: settings.minimumRequest, clock: loop.clock)
        phase = .stopping(budget)
        // Tell systemd first: from here on its stop timeout must cover the budget plus the grace.
        notifier.send([
            .stopping, .extendTimeout(settings.budget + Self.exitGrace),
            .status("Stopping: ending sessions, \(settings.budget.humanReadable) budget"),
        ])
        journal.record(
            JournalEntry(
                .info, "\(signal) received: stop run begun with a budget of \(settings.budget.humanReadable)",
                [
                    JournalField(.event, "stop-begun"), JournalField(.signal, signal.description),
                    JournalField(.senderPID, sender), JournalField(.budgetUsec, settings.budget.microseconds),
                ]))
        budget.onExpiration { [weak self] reason in self?.expire(budget, reason: reason) }
        let timer = loop.schedule(at: budget.deadline) { budget.expireIfDue() }
        // No sessions are ended yet: the run is complete as soon as it begins.
        loop.cancel(timer)
        finishStop(budget)
    }

    private func expire(_ budget: StopBudget, reason: StopBudget.ExpiryReason) {
        journal.record(
            JournalEntry(
                .warning, "Stop budget expired (\(reason.rawValue))",
                [
                    JournalField(.event, "expired"), JournalField(.budgetUsec, budget.total.microseconds),
                    JournalField(.timeRemainingUsec, max(.zero, budget.deadline.duration(since: loop.clock.now())).microseconds),
                ]))
        finishStop(budget)
    }

    private func finishStop(_ budget: StopBudget) {
        guard case .stopping = phase else { return }
        watchdog.stop()
        let took = budget.elapsed
        notifier.send([.status("Stopped in \(took.humanReadable)")])
        journal.record(
            JournalEntry(
                .info, "Stopped in \(took.humanReadable)",
                [
                    JournalField(.event, "stopped"), JournalField(.durationUsec, took.microseconds),
                    JournalField(.timeRemainingUsec, budget.timeRemaining.microseconds),
                ]))
        phase = .finished(.success)
    }
}
