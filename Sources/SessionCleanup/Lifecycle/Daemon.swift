import FoundationEssentials
import Glibc

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

    enum Phase {
        case running
        case stopping(StopBudget)
        case finished(ExitStatus)
    }

    /// Commits of store changes made by runs are coalesced to at most one per this interval.
    static let runCommitInterval: Duration = .milliseconds(100)

    private let paths: DaemonPaths
    private(set) var configuration: Configuration
    private var configurationFiles: [String]
    let loop: EventLoop
    private let notifier: any Notifier
    let journal: any JournalSink
    private let watchdog: Watchdog
    private(set) var phase = Phase.running
    let startedAt: MonotonicInstant
    private(set) var store: SessionStore?
    private var controlServer: ControlServer?
    /// Sessions per owner uid, for `MaxSessionsPerUser=` and `status` without scanning the store.
    private(set) var ownerCounts: [UInt32: Int] = [:]
    /// Replies waiting for the next group commit: one fdatasync acknowledges them all.
    private var repliesAwaitingCommit: [(reply: (ControlResponse) -> Void, response: ControlResponse)] = []
    private var groupCommitTimer: EventLoop.TimerID?
    /// Replies to `end` requests, by run, answered when the run finishes (or the stop run takes over).
    private var endReplies: [ObjectIdentifier: (ControlResponse) -> Void] = [:]
    /// Created on the first run, so an idle daemon carries no TLS library state.
    private var engine: HTTPEngine?
    /// Runs other than the stop run (leftover, on-demand), and the sessions they are ending.
    private(set) var backgroundRuns: [ObjectIdentifier: CleanupRun] = [:]
    /// The stop run, kept alive here while it runs (its callbacks hold it weakly).
    private(set) var stopRun: CleanupRun?
    private var sessionsBeingEnded: Set<SessionID> = []
    private var commitTimer: EventLoop.TimerID?
    /// The last finished run's report, for `status`.
    public private(set) var lastReport: RunReport?
    /// The summary of the last stop run, kept in the state directory across restarts.
    private(set) var lastStopSummary: JSONValue?
    static let lastStopDocument = "last-stop-run.json"

    /// Creates the daemon with a configuration already loaded (and validated) from `files`.
    public init(
        paths: DaemonPaths, configuration: Configuration, configurationFiles: [String], dependencies: Dependencies
    ) {
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
        let (store, loadReport) = try SessionStore.open(directory: paths.stateDirectory)
        self.store = store
        recordLoad(loadReport)
        for session in store.allSessions { countOwner(session.ownerUID, by: 1) }
        lastStopSummary = store.readDocument(Self.lastStopDocument).flatMap {
            try? JSONDecoder().decode(JSONValue.self, from: Data($0))
        }
        checkDescriptorLimit()
        let control = configuration.control
        controlServer = try ControlServer(
            socketPath: paths.controlSocket, socketMode: control.socketMode, socketGroup: control.socketGroup,
            loop: loop, handler: self, journal: journal)
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
                    JournalField(.sessionsTotal, store.count),
                ]))
        // After READY=1, so boot is not delayed by sessions an earlier stop could not end.
        let leftovers = store.allSessions.filter { $0.lastOutcome != nil }
        if !leftovers.isEmpty {
            loop.schedule(after: .zero) { [weak self] in self?.endInBackground(leftovers, kind: .leftover) }
        }
    }

    private func recordLoad(_ report: LoadReport) {
        for problem in report.problems {
            journal.record(
                JournalEntry(
                    .error, "Session store damaged, recovered what could be: \(problem)",
                    [
                        JournalField(.event, "store-damaged"), JournalField(.storeFile, problem.path),
                        JournalField(.error, problem.description),
                    ]))
        }
        if !report.preservedFiles.isEmpty {
            journal.record(
                JournalEntry(
                    .error, "Damaged store files kept for inspection: \(report.preservedFiles.joined(separator: ", "))",
                    [
                        JournalField(.event, "store-damaged"),
                        JournalField(.storeFile, report.preservedFiles.joined(separator: " ")),
                    ]))
        }
        journal.record(
            JournalEntry(
                .info,
                "Session store loaded: \(report.sessionCount) sessions in \(report.durationMicroseconds / 1000) ms",
                [
                    JournalField(.event, "store-loaded"), JournalField(.sessionsTotal, report.sessionCount),
                    JournalField(.durationUsec, report.durationMicroseconds),
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
        "Ready: \(store?.count ?? 0) sessions registered, \(configuration.endpoints.count) endpoints, "
            + "stop budget \(configuration.stop.budget.humanReadable)"
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
                JournalEntry(
                    .notice, "SIGHUP ignored: the daemon is stopping", [JournalField(.event, "reload-ignored")]))
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
            if loaded.control != configuration.control {
                journal.record(
                    JournalEntry(
                        .notice, "[Control] changes take effect at the next start (the socket stays as it is)",
                        [JournalField(.event, "reload-partial")]))
            }
            // The engine's connection limits follow MaxConcurrentRequests=: rebuild it when idle.
            if loaded.stop.maxConcurrentRequests != configuration.stop.maxConcurrentRequests, backgroundRuns.isEmpty {
                engine = nil
            }
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

    // MARK: Runs

    private func makeRun(_ kind: CleanupRun.Kind, sessions: [Session], budget: StopBudget) -> CleanupRun? {
        do {
            if engine == nil {
                let limit = configuration.stop.maxConcurrentRequests
                engine = try HTTPEngine(loop: loop, maxConnectionsPerHost: limit, maxTotalConnections: limit)
            }
        } catch {
            journal.record(
                JournalEntry(
                    .error, "Cannot start the HTTP engine: \(error)",
                    [JournalField(.event, "engine-failed"), JournalField(.error, "\(error)")]))
        }
        guard let engine else { return nil }
        let run = CleanupRun(
            kind: kind, sessions: sessions, endpoints: configuration.endpoints, tokens: readTokens(),
            budget: budget, settings: CleanupRun.Settings(configuration.stop), transport: engine, loop: loop,
            journal: journal)
        run.onSessionFinished = { [weak self] result in self?.sessionFinished(result) }
        return run
    }

    /// Bearer tokens of the endpoints that use one; a missing credential is reported once per run.
    private func readTokens() -> [String: String] {
        var tokens: [String: String] = [:]
        for credential in Set(configuration.endpoints.compactMap(\.tokenCredential)) {
            do {
                tokens[credential] = try CredentialReader.token(named: credential, in: paths.credentialsDirectory)
            } catch {
                journal.record(
                    JournalEntry(
                        .error, "Credential unavailable: \(error)",
                        [JournalField(.event, "credential-missing"), JournalField(.error, error.description)]))
            }
        }
        return tokens
    }

    private func sessionFinished(_ result: CleanupRun.SessionResult) {
        guard let store else { return }
        sessionsBeingEnded.remove(result.id)
        if result.ended {
            if let removed = store.remove(result.id) { countOwner(removed.ownerUID, by: -1) }
        } else {
            // Endpoints that already ended it are not called again: a server asked to end a
            // session twice may well say no.
            if !result.endedEndpoints.isEmpty, var session = store.session(id: result.id) {
                session.endpoints.removeAll { result.endedEndpoints.contains($0) }
                if !session.endpoints.isEmpty { store.replace(session) }
            }
            store.recordOutcome(id: result.id, outcome: result.outcome.word, attemptsDelta: result.attempts)
        }
        scheduleCommit()
    }

    /// Coalesces store commits while runs are finishing sessions.
    private func scheduleCommit() {
        guard commitTimer == nil else { return }
        commitTimer = loop.schedule(after: Self.runCommitInterval) { [weak self] in
            self?.commitTimer = nil
            self?.commitStore()
        }
    }

    /// Commits what is staged; returns the error it reported, if any.
    @discardableResult
    private func commitStore() -> (any Error)? {
        guard let store, store.hasPendingChanges else { return nil }
        do {
            try store.commit()
            // An empty store is compacted at once (cheap): keys of ended sessions must not
            // linger in the log until it grows large enough for the size policy. Otherwise
            // compaction (a full snapshot) waits until no run is ending sessions.
            if store.count == 0 && store.statistics.logBytes > 0 {
                try store.compact()
            } else if stopRun == nil && backgroundRuns.isEmpty {
                _ = try store.compactIfNeeded()
            }
            return nil
        } catch {
            journal.record(
                JournalEntry(
                    .error, "Session store not saved: \(error)",
                    [JournalField(.event, "store-write-failed"), JournalField(.error, "\(error)")]))
            return error
        }
    }

    /// Sends `response` once the store's staged changes are durable: every request handled in
    /// this turn of the loop shares one commit (group commit).
    func commitThenReply(_ reply: @escaping (ControlResponse) -> Void, _ response: ControlResponse) {
        repliesAwaitingCommit.append((reply, response))
        guard groupCommitTimer == nil else { return }
        groupCommitTimer = loop.schedule(after: .zero) { [weak self] in
            guard let self else { return }
            self.groupCommitTimer = nil
            self.flushRepliesAwaitingCommit(error: self.commitStore())
        }
    }

    private func flushRepliesAwaitingCommit(error: (any Error)?) {
        let waiting = repliesAwaitingCommit
        repliesAwaitingCommit = []
        for (reply, response) in waiting {
            reply(error.map { .failure(.internal, "not saved: \($0)") } ?? response)
        }
    }

    /// Raises the soft descriptor limit to the hard one (systemd's default soft limit is 1024)
    /// and says so if `MaxConcurrentRequests=` connections plus control clients still do not fit.
    private func checkDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        let needed = rlim_t(configuration.stop.maxConcurrentRequests + ControlServer.Limits().maxClients + 64)
        if limit.rlim_cur < needed {
            journal.record(
                JournalEntry(
                    .warning,
                    "Only \(limit.rlim_cur) file descriptors allowed; MaxConcurrentRequests="
                        + "\(configuration.stop.maxConcurrentRequests) and the control socket want \(needed): raise LimitNOFILE=",
                    [JournalField(.event, "descriptor-limit")]))
        }
    }

    /// Keeps the stop run's summary (counts and timing, no keys) for `status` after the restart.
    private func saveStopSummary(_ report: RunReport) {
        guard case .object(var summary) = Self.summary(report) else { return }
        summary["finished_at_usec"] = .integer(Int64(clamping: wallClockMicroseconds()))
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            try store?.writeDocument(Self.lastStopDocument, Array(try encoder.encode(JSONValue.object(summary))))
        } catch {
            journal.record(
                JournalEntry(
                    .warning, "The stop run's summary was not saved: \(error)",
                    [JournalField(.event, "store-write-failed"), JournalField(.error, "\(error)")]))
        }
    }

    /// Keeps ``ownerCounts`` in step with the store.
    func countOwner(_ uid: UInt32, by delta: Int) {
        let count = ownerCounts[uid, default: 0] + delta
        ownerCounts[uid] = count > 0 ? count : nil
    }

    /// `running`, `stopping` or `stopped`, for `status`.
    var phaseName: String {
        switch phase {
        case .running: return "running"
        case .stopping: return "stopping"
        case .finished: return "stopped"
        }
    }

    /// Ends `sessions` while running (leftovers after start, or `end` asked for), with the
    /// leftover budget; sessions already being ended are skipped.
    func endInBackground(
        _ sessions: [Session], kind: CleanupRun.Kind, reply: ((ControlResponse) -> Void)? = nil
    ) {
        guard case .running = phase else {
            reply?(.failure(.stopping, "the daemon is stopping: its stop run ends every session"))
            return
        }
        let fresh = sessions.filter { !sessionsBeingEnded.contains($0.id) }
        let budget = StopBudget(
            total: configuration.start.leftoverBudget, minimumRequest: configuration.stop.minimumRequest,
            clock: loop.clock)
        guard let run = makeRun(kind, sessions: fresh, budget: budget) else {
            reply?(.failure(.internal, "the HTTP engine could not start; see the journal"))
            return
        }
        sessionsBeingEnded.formUnion(fresh.map(\.id))
        let key = ObjectIdentifier(run)
        backgroundRuns[key] = run
        if let reply { endReplies[key] = reply }
        journal.record(
            JournalEntry(
                .info, "Ending \(fresh.count) sessions in the background (\(kind.rawValue))",
                [
                    JournalField(.event, "run-begun"), JournalField(.runKind, kind.rawValue),
                    JournalField(.sessionsTotal, fresh.count), JournalField(.budgetUsec, budget.total.microseconds),
                ]))
        run.begin { [weak self] report in
            guard let self else { return }
            self.backgroundRuns[key] = nil
            self.lastReport = report
            self.recordSummary(report)
            self.commitStore()
            self.notifier.send([.status(self.readyStatus)])
            self.endReplies.removeValue(forKey: key)?(.ended(report: Self.json(report)))
        }
    }

    private func recordSummary(_ report: RunReport) {
        let counts = report.callCounts
        let ended = counts["ended"] ?? 0
        var text = "\(report.kind.rawValue) run: \(report.sessionsEnded) of \(report.sessionsTotal) sessions ended"
        text += " in \(report.duration.humanReadable)"
        if report.sessionsLeft > 0 { text += ", \(report.sessionsLeft) kept for a later attempt" }
        journal.record(
            JournalEntry(
                report.sessionsLeft > 0 ? .warning : .info, text,
                [
                    JournalField(.event, "run-finished"), JournalField(.runKind, report.kind.rawValue),
                    JournalField(.sessionsTotal, report.sessionsTotal),
                    JournalField(.sessionsEnded, report.sessionsEnded),
                    JournalField(.sessionsLeft, report.sessionsLeft), JournalField(.callsEnded, ended),
                    JournalField(.callsRejected, counts["rejected"] ?? 0),
                    JournalField(.callsFailed, counts["failed"] ?? 0),
                    JournalField(.callsExpired, counts["expired"] ?? 0),
                    JournalField(.callsNotStarted, counts["not-started"] ?? 0),
                    JournalField(.durationUsec, report.duration.microseconds),
                ]))
    }

    // MARK: Stop run

    private func beginStop(signal: DaemonSignal, sender: Int32) {
        let settings = configuration.stop
        let budget = StopBudget(total: settings.budget, minimumRequest: settings.minimumRequest, clock: loop.clock)
        phase = .stopping(budget)
        // Tell systemd first: from here on its stop timeout must cover the budget plus the grace.
        notifier.send([
            .stopping, .extendTimeout(settings.budget + Self.exitGrace),
            .status("Stopping: ending \(store?.count ?? 0) sessions, \(settings.budget.humanReadable) budget"),
        ])
        journal.record(
            JournalEntry(
                .info, "\(signal) received: stop run begun with a budget of \(settings.budget.humanReadable)",
                [
                    JournalField(.event, "stop-begun"), JournalField(.signal, signal.description),
                    JournalField(.senderPID, sender), JournalField(.budgetUsec, settings.budget.microseconds),
                    JournalField(.sessionsTotal, store?.count ?? 0),
                ]))
        // Registrations already accepted are acknowledged now, not after the stop run.
        if let groupCommitTimer { loop.cancel(groupCommitTimer) }
        groupCommitTimer = nil
        flushRepliesAwaitingCommit(error: commitStore())
        // The stop run takes over every session, including those a background run was ending.
        for run in backgroundRuns.values { run.abandon() }
        backgroundRuns = [:]
        for reply in endReplies.values {
            reply(.failure(.stopping, "the daemon began stopping: the stop run ends these sessions"))
        }
        endReplies = [:]
        sessionsBeingEnded = []
        let sessions = store?.allSessions ?? []
        guard !sessions.isEmpty, let run = makeRun(.stop, sessions: sessions, budget: budget) else {
            finishStop(budget, report: nil)
            return
        }
        stopRun = run
        run.onProgress = { [weak self] text in self?.notifier.send([.status(text)]) }
        run.begin { [weak self] report in self?.finishStop(budget, report: report) }
    }

    private func finishStop(_ budget: StopBudget, report: RunReport?) {
        guard case .stopping = phase else { return }
        if let report {
            lastReport = report
            recordSummary(report)
            saveStopSummary(report)
        }
        if let commitTimer { loop.cancel(commitTimer) }
        commitTimer = nil
        if let groupCommitTimer { loop.cancel(groupCommitTimer) }
        groupCommitTimer = nil
        flushRepliesAwaitingCommit(error: commitStore())
        controlServer?.close()
        controlServer?.disconnectAll()
        let left = store?.count ?? 0
        store?.close()
        watchdog.stop()
        let took = budget.elapsed
        let summary =
            left == 0
            ? "Stopped in \(took.humanReadable)"
            : "Stopped in \(took.humanReadable), \(left) sessions kept for the next start"
        notifier.send([.status(summary)])
        journal.record(
            JournalEntry(
                left == 0 ? .info : .warning, summary,
                [
                    JournalField(.event, "stopped"), JournalField(.durationUsec, took.microseconds),
                    JournalField(.timeRemainingUsec, budget.timeRemaining.microseconds),
                    JournalField(.sessionsLeft, left),
                ]))
        phase = .finished(left == 0 ? .success : .sessionsLeft)
    }
}
