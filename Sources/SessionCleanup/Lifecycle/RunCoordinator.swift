/// Every run of end-session calls the daemon makes, and which sessions they are ending.
///
/// Background runs (what an earlier stop left, after start; `end` requests) run while the
/// daemon serves, with the leftover budget, and skip sessions another run is already ending.
/// The stop run takes over every session: background runs are abandoned and their `end`
/// requests answered. The HTTP engine is created on the first run, so an idle daemon carries
/// no TLS library state. What a run does to each session goes to the ``StoreCommitter``.
final class RunCoordinator {
    /// Called after a background run finished and its results were committed.
    var onBackgroundRunFinished: (() -> Void)?

    /// The last finished run's report, for `status`.
    private(set) var lastReport: RunReport?
    /// The stop run, kept alive here while it runs (its callbacks hold it weakly).
    private(set) var stopRun: CleanupRun?
    /// Runs other than the stop run, by identity.
    private(set) var backgroundRuns: [ObjectIdentifier: CleanupRun] = [:]
    /// Set once the stop run (or a hand-over) has taken over: no background run starts after it.
    private(set) var isStopping = false

    private let loop: EventLoop
    private let journal: any JournalSink
    private let committer: StoreCommitter
    private let configuration: ActiveConfiguration
    private let credentialsDirectory: String?
    private var engine: HTTPEngine?
    /// The limits the engine was made with.
    private var engineLimits: HTTPEngine.Limits?
    /// Engine-internal failures journaled for the current engine (the rest are counted).
    private var engineErrors = 0
    private var sessionsBeingEnded: Set<SessionID> = []
    /// Replies to `end` requests, by run, answered when the run finishes (or the stop run takes over).
    private var endReplies: [ObjectIdentifier: (ControlResponse) -> Void] = [:]

    init(
        loop: EventLoop, journal: any JournalSink, committer: StoreCommitter, configuration: ActiveConfiguration,
        credentialsDirectory: String?
    ) {
        self.loop = loop
        self.journal = journal
        self.committer = committer
        self.configuration = configuration
        self.credentialsDirectory = credentialsDirectory
    }

    /// Whether any run is ending sessions now.
    var isEndingSessions: Bool { stopRun != nil || !backgroundRuns.isEmpty }

    /// Ends `sessions` while running (leftovers after start, or `end` asked for), with the
    /// leftover budget; sessions already being ended are skipped. `reply` gets the run's report.
    func endInBackground(
        _ sessions: [Session], kind: CleanupRun.Kind, reply: ((ControlResponse) -> Void)? = nil
    ) {
        guard !isStopping else {
            reply?(.failure(.stopping, "the daemon is stopping: its stop run ends every session"))
            return
        }
        let settings = configuration.current
        let fresh = sessions.filter { !sessionsBeingEnded.contains($0.id) }
        let budget = StopBudget(
            total: settings.start.leftoverBudget, minimumRequest: settings.stop.minimumRequest, clock: loop.clock)
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
            self.finished(report)
            self.committer.commit()
            self.onBackgroundRunFinished?()
            self.endReplies.removeValue(forKey: key)?(.ended(report: report.detailedJSON))
        }
    }

    /// Takes over every session for the stop run: background runs are abandoned (their `end`
    /// requests answered), then every stored session is ended within `budget`. `completion`
    /// gets the report, or nil at once when there was nothing to end or no engine to end it with.
    func beginStopRun(
        budget: StopBudget, onProgress: @escaping (String) -> Void, completion: @escaping (RunReport?) -> Void
    ) {
        stopBackgroundRuns(telling: "the daemon began stopping: the stop run ends these sessions")
        let sessions = committer.store.allSessions
        guard !sessions.isEmpty, let run = makeRun(.stop, sessions: sessions, budget: budget) else {
            completion(nil)
            return
        }
        stopRun = run
        run.onProgress = onProgress
        run.begin { [weak self] report in
            self?.finished(report)
            completion(report)
        }
    }

    /// Before a restart hand-over: background runs are abandoned (their sessions stay stored, with
    /// what their finished calls recorded) and no run starts any more.
    func stopForHandOver() {
        stopBackgroundRuns(telling: "the daemon is restarting; ask again once it is back")
    }

    private func stopBackgroundRuns(telling endRequesters: String) {
        isStopping = true
        for run in backgroundRuns.values {
            // What the run did already stays done: endpoints that ended a session are not called again.
            for result in run.abandon() { committer.apply(result) }
        }
        backgroundRuns = [:]
        for reply in endReplies.values { reply(.failure(.stopping, endRequesters)) }
        endReplies = [:]
        sessionsBeingEnded = []
    }

    private func makeRun(_ kind: CleanupRun.Kind, sessions: [Session], budget: StopBudget) -> CleanupRun? {
        let settings = configuration.current
        let limits = HTTPEngine.Limits(settings)
        // The engine's limits follow MaxConcurrentRequests= and the endpoints' hosts: after a
        // reload changed them, a new engine serves the next run that starts while no other run
        // uses the old one (the stop run abandons the background runs first).
        if engineLimits != limits, backgroundRuns.isEmpty, stopRun == nil { engine = nil }
        do {
            if engine == nil {
                let created = try HTTPEngine(loop: loop, limits: limits)
                engineErrors = 0
                created.onInternalError = { [weak self] error in self?.engineFailedInternally(error) }
                engine = created
                engineLimits = limits
            }
        } catch {
            journal.record(
                JournalEntry(
                    .error, "Cannot start the HTTP engine: \(error)",
                    [JournalField(.event, "engine-failed"), JournalField(.error, "\(error)")]))
        }
        guard let engine else { return nil }
        let run = CleanupRun(
            kind: kind, sessions: sessions, endpoints: settings.endpoints, tokens: readTokens(),
            budget: budget, settings: CleanupRun.Settings(settings.stop), transport: engine, loop: loop,
            journal: journal)
        // A stop run drops endpoints that are no longer configured (UnconfiguredEndpoints).
        let configured = kind == .stop ? Set(settings.endpoints.map(\.name)) : nil
        run.onSessionFinished = { [weak self] result in
            self?.sessionsBeingEnded.remove(result.id)
            self?.committer.apply(result, droppingAllBut: configured)
        }
        return run
    }

    /// The credentials the endpoints name (bearer tokens, proxy user:password), by name; a missing
    /// one is reported once per run.
    private func readTokens() -> [String: String] {
        var tokens: [String: String] = [:]
        let endpoints = configuration.current.endpoints
        for credential in Set(endpoints.compactMap(\.tokenCredential) + endpoints.compactMap(\.proxyCredential)) {
            do {
                tokens[credential] = try CredentialReader.token(named: credential, in: credentialsDirectory)
            } catch {
                journal.record(
                    JournalEntry(
                        .error, "Credential unavailable: \(error)",
                        [JournalField(.event, "credential-missing"), JournalField(.error, error.description)]))
            }
        }
        return tokens
    }

    /// Journals an engine-internal failure (a libcurl callback or `curl_multi_socket_action`
    /// that failed; its transfers still end, by their timeout at the latest): the first ten of
    /// an engine, then one note that further ones are not journaled.
    private func engineFailedInternally(_ error: HTTPEngineError) {
        engineErrors += 1
        guard engineErrors <= 11 else { return }
        let text =
            engineErrors <= 10
            ? "HTTP engine failure: \(error); the calls it affected end by their timeout at the latest"
            : "HTTP engine failures continue; no more are journaled until the engine is rebuilt"
        journal.record(
            JournalEntry(.warning, text, [JournalField(.event, "engine-error"), JournalField(.error, "\(error)")]))
    }

    /// Keeps the report for `status` and journals its summary.
    private func finished(_ report: RunReport) {
        lastReport = report
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
}
