import Basics
import Configuration
import Control
import EventLoop
import HTTPEngine
import JSON
import Journal
import Metrics
import Runs
import Systemd
import Vocabulary

/// The long-running daemon's life: starts, reports ready, feeds the watchdog, reloads on
/// SIGHUP, and on SIGTERM runs the stop run inside its budget, then returns the exit status.
///
/// This type is the phase machine (running → handing over or stopping → finished) and the order
/// of each step, read top to bottom: ``start(signals:)``, ``run()``, the signals; then, in the
/// files beside it, `Daemon+Termination.swift` (a restart's hand-over, or a stop run?),
/// `Daemon+HandOver.swift`, `Daemon+Stop.swift` (its beginning and its end), and
/// `Daemon+Reload.swift`. Control requests come to the daemon first
/// (`Daemon+ControlRequests.swift`): `reload` is its own, the others go to the
/// ``SessionRequestHandler`` with the daemon's ``DaemonState``.
///
/// The work lives with the parts it wires together: ``StoreCommitter`` (the store and when it is
/// made durable), ``RunCoordinator`` (background runs and the stop run), ``ActiveConfiguration``
/// (the configuration in force), ``SessionRequestHandler`` (requests about sessions). Data flows
/// one way: signal → budget → calls → outcomes → store and journal → exit. Everything runs on
/// the event loop's thread.
package final class Daemon {
    /// Time kept between the budget's end and systemd's kill, for recording results and exiting.
    package static let exitGrace: Duration = .seconds(5)
    /// How long before the end of ``exitGrace`` a process still running exits on its own (status
    /// 75, or its own once known), so that systemd's SIGKILL never comes. A second: on a starved
    /// 2-core machine with 200,000 sessions the exit itself (the keeper's wake-up, the kernel
    /// freeing the address space) took about 0.3 s (Benchmarks/exit-bound-bench.sh).
    package static let lastResortMargin: Duration = .seconds(1)
    /// How long the end of a stop or a hand-over waits for the store to write what it holds
    /// (within ``exitGrace``).
    static let storeFlushTimeout: Duration = .seconds(3)
    /// How long the last state changes may wait for room in PID 1's notify queue at exit.
    static let notifyFlushLimit: Duration = .milliseconds(250)

    /// Where the daemon is in its life.
    enum Phase {
        /// Serving: registrations, requests, background runs.
        case running
        /// A restart (since the SIGTERM was handled): finishing the requests of connected clients,
        /// then exiting with every session kept.
        case handingOver(since: MonotonicInstant)
        /// The stop run is ending every session inside its budget.
        case stopping(StopRunBookkeeping)
        /// Done: ``run()`` returns the status.
        case finished(ExitStatus)

        /// The state control requests are answered in.
        var state: DaemonState {
            switch self {
            case .running: return .running
            case .handingOver: return .restarting
            case .stopping: return .stopping
            case .finished: return .stopped
            }
        }
    }

    /// What exists only once ``start(signals:)`` has opened the store and the socket.
    struct Started {
        /// The session store and when it is made durable.
        let committer: StoreCommitter
        /// Background runs and the stop run.
        let runs: RunCoordinator
        /// The answers to requests about sessions.
        let requests: SessionRequestHandler
        /// The control socket.
        let controlServer: ControlServer
        /// The socket systemd passed, if the daemon was socket-activated.
        let activatedSocket: ActivatedSocket?
        /// `STATUS=` while running.
        let statusLine: StatusLine
        /// node_exporter's textfile, when configured.
        let metrics: MetricsPublisher
        /// The sleep lock, when `[Sleep] EndSessions=yes`.
        let sleep: SleepWatch
    }

    /// Where the daemon's files are.
    let paths: DaemonPaths
    /// The configuration in force.
    let configuration: ActiveConfiguration
    /// The loop everything runs on.
    let loop: EventLoop
    /// `sd_notify`.
    let notifier: any Notifier
    /// The journal.
    let journal: any JournalSink
    /// Fed while the daemon runs; stopped at its end.
    let watchdog: Watchdog
    /// Asked at SIGTERM whether the unit is being restarted.
    let serviceManager: any ServiceManagerAsking
    /// Keeps systemd's stop timeout at the stop's end from SIGTERM to exit.
    let stopDeadline: (any StopDeadlineKeeping)?
    private let startedAt: MonotonicInstant
    /// Where the daemon is; changed only by the steps that begin and end a hand-over or a stop.
    var phase = Phase.running
    /// The parts made by ``start(signals:)``; nil before.
    private(set) var started: Started?

    /// Creates the daemon with a configuration already loaded (and validated) from `files`;
    /// `fallbackCause`: the files' error when it is the last good configuration instead
    /// (``LastGoodConfiguration``).
    package init(
        paths: DaemonPaths, configuration: Configuration, configurationFiles: [String],
        fallbackCause: String? = nil, dependencies: Dependencies
    ) {
        self.paths = paths
        self.configuration = ActiveConfiguration(
            configuration, files: configurationFiles, fallbackCause: fallbackCause)
        loop = dependencies.loop
        notifier = dependencies.notifier
        journal = dependencies.journal
        watchdog = Watchdog(interval: dependencies.watchdogInterval, loop: loop, notifier: notifier)
        serviceManager = dependencies.serviceManager
        stopDeadline = dependencies.stopDeadline
        startedAt = loop.clock.now()
    }

    /// Starts (signals are handled once ``run()`` turns the loop), reports ready.
    package func start(signals: SignalSource) throws {
        MallocArenas.limitToOne()  // before the store starts its writer threads
        journal.record(
            JournalEntry(
                .started, "session-cleanup \(SessionCleanupVersion.string) starting",
                [JournalField(.configFile, configuration.files.joined(separator: " "))]))
        try CoreDumpExclusion.apply()  // before the store brings its keys into memory
        try DaemonPaths.makeDirectory(paths.stateDirectory)
        let storeKey = try StoreKeyCredential.load(configuration.current.store, from: paths.credentialsDirectory)
        let committer = try StoreCommitter(
            directory: paths.stateDirectory, storeKey: storeKey, loop: loop, journal: journal)
        if committer.store.readOnlyCause == nil {
            try InterruptedStopRun.recover(committer, journal: journal)
            InterruptedStopRun.reserveSpace(in: committer.store, journal: journal)
        }
        if let cause = configuration.fallbackCause {
            journal.record(
                JournalEntry(
                    .configFallback,
                    "Invalid configuration, running on the last good one until the files are fixed: \(cause)",
                    [
                        JournalField(.error, cause),
                        JournalField(.configFile, configuration.files.joined(separator: " ")),
                    ]))
        } else {
            LastGoodConfiguration.save(files: configuration.files, to: committer.store, journal: journal)
        }
        let lastStop = LastStopRunDocument.read(from: committer.store)
        reportIncompleteJournal(of: lastStop)
        let runs = RunCoordinator(
            loop: loop, journal: journal, committer: committer, configuration: configuration,
            credentialsDirectory: paths.credentialsDirectory)
        runs.onBackgroundRunFinished = { [weak self] in
            guard let self else { return }
            self.notifier.send([.status(self.readyStatus)])
        }
        let requests = SessionRequestHandler(
            committer: committer, runs: runs, configuration: configuration, loop: loop, startedAt: startedAt,
            lastStopSummary: lastStop)
        let settings = configuration.current
        DescriptorLimit.raise(
            toFit: HTTPEngine.Limits(settings).maxConnections + ControlServer.Limits().maxClients + 64,
            maxConcurrentRequests: settings.stop.maxConcurrentRequests, journal: journal)
        let (controlServer, activated) = try ControlSocketSetup.open(
            paths: paths, control: settings.control, loop: loop, handler: self, journal: journal)
        let statusLine = StatusLine(loop: loop, notifier: notifier) { [weak self] in self?.readyStatus ?? "" }
        let metrics = MetricsPublisher(
            loop: loop, journal: journal,
            directory: { [configuration] in configuration.current.metrics.textfileDirectory },
            sessionsByEndpoint: { [store = committer.store] in
                var counts: [String: Int] = [:]
                for (endpoints, count) in store.endpointUsage {
                    for endpoint in endpoints { counts[endpoint, default: 0] += count }
                }
                return counts
            })
        if let lastStop, let seeded = RunMetrics(lastStopFacts: lastStop) { metrics.runFinished(seeded) }
        metrics.sessionsChanged()
        // Held strongly (neither refers back to the committer): this runs for every session a
        // run ends, and two weak loads cost ~400 instructions a call (callgrind, issue 25).
        committer.onSessionCountChanged = { [statusLine, metrics] in
            statusLine.changed()
            metrics.sessionsChanged()
        }
        runs.onRunFinished = { [weak metrics] report in
            metrics?.runFinished(RunMetrics(report, finishedAt: wallClockMicroseconds(), journalDropped: 0))
        }
        let sleep = makeSleepWatch(committer: committer, runs: runs)
        requests.sleepLock = { [weak sleep] in sleep?.statusText }
        started = Started(
            committer: committer, runs: runs, requests: requests, controlServer: controlServer,
            activatedSocket: activated, statusLine: statusLine, metrics: metrics, sleep: sleep)
        reportUnconfiguredEndpoints()
        try signals.attach(to: loop) { [weak self] signal, sender in self?.handle(signal, from: sender) }
        watchdog.start()
        notifier.send([.ready, .status(readyStatus)])
        journal.record(
            JournalEntry(
                .ready, "Ready: stop budget \(settings.stop.budget.humanReadable)",
                [
                    JournalField(.budgetUsec, settings.stop.budget.microseconds),
                    JournalField(.durationUsec, loop.clock.now().duration(since: startedAt).microseconds),
                    JournalField(.sessionsTotal, committer.store.count),
                ]))
        sleep.configure(endSessions: settings.sleep.endSessions)
        // After READY=1, so boot is not delayed by sessions an earlier stop could not end.
        let leftovers = LeftoverOrder.ordered(committer.store.sessions { $0.lastOutcome != nil })
        if !leftovers.isEmpty {
            loop.schedule(after: .zero) { [weak runs] in runs?.endInBackground(leftovers, kind: .leftover) }
        }
    }

    /// The sleep lock's runs: before sleep every stored session (`sleep`), after the resume what
    /// is left (`leftover`), both as background runs.
    private func makeSleepWatch(committer: StoreCommitter, runs: RunCoordinator) -> SleepWatch {
        let store = committer.store
        let sleep = SleepWatch(loop: loop, journal: journal) {
            (store.count, store.sessions { $0.lastOutcome != nil }.count)
        }
        sleep.beginSleepRun = { [weak runs] budget, finished in
            guard let runs else { return finished() }
            runs.endInBackground(store.sessions { _ in true }, kind: .sleep, budget: budget) { _ in
                // What the run did is made durable before the machine sleeps (a battery may run
                // out while it does): a brief blocking wait, in logind's margin; the store retries
                // a failed write after the resume.
                try? committer.commitNow(timeout: SleepWatch.storeFlushLimit)
                finished()
            }
        }
        sleep.retryLeftovers = { [weak runs] in
            let leftovers = store.sessions { $0.lastOutcome != nil }
            if !leftovers.isEmpty { runs?.endInBackground(leftovers, kind: .leftover) }
        }
        return sleep
    }

    /// Turns the event loop until the stop run (or the hand-over) has finished; returns the exit
    /// status.
    package func run() throws -> ExitStatus {
        while true {
            if case .finished(let status) = phase { return status }
            try loop.runOnce()
        }
    }

    /// Sessions registered now.
    var sessionCount: Int { started?.committer.store.count ?? 0 }

    /// `STATUS=` while running: sessions, endpoints, budget.
    var readyStatus: String {
        let settings = configuration.current
        let degraded =
            started?.committer.store.readOnlyCause == nil
            ? "" : "Degraded (state directory read-only, nothing new accepted): "
        let fallback =
            configuration.fallbackCause.map {
                "Invalid configuration (\(Self.firstLine($0))), running on the last good one: "
            } ?? ""
        return fallback + degraded + "Ready: \(HumanText.count(sessionCount, "session")) registered, "
            + "\(HumanText.count(settings.endpoints.count, "endpoint")), "
            + "stop budget \(HumanText.duration(microseconds: settings.stop.budget.microseconds))"
    }

    /// The first line of `text` (a configuration error names every problem, one per line).
    static func firstLine(_ text: String) -> Substring {
        text.prefix { $0 != "\n" }
    }

    // MARK: Signals

    private func handle(_ signal: DaemonSignal, from sender: Int32) {
        switch (signal, phase) {
        case (.hangUp, .running):
            reload()
        case (.terminate, .running), (.interrupt, .running), (.restart, .running):
            terminate(signal: signal, sender: sender)
        case (.terminate, .handingOver), (.interrupt, .handingOver), (.restart, .handingOver):
            finishHandOver()
        case (.hangUp, .handingOver):
            break
        case (.terminate, .stopping(let stop)), (.interrupt, .stopping(let stop)):
            journal.record(
                JournalEntry(
                    .secondSignal, "\(signal) during the stop run: expiring the budget now",
                    stop.journalFields + [
                        JournalField(.signal, signal.description), JournalField(.senderPID, sender),
                    ]))
            stop.budget.expire(reason: .secondSignal)
        case (.restart, .stopping):
            // A restart asked for while the stop run lasts: systemd starts the next process after
            // this one exits; the run goes on (cutting it short would not keep its sessions).
            break
        case (.hangUp, .stopping):
            journal.record(
                JournalEntry(.reloadIgnored, "SIGHUP ignored: the daemon is stopping"))
        case (_, .finished):
            break
        }
    }

    // MARK: Exit

    /// The last moments of a stop or a hand-over: what systemd and the journal have not taken
    /// yet, within bounds (the journal is given up on sooner when it takes nothing for
    /// ``Journal/flushIdleLimit``).
    func flushBeforeExit(until limit: MonotonicInstant) {
        notifier.flush(until: min(limit, loop.clock.now().advanced(by: Self.notifyFlushLimit)))
        journal.flush(until: limit)
    }

    /// After start: says so when the last stop run's journal was incomplete (its report is whole).
    private func reportIncompleteJournal(of lastStop: JSONValue?) {
        guard case .object(let facts)? = lastStop, case .integer(let dropped)? = facts["journal_dropped"], dropped > 0,
            case .string(let runID)? = facts["run_id"]
        else { return }
        journal.record(
            JournalEntry(
                .journalIncomplete,
                "The last stop run (\(runID)) could not journal \(HumanText.count(Int(dropped), "entry", plural: "entries")); "
                    + "session-cleanup report \(runID) shows every call",
                [JournalField(.runID, runID), JournalField(.journalDropped, dropped)]))
    }
}
