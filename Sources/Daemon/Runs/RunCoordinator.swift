import Basics
import Configuration
import Control
import EventLoop
import HTTPEngine
import Journal
import Runs
import Sessions
import Vocabulary

/// Every run of end-session calls the daemon makes, and which sessions they are ending.
///
/// Background runs (what an earlier stop left, after start; `end` requests) run while the
/// daemon serves, with the leftover budget, and skip sessions another run is already ending:
/// an `end` request for those waits for that run's outcomes and reports them (an ``EndRequest``).
/// The stop run takes over every session: background runs are abandoned and their `end`
/// requests answered. The HTTP engine is created on the first run, so an idle daemon carries
/// no TLS library state. What a run does to each session goes to the ``StoreCommitter``.
final class RunCoordinator {
    /// Called after a background run finished and its results were committed.
    var onBackgroundRunFinished: (() -> Void)?
    /// Called with the report of every finished run but the stop run (the daemon has that one).
    var onRunFinished: ((RunReport) -> Void)?

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
    /// The background run ending each session.
    private var sessionsBeingEnded: [SessionID: ObjectIdentifier] = [:]
    /// `end` requests waiting for runs to finish (or for the stop run to take over).
    private var endRequests: [EndRequest] = []
    /// The HTTPS origins' HTTP versions, remembered across runs and restarts.
    private let httpVersions: HTTPVersionMemory
    /// Access tokens obtained for `TokenURL=` endpoints, shared by every run of this process
    /// (memory only: never written, gone with the process).
    private let tokenCache: TokenCache

    init(
        loop: EventLoop, journal: any JournalSink, committer: StoreCommitter, configuration: ActiveConfiguration,
        credentialsDirectory: String?
    ) {
        self.loop = loop
        self.journal = journal
        self.committer = committer
        self.configuration = configuration
        self.credentialsDirectory = credentialsDirectory
        httpVersions = HTTPVersionMemory(store: committer.store, journal: journal)
        tokenCache = TokenCache(clock: loop.clock)
    }

    /// Ends `sessions` while running (leftovers after start, `end` asked for, or before sleep),
    /// with `budget` (the leftover budget when nil). Sessions another run is ending are not called
    /// again: `reply` gets, once every run involved has finished, the outcomes of all of
    /// `sessions` — this run's and theirs. `onFinished` gets this run's report once it finished,
    /// or nil at once when it did not begin (nothing left to end, no engine, stopping); it is not
    /// called for a run the stop run abandons.
    package func endInBackground(
        _ sessions: [Session], kind: RunKind, budget total: Duration? = nil,
        reply: ((ControlResponse) -> Void)? = nil, onFinished: ((RunReport?) -> Void)? = nil
    ) {
        guard !isStopping else {
            reply?(.failure(.stopping, "the daemon is stopping: its stop run ends every session"))
            onFinished?(nil)
            return
        }
        let settings = configuration.current
        let fresh = sessions.filter { sessionsBeingEnded[$0.id] == nil }
        let others = Set(sessions.compactMap { sessionsBeingEnded[$0.id] })
        let request = reply.map { EndRequest(sessions: Set(sessions.map(\.id)), reply: $0) }
        request?.waitingFor = others
        guard !fresh.isEmpty else {
            if let request { wait(request) }
            onFinished?(nil)
            return
        }
        let budget = StopBudget(
            total: total ?? settings.start.leftoverBudget, minimumRequest: settings.stop.minimumRequest,
            clock: loop.clock)
        guard let run = makeRun(kind, sessions: SessionList(fresh), budget: budget) else {
            reply?(.failure(.internal, "the HTTP engine could not start; see the journal"))
            onFinished?(nil)
            return
        }
        let key = ObjectIdentifier(run)
        for session in fresh { sessionsBeingEnded[session.id] = key }
        backgroundRuns[key] = run
        request?.waitingFor.insert(key)
        if let request { wait(request) }
        journal.record(
            JournalEntry(
                .runBegun, "Ending \(HumanText.count(fresh.count, "session")) in the background (\(kind.rawValue))",
                [
                    JournalField(.runID, run.id.description), JournalField(.runKind, kind.rawValue),
                    JournalField(.sessionsTotal, fresh.count), JournalField(.budgetUsec, budget.total.microseconds),
                ]))
        run.begin { [weak self] report in
            guard let self else { return }
            self.backgroundRuns[key] = nil
            self.finished(report)
            self.onBackgroundRunFinished?()
            self.backgroundRunFinished(key, report)
            onFinished?(report)
        }
    }

    /// Holds `request` until the runs it waits for have finished (answers at once if none).
    private func wait(_ request: EndRequest) {
        if request.waitingFor.isEmpty {
            request.reply(.ended(report: request.report.detailedJSON))
        } else {
            endRequests.append(request)
        }
    }

    /// Gives the `end` requests waiting for run `key` its outcomes; answers those that wait no more.
    private func backgroundRunFinished(_ key: ObjectIdentifier, _ report: RunReport) {
        var waiting: [EndRequest] = []
        for request in endRequests {
            if request.waitingFor.remove(key) != nil { request.add(report) }
            if request.waitingFor.isEmpty {
                request.reply(.ended(report: request.report.detailedJSON))
            } else {
                waiting.append(request)
            }
        }
        endRequests = waiting
    }

    /// Takes over every session for the stop run `id`: background runs are abandoned (their
    /// `end` requests answered), then every stored session is ended within `budget`. `completion`
    /// gets the report, or nil at once when there was nothing to end or no engine to end it with.
    func beginStopRun(
        id: RunID, budget: StopBudget, onProgress: @escaping (String) -> Void,
        completion: @escaping (RunReport?) -> Void
    ) {
        stopBackgroundRuns(telling: "the daemon began stopping: the stop run ends these sessions")
        // A list sharing the store's memory, not a copy of every session (issue 10: the stop run's peak).
        let sessions = committer.store.sessionList
        guard !sessions.isEmpty, let run = makeRun(.stop, id: id, sessions: sessions, budget: budget) else {
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

    /// The first step of a restart hand-over: no run starts any more, and the background runs
    /// start no call; `then` runs once their requests under way have finished — recorded as
    /// usual, so the restarted daemon does not call those sessions again (an `end --all`'s calls
    /// were made twice before) — or once `limit` has passed, whichever is first. A request still
    /// under way then is cancelled by ``stopForHandOver()`` and made again by the next process.
    func windDownForHandOver(within limit: Duration, then done: @escaping () -> Void) {
        isStopping = true
        let runs = Array(backgroundRuns.values)
        guard !runs.isEmpty else { return done() }
        let wait = HandOverWait(runs: runs.count, done: done)
        wait.timer = loop.schedule(after: limit) { wait.finish() }
        for run in runs {
            run.windDown { [weak self] in
                wait.runs -= 1
                guard wait.runs == 0, let self else { return }
                if let timer = wait.timer { self.loop.cancel(timer) }
                wait.finish()
            }
        }
    }

    /// Before a restart hand-over: background runs are abandoned (their sessions stay stored, with
    /// what their finished calls recorded) and no run starts any more.
    func stopForHandOver() {
        stopBackgroundRuns(telling: "the daemon is restarting; ask again once it is back")
        // What the abandoned runs learned, for the daemon taking over.
        if let engine { httpVersions.remember(engine.versionsSeen) }
    }

    private func stopBackgroundRuns(telling endRequesters: String) {
        isStopping = true
        for run in backgroundRuns.values {
            // What the run did already stays done: endpoints that ended a session are not called again.
            for result in run.abandon() { committer.apply(result) }
        }
        backgroundRuns = [:]
        for request in endRequests { request.reply(.failure(.stopping, endRequesters)) }
        endRequests = []
        sessionsBeingEnded = [:]
    }

    private func makeRun(
        _ kind: RunKind, id: RunID = .random(), sessions: SessionList, budget: StopBudget
    ) -> CleanupRun? {
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
                created.knownHTTP1Origins = httpVersions.http1Origins
                engine = created
                engineLimits = limits
            }
        } catch {
            journal.record(
                JournalEntry(
                    .engineFailed, "Cannot start the HTTP engine: \(error)", [JournalField(.error, "\(error)")]))
        }
        guard let engine else { return nil }
        let run = CleanupRun(
            id: id, kind: kind, sessions: sessions, endpoints: settings.endpoints, tokens: readTokens(),
            tokenCache: tokenCache, budget: budget, settings: CleanupRun.Settings(settings.stop), transport: engine,
            loop: loop,
            journal: journal)
        // A stop run drops endpoints that are no longer configured (UnconfiguredEndpoints).
        let configured = kind == .stop ? Set(settings.endpoints.map(\.name)) : nil
        run.onSessionFinished = { [weak self] result in
            guard let self else { return }
            // Empty in a stop run: then no hashing per session.
            if !sessionsBeingEnded.isEmpty { sessionsBeingEnded[result.id] = nil }
            committer.apply(result, droppingAllBut: configured)
        }
        return run
    }

    /// The credentials the endpoints name (bearer tokens, client id:secret, proxy user:password,
    /// client certificates and keys), by name; a missing one is reported once per run.
    private func readTokens() -> [String: String] {
        var tokens: [String: String] = [:]
        let endpoints = configuration.current.endpoints
        let names =
            endpoints.compactMap(\.tokenCredential) + endpoints.compactMap(\.proxyCredential)
            + endpoints.compactMap(\.clientCredential)
        // Mutual TLS: PEM, several lines (read as it is, not as a one-line token).
        let pem: [(String, CredentialReader.PEMKind)] =
            endpoints.compactMap(\.clientCertificateCredential).map { ($0, .certificate) }
            + endpoints.compactMap(\.clientKeyCredential).map { ($0, .privateKey) }
        for (credential, kind) in pem where tokens[credential] == nil {
            do {
                tokens[credential] = try CredentialReader.pem(
                    named: credential, in: credentialsDirectory, holding: kind)
            } catch {
                journal.record(
                    JournalEntry(
                        .credentialMissing, "Credential unavailable: \(error)",
                        [JournalField(.error, error.description)]))
            }
        }
        for credential in Set(names) {
            do {
                tokens[credential] = try CredentialReader.token(named: credential, in: credentialsDirectory)
            } catch {
                journal.record(
                    JournalEntry(
                        .credentialMissing, "Credential unavailable: \(error)",
                        [JournalField(.error, error.description)]))
            }
        }
        return tokens
    }

    /// Journals an engine-internal failure (a libcurl callback or `curl_multi_socket_action`
    /// that failed; libcurl's transfers then end at once, failed): the first ten of an engine,
    /// then one note that further ones are not journaled.
    private func engineFailedInternally(_ error: HTTPEngineError) {
        engineErrors += 1
        guard engineErrors <= 11 else { return }
        let text =
            engineErrors <= 10
            ? "HTTP engine failure: \(error); the calls under way failed with it"
            : "HTTP engine failures continue; no more are journaled until the engine is rebuilt"
        journal.record(
            JournalEntry(.engineError, text, [JournalField(.error, "\(error)")]))
    }

    /// Keeps the report for `status` and `report` (the run journaled its own summary), and what
    /// the run's replies told of HTTP versions.
    private func finished(_ report: RunReport) {
        lastReport = report
        onRunFinished?(report)
        if let engine { httpVersions.remember(engine.versionsSeen) }
    }
}

/// An `end` request: the sessions it names, the runs whose outcomes it still waits for, and
/// what those runs did to its sessions so far.
private final class EndRequest {
    let sessions: Set<SessionID>
    let reply: (ControlResponse) -> Void
    var waitingFor: Set<ObjectIdentifier> = []
    /// The calls of several runs, merged: its own id and budget mean nothing (the reply shows neither).
    private(set) var report = RunReport(id: .random(), kind: .onDemand, budget: .zero)

    init(sessions: Set<SessionID>, reply: @escaping (ControlResponse) -> Void) {
        self.sessions = sessions
        self.reply = reply
    }

    /// Takes the calls of `run` that were for this request's sessions.
    func add(_ run: RunReport) {
        report.merge(run, sessions: sessions)
    }
}

/// The background runs a hand-over waits for (``RunCoordinator/windDownForHandOver(within:then:)``):
/// its `done` runs once, when the last is quiet or the limit passed. Confined to the loop.
private final class HandOverWait {
    /// Runs not quiet yet.
    var runs: Int
    /// The limit's timer.
    var timer: EventLoop.TimerID?
    private var done: (() -> Void)?

    init(runs: Int, done: @escaping () -> Void) {
        self.runs = runs
        self.done = done
    }

    /// Runs `done` the first time only.
    func finish() {
        let done = self.done
        self.done = nil
        done?()
    }
}
