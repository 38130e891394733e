import Basics
import Configuration
import Control
import EventLoop
import HTTPEngine
import JSON
import Journal
import Runs
import Systemd
import Vocabulary

/// The long-running daemon's life: starts, reports ready, feeds the watchdog, reloads on
/// SIGHUP, and on SIGTERM runs the stop run inside its budget, then returns the exit status.
///
/// This type is the phase machine (running → stopping → finished) and the order of each step;
/// the work lives with the parts it wires together: ``StoreCommitter`` (the store and when it
/// is made durable), ``RunCoordinator`` (background runs and the stop run),
/// ``ActiveConfiguration`` (the configuration in force and reload), ``SessionRequestHandler``
/// (control requests). Data flows one way: signal → budget → calls → outcomes → store and
/// journal → exit. Everything runs on the event loop's thread.
package final class Daemon {
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

        /// Bundles the dependencies.
        package init(
            loop: EventLoop, notifier: any Notifier, journal: any JournalSink, watchdogInterval: Duration?,
            serviceManager: any ServiceManagerAsking = SystemdServiceManager()
        ) {
            self.loop = loop
            self.notifier = notifier
            self.journal = journal
            self.watchdogInterval = watchdogInterval
            self.serviceManager = serviceManager
        }
    }

    /// Time kept between the budget's end and systemd's kill, for recording results and exiting.
    package static let exitGrace: Duration = .seconds(5)
    /// How long a restart hand-over waits for connected clients to finish their requests.
    static let handOverDrainLimit: Duration = .milliseconds(250)
    /// How long the end of a stop waits for the store to write what the run recorded (within
    /// ``exitGrace``).
    static let storeFlushTimeout: Duration = .seconds(3)
    /// How long after the budget's end (or the run's, if later) the last journal entries may
    /// still be waited for; well inside ``exitGrace``. A journal that takes nothing for half a
    /// second is given up on sooner.
    static let journalFlushLimit: Duration = .seconds(2)
    /// How long the last state changes may wait for room in PID 1's notify queue at exit.
    static let notifyFlushLimit: Duration = .milliseconds(250)
    /// How long a hand-over's last journal entries may be waited for: a restart should be quick.
    static let handOverFlushLimit: Duration = .seconds(1)
    /// The end of ``exitGrace`` kept for writing the run record and exiting, whatever the store's
    /// settle and the journal's flush took before it.
    static let recordReserve: Duration = .seconds(1)

    enum Phase {
        case running
        /// A restart (since the SIGTERM was handled): finishing the requests of connected clients,
        /// then exiting with every session kept.
        case handingOver(since: MonotonicInstant)
        case stopping(StopBudget)
        case finished(ExitStatus)

        /// `running`, `restarting`, `stopping` or `stopped`, for `status`.
        var name: String {
            switch self {
            case .running: return "running"
            case .handingOver: return "restarting"
            case .stopping: return "stopping"
            case .finished: return "stopped"
            }
        }

        /// Registrations are taken until the daemon exits, except while a stop run ends everything.
        var acceptsRegistrations: Bool {
            switch self {
            case .running, .handingOver: return true
            case .stopping, .finished: return false
            }
        }
    }

    /// What exists only once ``start(signals:)`` has opened the store and the socket.
    private struct Started {
        let committer: StoreCommitter
        let runs: RunCoordinator
        let requests: SessionRequestHandler
        let controlServer: ControlServer
        let statusLine: StatusLine
    }

    private let paths: DaemonPaths
    private let configuration: ActiveConfiguration
    private let loop: EventLoop
    private let notifier: any Notifier
    private let journal: any JournalSink
    private let watchdog: Watchdog
    private let serviceManager: any ServiceManagerAsking
    private let startedAt: MonotonicInstant
    private var phase = Phase.running
    private var started: Started?
    /// The socket systemd passed, if the daemon was socket-activated.
    private var activatedSocket: ActivatedSocket?
    /// The stop run's id, from SIGTERM on (on every entry of the stop).
    private var stopRunID: RunID?
    /// The journal's drop count when the stop began, to count what the stop lost.
    private var droppedBeforeStop = 0

    /// Creates the daemon with a configuration already loaded (and validated) from `files`.
    package init(
        paths: DaemonPaths, configuration: Configuration, configurationFiles: [String], dependencies: Dependencies
    ) {
        self.paths = paths
        self.configuration = ActiveConfiguration(configuration, files: configurationFiles)
        loop = dependencies.loop
        notifier = dependencies.notifier
        journal = dependencies.journal
        watchdog = Watchdog(interval: dependencies.watchdogInterval, loop: loop, notifier: notifier)
        serviceManager = dependencies.serviceManager
        startedAt = loop.clock.now()
    }

    /// Starts (signals are handled once ``run()`` turns the loop), reports ready.
    package func start(signals: SignalSource) throws {
        MallocArenas.limitToOne()  // before the store starts its writer threads
        journal.record(
            JournalEntry(
                .started, "session-cleanup \(SessionCleanupVersion.string) starting",
                [JournalField(.configFile, configuration.files.joined(separator: " "))]))
        try DaemonPaths.makeDirectory(paths.stateDirectory)
        let committer = try StoreCommitter(directory: paths.stateDirectory, loop: loop, journal: journal)
        try InterruptedStopRun.recover(committer, journal: journal)
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
            committer: committer, runs: runs, configuration: configuration,
            daemon: SessionRequestHandler.DaemonContext(
                phase: { [weak self] in self?.phase ?? .finished(.success) },
                reload: { [weak self] in self?.reload() ?? .refused(ConfigurationError(file: "", line: 0, "stopped")) },
                startedAt: startedAt, lastStopSummary: lastStop),
            loop: loop)
        let settings = configuration.current
        DescriptorLimit.raise(
            toFit: HTTPEngine.Limits(settings).maxConnections + ControlServer.Limits().maxClients + 64,
            maxConcurrentRequests: settings.stop.maxConcurrentRequests, journal: journal)
        let (controlServer, activated) = try ControlSocketSetup.open(
            paths: paths, control: settings.control, loop: loop, handler: requests, journal: journal)
        activatedSocket = activated
        let statusLine = StatusLine(loop: loop, notifier: notifier) { [weak self] in self?.readyStatus ?? "" }
        committer.onSessionCountChanged = { [weak statusLine] in statusLine?.changed() }
        started = Started(
            committer: committer, runs: runs, requests: requests, controlServer: controlServer, statusLine: statusLine)
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
        // After READY=1, so boot is not delayed by sessions an earlier stop could not end.
        let leftovers = committer.store.sessions { $0.lastOutcome != nil }
        if !leftovers.isEmpty {
            loop.schedule(after: .zero) { [weak runs] in runs?.endInBackground(leftovers, kind: .leftover) }
        }
    }

    /// Turns the event loop until the stop run has finished; returns the exit status.
    package func run() throws -> ExitStatus {
        while true {
            if case .finished(let status) = phase { return status }
            try loop.runOnce()
        }
    }

    private var sessionCount: Int { started?.committer.store.count ?? 0 }

    private var readyStatus: String {
        let settings = configuration.current
        return "Ready: \(HumanText.count(sessionCount, "session")) registered, "
            + "\(HumanText.count(settings.endpoints.count, "endpoint")), "
            + "stop budget \(HumanText.duration(microseconds: settings.stop.budget.microseconds))"
    }

    // MARK: Signals

    private func handle(_ signal: DaemonSignal, from sender: Int32) {
        switch (signal, phase) {
        case (.hangUp, .running):
            reload()
        case (.terminate, .running), (.interrupt, .running):
            terminate(signal: signal, sender: sender)
        case (.terminate, .handingOver), (.interrupt, .handingOver):
            finishHandOver()
        case (.hangUp, .handingOver):
            break
        case (.terminate, .stopping(let budget)), (.interrupt, .stopping(let budget)):
            journal.record(
                JournalEntry(
                    .secondSignal, "\(signal) during the stop run: expiring the budget now",
                    stopFields + [JournalField(.signal, signal.description), JournalField(.senderPID, sender)]))
            budget.expire(reason: .secondSignal)
        case (.hangUp, .stopping):
            journal.record(
                JournalEntry(.reloadIgnored, "SIGHUP ignored: the daemon is stopping"))
        case (_, .finished):
            break
        }
    }

    // MARK: Reload

    /// What a reload did.
    enum ReloadOutcome {
        /// The configuration from `files` is in force; `notes` say what did not take effect.
        case applied(files: [String], notes: [String])
        /// The files (or a credential) are invalid: the previous configuration is kept.
        case refused(ConfigurationError)
    }

    /// Reads the configuration again (SIGHUP, or the `reload` request `systemctl reload` sends).
    @discardableResult
    func reload() -> ReloadOutcome {
        notifier.send([.reloading(loop.clock.now()), .status("Reloading configuration")])
        journal.record(JournalEntry(.reloading, "Reloading configuration"))
        let change: ActiveConfiguration.Change
        do {
            change = try configuration.reload(paths)
        } catch {
            journal.record(
                JournalEntry(
                    .reloadFailed, "Configuration not reloaded, keeping the previous one: \(error)",
                    [JournalField(.error, error.description), JournalField(.configFile, error.file)]))
            notifier.send([.ready, .status(readyStatus + " (reload failed: \(error))")])
            return .refused(error)
        }
        var notes: [String] = []
        if let activatedSocket {
            notes += activatedSocket.reportSettingsNotApplied(configuration.current.control, to: journal)
        } else if change.controlSocketChanged {
            let note =
                "[Control] SocketMode=/SocketGroup= changes take effect at the next start (the socket stays as it is)"
            journal.record(JournalEntry(.reloadPartial, note))
            notes.append(note)
        }
        if let unconfigured = reportUnconfiguredEndpoints() { notes.append(unconfigured.note) }
        journal.record(
            JournalEntry(
                .reloaded, "Configuration reloaded from \(configuration.files.count) file(s)",
                [JournalField(.configFile, configuration.files.joined(separator: " "))]))
        notifier.send([.ready, .status(readyStatus)])
        return .applied(files: configuration.files, notes: notes)
    }

    /// Journals the stored sessions that name endpoints no longer configured; returns them, if any.
    @discardableResult
    private func reportUnconfiguredEndpoints() -> UnconfiguredEndpoints? {
        guard let store = started?.committer.store else { return nil }
        let unconfigured = UnconfiguredEndpoints(
            usage: store.endpointUsage.lazy.map { ($0.key, $0.value) }, configuration: configuration.current)
        unconfigured.record(in: journal)
        return unconfigured.isEmpty ? nil : unconfigured
    }

    // MARK: Restart hand-over or stop run

    /// A restart of the unit hands every session over to the next process; anything else is a
    /// stop run. The budget starts at the signal, so asking systemd counts against it.
    private func terminate(signal: DaemonSignal, sender: Int32) {
        let settings = configuration.current.stop
        let budget = StopBudget(total: settings.budget, minimumRequest: settings.minimumRequest, clock: loop.clock)
        let received = loop.clock.now()
        let decision = TerminationDecision.decide(
            signal: signal, onRestart: settings.onRestart, ask: serviceManager.askAboutOwnUnit)
        let answered = loop.clock.now()
        let checked = nextStartAccepts(decision)
        let timing = [
            JournalField(.queryUsec, answered.duration(since: received).microseconds),
            JournalField(.checkUsec, loop.clock.now().duration(since: answered).microseconds),
        ]
        switch checked {
        case .handOver(let unit, let jobType):
            beginHandOver(signal: signal, sender: sender, unit: unit, jobType: jobType, since: received, timing: timing)
        case .stop(let reason):
            beginStop(signal: signal, sender: sender, budget: budget, reason: reason, timing: timing)
        }
    }

    /// A hand-over only to a process that will start: with a configuration the binary on disk
    /// refuses (or a credential the unit no longer loads), the restarted daemon would exit 78 and
    /// leave the sessions with no daemon to end them, so the restart becomes a stop run.
    private func nextStartAccepts(_ decision: TerminationDecision) -> TerminationDecision {
        guard case .handOver = decision else { return decision }
        let problem: String
        do {
            try DaemonConfigurationLoader.checkCredentials(of: configuration.current, in: paths.credentialsDirectory)
            switch NextStartCheck.run(
                configFile: paths.configFile, required: paths.configRequired, instance: paths.instance)
            {
            case .valid: return decision
            case .unknown(let why):
                journal.record(
                    JournalEntry(
                        .nextStartUnchecked,
                        "Could not check the configuration for the restarted daemon (\(why)); handing over",
                        [JournalField(.error, why)]))
                return decision
            case .invalid(let why): problem = why
            }
        } catch {
            problem = error.description
        }
        return .stop(
            reason: "a restart, but the restarted daemon would refuse its configuration (\(problem)), "
                + "so the sessions are ended now")
    }

    /// Stops taking connections (a socket unit keeps new ones queued for the next process),
    /// finishes the requests of connected clients for at most ``handOverDrainLimit``, then exits.
    private func beginHandOver(
        signal: DaemonSignal, sender: Int32, unit: ServiceManagerUnit, jobType: String,
        since received: MonotonicInstant, timing: [JournalField]
    ) {
        phase = .handingOver(since: received)
        notifier.send([.stopping, .status("Restarting: handing \(HumanText.count(sessionCount, "session")) over")])
        journal.record(
            JournalEntry(
                .handOverBegun, "\(signal) received: \(unit.name) is being restarted; its sessions are kept",
                [
                    JournalField(.signal, signal.description), JournalField(.senderPID, sender),
                    JournalField(.unit, unit.name), JournalField(.jobType, jobType),
                    JournalField(.sessionsTotal, sessionCount),
                ] + timing))
        guard let started else {
            finishHandOver()
            return
        }
        started.statusLine.stop()
        started.runs.stopForHandOver()
        started.controlServer.close()
        let deadline = loop.clock.now().advanced(by: Self.handOverDrainLimit)
        func waitForClients() {
            guard case .handingOver = phase else { return }
            if started.controlServer.clientCount == 0 || loop.clock.now() >= deadline {
                finishHandOver()
            } else {
                loop.schedule(after: .milliseconds(2)) { waitForClients() }
            }
        }
        waitForClients()
    }

    private func finishHandOver() {
        guard case .handingOver(let received) = phase else { return }
        var kept = 0
        if let started {
            kept = started.committer.settle(timeout: Self.storeFlushTimeout).kept
            started.committer.close()
            started.controlServer.disconnectAll()
        }
        watchdog.stop()
        let took = loop.clock.now().duration(since: received)
        let summary = "Handed \(HumanText.count(kept, "session")) over to the restarted daemon"
        notifier.send([.status(summary)])
        journal.record(
            JournalEntry(
                .handedOver, summary,
                [JournalField(.sessionsTotal, kept), JournalField(.durationUsec, took.microseconds)]))
        flushBeforeExit(until: loop.clock.now().advanced(by: Self.handOverFlushLimit))
        phase = .finished(.success)
    }

    private func beginStop(
        signal: DaemonSignal, sender: Int32, budget: StopBudget, reason: String, timing: [JournalField]
    ) {
        let settings = configuration.current.stop
        phase = .stopping(budget)
        let runID = RunID.random()
        stopRunID = runID
        droppedBeforeStop = journal.droppedEntries
        // Tell systemd first: from here on its stop timeout must cover the budget plus the grace.
        notifier.send([
            .stopping, .extendTimeout(settings.budget + Self.exitGrace),
            .status(
                "Stopping: ending \(HumanText.count(sessionCount, "session")), "
                    + "\(HumanText.duration(microseconds: settings.budget.microseconds)) budget"),
        ])
        // Registrations already being written are acknowledged now (and ended by the stop run);
        // then the stop run's start is made durable, so a crash before its end does not forget it.
        let syncBegan = loop.clock.now()
        if let started {
            started.committer.beginStop()
            if started.committer.store.count > 0 {
                InterruptedStopRun.recordBegun(
                    sessions: started.committer.store.count, in: started.committer.store, journal: journal)
            }
        }
        journal.record(
            JournalEntry(
                .stopBegun,
                "\(signal) received: stop run begun with a budget of \(settings.budget.humanReadable) (\(reason))",
                stopFields + [
                    JournalField(.signal, signal.description), JournalField(.senderPID, sender),
                    JournalField(.budgetUsec, settings.budget.microseconds), JournalField(.sessionsTotal, sessionCount),
                    JournalField(.stopReason, reason),
                    JournalField(.syncUsec, loop.clock.now().duration(since: syncBegan).microseconds),
                ] + timing))
        guard let started else {
            finishStop(budget, report: nil)
            return
        }
        started.statusLine.stop()  // the stop run's progress owns STATUS= now
        started.committer.registrations.summarise()
        started.runs.beginStopRun(
            id: runID, budget: budget, onProgress: { [weak self] text in self?.notifier.send([.status(text)]) },
            completion: { [weak self] report in self?.finishStop(budget, report: report) })
    }

    private func finishStop(_ budget: StopBudget, report: RunReport?) {
        guard case .stopping = phase else { return }
        var left = 0
        if let started {
            started.controlServer.close()
            started.controlServer.disconnectAll()
            let settled = started.committer.settle(timeout: Self.storeFlushTimeout)
            if settled.saved { InterruptedStopRun.recordFinished(in: started.committer.store, journal: journal) }
            left = settled.kept
        }
        watchdog.stop()
        let took = budget.elapsed
        let summary =
            left == 0
            ? "Stopped in \(took.humanReadable)"
            : "Stopped in \(took.humanReadable), \(HumanText.count(left, "session")) kept for the next start"
        notifier.send([.status(summary)])
        journal.record(
            JournalEntry(
                .stopped, summary,
                stopFields + [
                    JournalField(.durationUsec, took.microseconds),
                    JournalField(.timeRemainingUsec, budget.timeRemaining.microseconds),
                    JournalField(.sessionsLeft, left),
                ],
                // Notice, not warning: warnings are the per-call entries' pool, which may be full.
                priority: left == 0 ? .info : .notice))
        // The store's settle may have used part of the grace already: keep a moment for the record.
        let lastFlush = budget.deadline.advanced(by: Self.exitGrace - Self.recordReserve)
        flushBeforeExit(
            until: min(max(loop.clock.now(), budget.deadline).advanced(by: Self.journalFlushLimit), lastFlush))
        if let started, let report {
            // After the flush, so the record counts every entry the journal could not take.
            let dropped = journal.droppedEntries - droppedBeforeStop
            LastStopRunDocument.write(
                RunRecord(report, journalDropped: dropped), to: started.committer.store, journal: journal)
        }
        started?.committer.close()
        phase = .finished(left == 0 ? .success : .sessionsLeft)
    }

    /// The last moments: what systemd and the journal have not taken yet, within bounds (the
    /// journal is given up on sooner when it takes nothing for ``Journal/flushIdleLimit``).
    private func flushBeforeExit(until limit: MonotonicInstant) {
        notifier.flush(until: min(limit, loop.clock.now().advanced(by: Self.notifyFlushLimit)))
        journal.flush(until: limit)
    }

    private var stopFields: [JournalField] {
        guard let stopRunID else { return [] }
        return [JournalField(.runID, stopRunID.description), JournalField(.runKind, RunKind.stop.rawValue)]
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
