import Sessions

/// Ends a set of sessions at their endpoints, concurrently, inside a ``StopBudget`` — the
/// Linux counterpart of a dispatch group: every call is entered once and leaves once, with its
/// own outcome, and one completion runs when all have left.
///
/// - At most `maxConcurrent` calls are in flight; retries go before calls not yet started.
/// - Each request's timeout is the endpoint's, capped by the time remaining less a margin; no
///   request starts when less than the budget's minimum remains (those calls are `not-started`).
/// - Retryable failures (connect, DNS, timeout, 5xx, 429 with `Retry-After`) are retried with
///   exponential backoff and jitter while attempts and the budget allow.
/// - When an origin cannot be reached (DNS, connection refused or unreachable), its other calls
///   wait while the failed call probes it with backoff (``OriginGate``); if the probe gives up,
///   they all fail at once instead of each waiting out a timeout; if it ends any other way, they
///   are released to try for themselves.
/// - When the budget expires, in-flight transfers are cancelled and their calls recorded as
///   `expired` at once; calls never started become `not-started`.
public final class CleanupRun {
    /// Why a run happens.
    public enum Kind: String, Sendable {
        /// The stop run: SIGTERM to exit.
        case stop
        /// After start-up: sessions an earlier stop run could not end.
        case leftover
        /// `session-cleanup end`: asked for while running.
        case onDemand = "on-demand"
    }

    /// Tuning, from `[Stop]`.
    public struct Settings: Sendable {
        /// Calls in flight at most.
        public var maxConcurrent: Int
        /// Requests per call at most.
        public var maxAttempts: Int
        /// The first retry's backoff; doubled per retry, with jitter.
        public var retryDelay: Duration
        /// Kept between a request's timeout and the deadline, to record its outcome in time.
        public var margin: Duration = .milliseconds(50)

        /// Settings from the configuration's `[Stop]`.
        public init(_ stop: StopSettings) {
            maxConcurrent = stop.maxConcurrentRequests
            maxAttempts = stop.maxAttempts
            retryDelay = stop.retryDelay
        }
    }

    /// What became of one session once all its calls are done: the daemon updates the store from it.
    public struct SessionResult: Sendable {
        /// The session.
        public let id: SessionID
        /// Ended at every endpoint.
        public let ended: Bool
        /// The endpoints it was ended at (all of them when `ended`).
        public let endedEndpoints: [String]
        /// The worst outcome among its calls (the last one when all ended).
        public let outcome: CallOutcome
        /// Requests made for it in this run.
        public let attempts: Int
    }

    /// Reported as each session's last call finishes.
    public typealias SessionFinished = (SessionResult) -> Void

    private enum State {
        case queued
        case inFlight(TransferID)
        case waitingToRetry(EventLoop.TimerID)
        /// Waiting for the ``OriginGate`` to release it.
        case parked
        case done

        var isParked: Bool {
            if case .parked = self { return true }
            return false
        }
    }

    /// A call taken from the line (``nextCall()``) and not yet finished: in flight, waiting to
    /// retry, parked, or queued again. Calls still in line and calls finished hold no state, so
    /// a run's memory follows the calls under way, not the calls it has.
    private struct Call {
        /// Its place in the run's order of calls: tells a reused slot's calls apart.
        let number: Int
        let session: Int
        let endSession: EndSessionCall
        let endpointName: String
        var state = State.queued
        var attempts = 0
        var firstStart: MonotonicInstant?
        var lastCause = ""
        var lastStatus: Int?
        /// The last attempt could not connect (DNS, refused, unreachable).
        var lastAttemptUnreachable = false
        /// The running request's timeout was the budget's remainder, not the endpoint's own.
        var timeoutIsBudget = false
    }

    /// A session with several endpoints, some of whose calls have finished.
    private struct SessionProgress {
        var callsLeft: Int
        var allEnded = true
        var worst: CallOutcome?
        var attempts = 0
        var endedEndpoints: [String] = []
    }

    /// The run's id: every journal entry of the run carries it (`SESSION_CLEANUP_RUN_ID=`).
    public let id: RunID
    /// The kind of run.
    public let kind: Kind
    /// The budget it runs in.
    public let budget: StopBudget
    private let settings: Settings
    private let transport: any HTTPTransport
    private let loop: EventLoop
    private let journal: any JournalSink
    private let runJournal: RunJournal
    private let tokens: [String: String]
    private let sessions: [Session]
    private let templates: [String: EndpointTemplate]
    /// The last name looked up in `templates`: sessions mostly name the same endpoints.
    private var lastTemplate: (name: String, template: EndpointTemplate?)?
    /// Slots of the calls under way (by slot index: what the gate and the completions name).
    private var calls: [Call] = []
    private var freeSlots: [Int] = []
    /// The line: the next call not yet taken is `sessions[lineSession].endpoints[lineEndpoint]`.
    private var lineSession = 0
    private var lineEndpoint = 0
    private var callsTaken = 0
    private var retryReady: [Int] = []
    private var retryHead = 0
    /// Sessions with several endpoints and some of their calls finished, by index.
    private var progress: [Int: SessionProgress] = [:]
    private var gate = OriginGate()
    private var inFlight = 0
    private let callsTotal: Int
    private var callsLeft = 0
    private var callsNotEnded = 0
    private var report: RunReport
    private var finished = false
    private var completion: ((RunReport) -> Void)?
    private var expiryTimer: EventLoop.TimerID?
    private var statusTimer: EventLoop.TimerID?
    private var random = SystemRandomNumberGenerator()

    /// Called with progress text for `STATUS=` at most every 250 ms.
    public var onProgress: ((String) -> Void)?
    /// Called as each session's calls are all done.
    public var onSessionFinished: SessionFinished?

    /// Prepares a run over `sessions`, each at the endpoints it names (looked up in
    /// `endpoints`; a name not configured gives a `failed` outcome), with bearer `tokens` by
    /// credential name (an endpoint whose credential is missing gets `failed` calls).
    public init(
        id: RunID = .random(), kind: Kind, sessions: [Session], endpoints: [EndpointConfiguration],
        tokens: [String: String], budget: StopBudget, settings: Settings, transport: any HTTPTransport, loop: EventLoop,
        journal: any JournalSink
    ) {
        self.id = id
        self.kind = kind
        self.budget = budget
        self.settings = settings
        self.transport = transport
        self.loop = loop
        self.journal = journal
        self.tokens = tokens
        self.sessions = sessions
        runJournal = RunJournal(run: id, kind: kind, journal: journal, loop: loop)
        report = RunReport(id: id, kind: kind, budget: budget.total)
        var byName: [String: EndpointTemplate] = [:]
        for endpoint in endpoints { byName[endpoint.name] = EndpointTemplate(endpoint, credentials: tokens) }
        templates = byName
        callsTotal = sessions.reduce(0) { $0 + $1.endpoints.count }
        callsLeft = callsTotal
        // One result per call: reserved once rather than grown by doubling (and copying).
        report.calls.reserveCapacity(callsTotal)
    }

    /// Starts the run; `completion` runs once, when every call has an outcome.
    public func begin(completion: @escaping (RunReport) -> Void) {
        self.completion = completion
        budget.onExpiration { [weak self] reason in self?.expire(reason) }
        expiryTimer = loop.schedule(at: budget.deadline) { [budget] in budget.expireIfDue() }
        statusTimer = loop.schedule(after: .milliseconds(250)) { [weak self] in self?.reportProgress() }
        // Calls that cannot be made end now; the line skips them (``callable(_:)``).
        for (session, value) in sessions.enumerated() {
            for name in value.endpoints {
                guard let template = template(named: name) else {
                    finish(session, name, nil, .failed(cause: "endpoint '\(name)' is not configured"))
                    continue
                }
                if let cause = template.unavailable { finish(session, name, template, .failed(cause: cause)) }
            }
        }
        pump()
        finishIfDone()
    }

    /// Cancels everything without recording outcomes: the stop run takes these sessions over.
    /// Returns what the run did to the sessions it had not finished — the endpoints that already
    /// ended each and the requests made — so that the stop run does not call those endpoints
    /// again. (Sessions already finished were reported through ``onSessionFinished``.)
    @discardableResult
    public func abandon() -> [SessionResult] {
        guard !finished else { return [] }
        finished = true
        runJournal.flush()
        var attemptsBySession: [Int: Int] = [:]
        for session in progress.keys { attemptsBySession[session] = 0 }
        for index in calls.indices {
            switch calls[index].state {
            case .inFlight(let id): transport.cancel(id)
            case .waitingToRetry(let timer): loop.cancel(timer)
            case .done: continue
            default: break
            }
            attemptsBySession[calls[index].session, default: 0] += calls[index].attempts
            calls[index].state = .done
        }
        cancelTimers()
        return attemptsBySession.keys.sorted().compactMap { index in
            let done = progress[index] ?? SessionProgress(callsLeft: 0)
            let attempts = done.attempts + (attemptsBySession[index] ?? 0)
            guard !done.endedEndpoints.isEmpty || attempts > 0 else { return nil }
            return SessionResult(
                id: sessions[index].id, ended: false, endedEndpoints: done.endedEndpoints,
                outcome: done.worst ?? .notStarted(reason: "the run was taken over by the stop run"),
                attempts: attempts)
        }
    }

    // MARK: The line

    private func template(named name: String) -> EndpointTemplate? {
        if let lastTemplate, lastTemplate.name == name { return lastTemplate.template }
        let template = templates[name]
        lastTemplate = (name, template)
        return template
    }

    /// The template of a call that can be made (configured, its credentials available).
    private func callable(_ name: String) -> EndpointTemplate? {
        guard let template = template(named: name), template.unavailable == nil else { return nil }
        return template
    }

    /// The next call in line that can be made, as (session, endpoint name, template).
    private func takeFromLine() -> (session: Int, name: String, template: EndpointTemplate)? {
        while lineSession < sessions.count {
            let endpoints = sessions[lineSession].endpoints
            while lineEndpoint < endpoints.count {
                let name = endpoints[lineEndpoint]
                lineEndpoint += 1
                if let template = callable(name) { return (lineSession, name, template) }
            }
            lineSession += 1
            lineEndpoint = 0
        }
        return nil
    }

    /// Gives a call taken from the line a slot.
    private func slot(for taken: (session: Int, name: String, template: EndpointTemplate)) -> Int {
        let call = Call(
            number: callsTaken, session: taken.session,
            endSession: EndSessionCall(session: sessions[taken.session], template: taken.template),
            endpointName: taken.name)
        callsTaken += 1
        if let free = freeSlots.popLast() {
            calls[free] = call
            return free
        }
        calls.append(call)
        return calls.count - 1
    }

    // MARK: Scheduling

    /// The next call to try: a retry (or a released call) first, then the next in line.
    private func nextCall() -> Int? {
        if retryHead < retryReady.count {
            let index = retryReady[retryHead]
            retryHead += 1
            if retryHead == retryReady.count {
                retryReady.removeAll(keepingCapacity: true)
                retryHead = 0
            }
            return index
        }
        return takeFromLine().map(slot(for:))
    }

    private func pump() {
        while !finished && inFlight < settings.maxConcurrent, let index = nextCall() {
            guard case .queued = calls[index].state else { continue }
            let endSession = calls[index].endSession
            if !budget.allowsNewRequest {
                refuseRemaining(index)
                return
            }
            switch gate.admit(index, to: endSession.origin) {
            case .go: start(index, endSession)
            case .park: calls[index].state = .parked
            case .refuse(let cause): finish(index, Self.notAttempted(endSession.origin, cause))
            }
        }
    }

    /// Too little budget is left: the current call and every call still waiting its turn end
    /// now, including calls a finishing probe releases meanwhile.
    private func refuseRemaining(_ current: Int) {
        let reason = "less than \(budget.minimumRequest.humanReadable) of the budget was left"
        var next: Int? = current
        while let index = next {
            if case .queued = calls[index].state {
                finish(index, calls[index].attempts > 0 ? .expired : .notStarted(reason: reason))
            }
            if retryHead < retryReady.count {
                next = nextCall()
            } else {
                finishLine(.notStarted(reason: reason))
                next = nil
            }
        }
    }

    private func start(_ index: Int, _ endSession: EndSessionCall) {
        let endpoint = endSession.template.configuration
        guard let timeout = budget.requestTimeout(limit: endpoint.timeout, margin: settings.margin) else {
            finish(index, calls[index].attempts > 0 ? .expired : .notStarted(reason: "too little budget was left"))
            return
        }
        calls[index].timeoutIsBudget = timeout < endpoint.timeout
        calls[index].lastAttemptUnreachable = false  // this attempt's own result decides
        let token = endpoint.tokenCredential.flatMap { tokens[$0] }
        let request = endSession.request(timeout: timeout, token: token)
        let number = calls[index].number
        do {
            let id = try transport.start(request) { [weak self] result in self?.completed(index, number, result) }
            calls[index].state = .inFlight(id)
            calls[index].attempts += 1
            if calls[index].firstStart == nil { calls[index].firstStart = loop.clock.now() }
            inFlight += 1
        } catch {
            finish(index, .failed(cause: "could not start the request: \(error)"))
        }
    }

    // MARK: Completions

    private func completed(_ index: Int, _ number: Int, _ result: HTTPResult) {
        guard !finished, calls[index].number == number, case .inFlight = calls[index].state else { return }
        inFlight -= 1
        let endSession = calls[index].endSession
        let origin = endSession.origin
        calls[index].lastAttemptUnreachable = result.failure.map { $0.kind == .connect || $0.kind == .resolve } ?? false
        if let failure = result.failure,
            failure.kind == .cancelled || (failure.kind == .timeout && calls[index].timeoutIsBudget)
        {
            // Cut off by the budget, not by the endpoint's own timeout.
            finish(index, .expired)
        } else {
            switch ReplyJudge.judge(result, endpoint: endSession.template.configuration) {
            case .ended(let status):
                originAnswered(origin)
                finish(index, .ended(status: status))
            case .rejected(let status, let reason):
                originAnswered(origin)
                finish(index, .rejected(status: status, reason: reason))
            case .failed(let cause):
                finish(index, .failed(cause: cause))
            case .retryable(let cause, let status, let notBefore):
                calls[index].lastCause = cause
                calls[index].lastStatus = status
                if status != nil { originAnswered(origin) }
                if calls[index].lastAttemptUnreachable { gate.connectionFailed(index, at: origin) }
                retryOrGiveUp(index, notBefore: notBefore)
            }
        }
        pump()
        finishIfDone()
    }

    private func retryOrGiveUp(_ index: Int, notBefore: Duration?) {
        let attempts = calls[index].attempts
        var delay = settings.retryDelay * (1 << min(attempts - 1, 16))
        delay = delay / 2 + delay / 2 * Double.random(in: 0...1, using: &random)
        if let notBefore, notBefore > delay { delay = notBefore }
        let canRetry =
            attempts < settings.maxAttempts && budget.expiry == nil
            && budget.timeRemaining - delay >= budget.minimumRequest
        guard canRetry else {
            let cause = calls[index].lastCause
            let outcome: CallOutcome =
                calls[index].lastStatus.map { .rejected(status: $0, reason: "\(cause) after \(attempts) attempts") }
                ?? .failed(cause: attempts > 1 ? "\(cause) (after \(attempts) attempts)" : cause)
            finish(index, outcome)
            return
        }
        let number = calls[index].number
        calls[index].state = .waitingToRetry(
            loop.schedule(after: delay) { [weak self] in self?.retryNow(index, number) })
    }

    private func retryNow(_ index: Int, _ number: Int) {
        guard !finished, calls[index].number == number, case .waitingToRetry = calls[index].state else { return }
        calls[index].state = .queued
        retryReady.append(index)
        pump()
        finishIfDone()
    }

    private func originAnswered(_ origin: String) {
        release(gate.answered(origin))
    }

    /// Queues parked calls again; the caller pumps.
    private func release(_ parked: [Int]) {
        for index in parked where calls[index].state.isParked {
            calls[index].state = .queued
            retryReady.append(index)
        }
    }

    private static func notAttempted(_ origin: String, _ cause: String) -> CallOutcome {
        .failed(cause: "not attempted: \(origin) is unreachable (\(cause))")
    }

    // MARK: Expiry

    private func expire(_ reason: StopBudget.ExpiryReason) {
        guard !finished else { return }
        report.expiry = reason
        journal.record(
            JournalEntry(
                .expired,
                "Budget expired (\(reason.rawValue)) with \(callsLeft) of \(callsTotal) calls unfinished: "
                    + "cancelling what is in flight",
                runJournal.runFields + [
                    JournalField(.budgetUsec, budget.total.microseconds),
                    JournalField(
                        .timeRemainingUsec, max(.zero, budget.deadline.duration(since: loop.clock.now())).microseconds),
                ]))
        // In the run's order of calls: those under way (taken in that order), then the line.
        let underWay = calls.indices.filter { !Self.isDone(calls[$0].state) }.sorted {
            calls[$0].number < calls[$1].number
        }
        for index in underWay {
            switch calls[index].state {
            case .inFlight(let id):
                // Recorded first: the cancelled completion then finds the call done and is ignored.
                finish(index, .expired)
                inFlight -= 1
                transport.cancel(id)
            case .waitingToRetry(let timer):
                loop.cancel(timer)
                finish(index, .expired)
            case .queued, .parked:
                finish(
                    index,
                    calls[index].attempts > 0
                        ? .expired : .notStarted(reason: "the budget expired (\(reason.rawValue))"))
            case .done:
                break
            }
        }
        finishLine(.notStarted(reason: "the budget expired (\(reason.rawValue))"))
        finishIfDone()
    }

    private static func isDone(_ state: State) -> Bool {
        if case .done = state { return true }
        return false
    }

    /// Every call still in line ends with `outcome`, untried.
    private func finishLine(_ outcome: CallOutcome) {
        while let taken = takeFromLine() { finish(taken.session, taken.name, taken.template, outcome) }
    }

    // MARK: Outcomes

    /// A call under way has its outcome: its slot is freed.
    private func finish(_ index: Int, _ outcome: CallOutcome) {
        if case .done = calls[index].state { return }
        calls[index].state = .done
        freeSlots.append(index)
        let call = calls[index]
        let duration = call.firstStart.map { loop.clock.now().duration(since: $0) } ?? .zero
        record(
            call.session, call.endpointName, call.endSession.template, outcome, attempts: call.attempts,
            duration: duration)
        // Every call's end passes here, so a probe's end releases or fails what it held back,
        // whatever the outcome; the caller pumps. (At expiry, the expiry records every call.)
        if report.expiry == nil {
            let origin = call.endSession.origin
            var unreachable = false
            if case .failed = outcome { unreachable = call.lastAttemptUnreachable }
            let parked = gate.callFinished(index, at: origin, unreachable: unreachable, cause: call.lastCause)
            release(parked.retry)
            for other in parked.fail where calls[other].state.isParked {
                finish(other, Self.notAttempted(origin, parked.cause))
            }
        }
    }

    /// A call never taken from the line has its outcome.
    private func finish(_ session: Int, _ name: String, _ template: EndpointTemplate?, _ outcome: CallOutcome) {
        record(session, name, template, outcome, attempts: 0, duration: .zero)
    }

    private func record(
        _ index: Int, _ endpoint: String, _ template: EndpointTemplate?, _ outcome: CallOutcome, attempts: Int,
        duration: Duration
    ) {
        callsLeft -= 1
        let session = sessions[index]
        report.calls.append(
            RunReport.CallResult(
                sessionID: session.id, ownerUID: session.ownerUID, endpoint: endpoint, outcome: outcome,
                attempts: attempts, duration: duration))
        runJournal.callFinished(
            session: session.id, label: session.label, endpoint: endpoint, url: template?.redactedURL,
            outcome: outcome, attempts: attempts, duration: duration)
        let ended = outcome.isEnded
        if !ended { callsNotEnded += 1 }
        guard session.endpoints.count > 1 else {
            sessionFinished(index, allEnded: ended, endedEndpoints: ended ? session.endpoints : [], outcome, attempts)
            return
        }
        var done = progress.removeValue(forKey: index) ?? SessionProgress(callsLeft: session.endpoints.count)
        done.callsLeft -= 1
        done.attempts += attempts
        if ended {
            done.endedEndpoints.append(endpoint)
        } else {
            done.allEnded = false
            done.worst = outcome
        }
        guard done.callsLeft == 0 else {
            progress[index] = done
            return
        }
        sessionFinished(
            index, allEnded: done.allEnded, endedEndpoints: done.endedEndpoints, done.worst ?? outcome, done.attempts)
    }

    private func sessionFinished(
        _ index: Int, allEnded: Bool, endedEndpoints: [String], _ outcome: CallOutcome, _ attempts: Int
    ) {
        if allEnded { report.sessionsEnded += 1 } else { report.sessionsLeft += 1 }
        onSessionFinished?(
            SessionResult(
                id: sessions[index].id, ended: allEnded, endedEndpoints: endedEndpoints, outcome: outcome,
                attempts: attempts))
    }

    private func finishIfDone() {
        guard !finished, callsLeft == 0 else { return }
        finished = true
        cancelTimers()
        report.duration = budget.elapsed
        runJournal.summarise(report)
        report.journalEntries = runJournal.entriesWritten
        report.journalDropped = runJournal.entriesDropped
        let completion = self.completion
        self.completion = nil
        completion?(report)
    }

    private func cancelTimers() {
        if let expiryTimer { loop.cancel(expiryTimer) }
        if let statusTimer { loop.cancel(statusTimer) }
        expiryTimer = nil
        statusTimer = nil
    }

    // MARK: Progress

    /// `Ending sessions: 812/1000 ended, 3 failed, 6.2 s left`.
    public var progressText: String {
        let failed = callsNotEnded
        return "Ending sessions: \(report.sessionsEnded)/\(sessions.count) ended, \(failed) failed, "
            + "\(budget.timeRemaining.humanReadable) left"
    }

    private func reportProgress() {
        guard !finished else { return }
        onProgress?(progressText)
        statusTimer = loop.schedule(after: .milliseconds(250)) { [weak self] in self?.reportProgress() }
    }
}
