import Configuration
import Endpoints
import EventLoop
import Journal
import Sessions
import Vocabulary

/// Ends a set of sessions at their endpoints, concurrently, inside a ``StopBudget`` — the
/// Linux counterpart of a dispatch group: every call is entered once and leaves once, with its
/// own outcome, and one completion runs when all have left.
///
/// - At most `maxConcurrent` calls are in flight; retries go before calls not yet started.
/// - Each request's timeout is the endpoint's, capped by the time remaining less a margin; no
///   request starts when less than the budget's minimum remains (those calls are `not-started`).
/// - Failures the server cannot have acted on (connect, DNS, a request that never left its wait
///   for a connection, 5xx, 429 with `Retry-After`) are retried with exponential backoff and
///   jitter while attempts and the budget allow; a request sent and not answered is never sent
///   again in the run: it is `unconfirmed` (``RetryPolicy``).
/// - When an origin cannot be reached (DNS, connection refused or unreachable), its other calls
///   wait while the failed call probes it with backoff (``OriginGate``); if the probe gives up,
///   they all fail at once instead of each waiting out a timeout; if it ends any other way, they
///   are released to try for themselves.
/// - When the budget expires, in-flight transfers are cancelled and their calls recorded at
///   once, `unconfirmed` if their request was sent, else `expired`; calls never started become
///   `not-started`.
///
/// The run coordinates three parts, each with one job: the ``CallSchedule`` says which call goes
/// next and keeps where each stands, the ``OutcomeRecorder`` takes each call's outcome into the
/// results and the journal, and the ``RunTimers`` expire the budget and report progress. A call
/// flows through ``begin(completion:)`` → `pump` → `start` → `completed` → `finish`; the budget's
/// early ends are in `CleanupRun+Expiry`, the stop run's take-over in `CleanupRun+Abandon`, the
/// tuning in `CleanupRun+Settings`.
package final class CleanupRun {
    /// Reported as each session's last call finishes.
    package typealias SessionFinished = (SessionResult) -> Void

    /// The budget it runs in.
    package let budget: StopBudget
    let settings: Settings
    let transport: any HTTPTransport
    let loop: EventLoop
    // The state every call touches several times. Exclusivity is not checked at run time for it
    // (measured in issue 10: ~20 dynamic checks, ~1,600 instructions per call of the stop run):
    // a run is confined to the loop's thread, and no access to one of these is open while code
    // runs that could reach it again — each is one statement or a call into a part that calls
    // nothing back, and the journal sink the recorder writes to holds no reference to the run.
    // The transport's completions run outside them, and so does `onSessionFinished`, but for the
    // calls that cannot be made: ``begin(completion:)`` records those from inside the
    // schedule's `prepare` (another property than `outcomes`), which is why that handler must
    // not call into the run.
    /// Which call goes next, and where each call under way stands.
    @exclusivity(unchecked) var schedule: CallSchedule
    /// The results and the journal.
    @exclusivity(unchecked) var outcomes: OutcomeRecorder
    /// Set once the run has finished or was abandoned: nothing is started or recorded after.
    @exclusivity(unchecked) var finished = false
    /// The expiry and progress timers.
    var timers = RunTimers()
    /// The access tokens of endpoints with `TokenURL=`: shared with the owner's other runs.
    let tokenCache: TokenCache
    /// Which calls wait for a grant's token, and the grants that failed in this run.
    var tokenGate = TokenGate()
    /// When each origin (by number, ``CallLine/Call/origin``) last answered a request of the
    /// run: while it answers, its requests are given the time that remains (``keepTimeouts()``).
    var lastAnswer: [Int: MonotonicInstant] = [:]
    /// Set by ``windDown(then:)``: no call starts any more, and this runs once no request is
    /// under way.
    private var onQuiet: (() -> Void)?
    /// Whether ``windDown(then:)`` was called: no call starts any more.
    var windingDown = false
    var completion: ((RunReport) -> Void)?

    /// Called with progress text for `STATUS=` at most every 250 ms.
    package var onProgress: ((String) -> Void)?
    /// Called as each session's calls are all done. It must not call into the run (it may run
    /// while the run prepares its calls).
    // Read once per call; exclusivity is not checked at run time (issue 10's instruction count):
    // set by the run's owner before ``begin(completion:)``, and each read is one statement.
    @exclusivity(unchecked) package var onSessionFinished: SessionFinished?

    /// Prepares a run over `sessions`, each at the endpoints it names (looked up in
    /// `endpoints`; a name not configured gives a `failed` outcome), with bearer `tokens` by
    /// credential name (an endpoint whose credential is missing gets `failed` calls), and the
    /// access tokens `TokenURL=` endpoints obtained in `tokenCache` (nil: a cache of the run's own).
    package convenience init(
        id: RunID = .random(), kind: RunKind, sessions: [Session], endpoints: [EndpointConfiguration],
        tokens: [String: String], tokenCache: TokenCache? = nil, budget: StopBudget, settings: Settings,
        transport: any HTTPTransport, loop: EventLoop, journal: any JournalSink
    ) {
        self.init(
            id: id, kind: kind, sessions: SessionList(sessions), endpoints: endpoints, tokens: tokens,
            tokenCache: tokenCache, budget: budget, settings: settings, transport: transport, loop: loop,
            journal: journal)
    }

    /// The same over sessions listed from the store (``SessionList``: shared with the store, not
    /// copied — a stop run's sessions are all the store holds).
    package init(
        id: RunID = .random(), kind: RunKind, sessions: SessionList, endpoints: [EndpointConfiguration],
        tokens: [String: String], tokenCache: TokenCache? = nil, budget: StopBudget, settings: Settings,
        transport: any HTTPTransport, loop: EventLoop, journal: any JournalSink
    ) {
        self.tokenCache = tokenCache ?? TokenCache(clock: loop.clock)
        self.budget = budget
        self.settings = settings
        self.transport = transport
        self.loop = loop
        outcomes = OutcomeRecorder(
            id: id, kind: kind, sessions: sessions, budget: budget.total, journal: journal, loop: loop)
        var byName: [String: EndpointTemplate] = [:]
        for endpoint in endpoints { byName[endpoint.name] = EndpointTemplate(endpoint, credentials: tokens) }
        schedule = CallSchedule(sessions: sessions, templates: byName, maxConcurrent: settings.maxConcurrent)
    }

    /// The run's id: every journal entry of the run carries it (`SESSION_CLEANUP_RUN_ID=`).
    package var id: RunID { outcomes.report.id }

    /// Starts the run; `completion` runs once, when every call has an outcome.
    package func begin(completion: @escaping (RunReport) -> Void) {
        self.completion = completion
        budget.onExpiration { [weak self] reason in self?.expire(reason) }
        timers.start(for: budget, in: loop) { [weak self] in self?.reportProgress() }
        // Calls that cannot be made end now; the line skips them.
        schedule.prepare { session, name, template, cause in
            finish(session, name, template, .failed(cause: cause))
        }
        pump()
        finishIfDone()
    }

    // MARK: Starting calls

    /// Starts the next calls while there is room, the budget allows, and calls are left.
    func pump() {
        while !finished && !windingDown && schedule.hasRoom(waiting: tokenGate.parked), let slot = schedule.next() {
            guard case .queued = schedule[slot].state else { continue }
            let endSession = schedule[slot].endSession
            if !budget.allowsNewRequest {
                refuseRemaining(slot)
                return
            }
            switch schedule.admit(slot, to: endSession.origin) {
            case .go:
                if let grant = endSession.template.grant {
                    startWithToken(slot, endSession, grant)
                } else {
                    start(slot, endSession, token: endSession.template.token)
                }
            case .park: break  // until the origin's probe ends
            case .refuse(let cause): finish(slot, Self.notAttempted(endSession.origin, cause))
            }
        }
    }

    /// Starts the request of the call in `slot`, its timeout capped by the budget. A call with an
    /// origin of its line's (every call but those whose host holds the key) gets the budget's
    /// rest as its request's timeout: the endpoint's own (`TimeoutSec=`) is kept by
    /// ``keepTimeouts()``, which gives a request its origin is visibly working on more time. `token`
    /// goes as a bearer token if given.
    func start(_ slot: Int, _ endSession: EndSessionCall, token: String?) {
        let template = endSession.template
        let limit = template.configuration.timeout
        let patient = schedule[slot].origin != nil
        guard let timeout = budget.requestTimeout(limit: patient ? budget.total : limit, margin: settings.margin)
        else {
            finish(slot, schedule[slot].attempts > 0 ? .expired : .notStarted(reason: "too little budget was left"))
            return
        }
        schedule[slot].timeoutIsBudget = patient || timeout < limit
        schedule[slot].lastAttemptUnreachable = false  // this attempt's own result decides
        var connectTimeout: Duration?
        if let origin = schedule[slot].origin, schedule[slot].connectTimeouts < OriginLimiter.connectRetries,
            let connect = schedule.connectTimeout(origin), connect < timeout
        {
            connectTimeout = connect
        }
        schedule[slot].attemptTimeout = timeout
        schedule[slot].connectTimeout = connectTimeout
        let request = endSession.request(timeout: timeout, connectTimeout: connectTimeout, token: token)
        let number = schedule[slot].number
        do {
            let id = try transport.start(request) { [weak self] result in self?.completed(slot, number, result) }
            schedule.started(slot, transfer: id)
            let now = loop.clock.now()
            schedule[slot].attemptStart = now
            if schedule[slot].firstStart == nil { schedule[slot].firstStart = now }
        } catch {
            finish(slot, .failed(cause: "could not start the request: \(error)"))
        }
    }

    // MARK: Completions

    /// The request of call `number` in `slot` completed with `result`.
    private func completed(_ slot: Int, _ number: Int, _ result: HTTPResult) {
        guard !finished, schedule[slot].number == number, case .inFlight = schedule[slot].state else { return }
        schedule.stopped(slot)
        observe(slot, result)
        let endSession = schedule[slot].endSession
        let origin = endSession.origin
        schedule[slot].lastAttemptUnreachable =
            result.failure.map { $0.kind == .connect || $0.kind == .resolve } ?? false
        if let failure = result.failure,
            let unanswered = RetryPolicy.unanswered(failure, requestSent: result.requestSent)
        {
            switch unanswered {
            case .unconfirmed(let cause):
                // The server may be working on it: sending it again would only add to its load.
                finish(slot, .unconfirmed(cause: cause))
                pump()
                finishIfDone()
                return
            case .notSent:
                // It waited for a connection and was never written: not an attempt.
                schedule.notSent(slot)
                if connectTimedOut(slot, failure) {
                    // A SYN or handshake lost (a full accept queue): again at once, on a new connection.
                    schedule[slot].connectTimeouts += 1
                    schedule.requeue(slot)
                    pump()
                    finishIfDone()
                    quietIfIdle()
                    return
                }
            }
        }
        if let failure = result.failure,
            failure.kind == .cancelled || (failure.kind == .timeout && schedule[slot].timeoutIsBudget)
        {
            // Cut off by the budget, not by the endpoint's own timeout.
            finish(slot, .expired)
        } else if retriesWithFreshToken(slot, result) {
            schedule.originAnswered(origin)
        } else {
            switch endSession.template.judge(result) {
            case .ended(let status):
                schedule.originAnswered(origin)
                if let number = schedule[slot].origin { lastAnswer[number] = loop.clock.now() }
                finish(slot, .ended(status: status))
            case .rejected(let status, let reason):
                schedule.originAnswered(origin)
                if let number = schedule[slot].origin { lastAnswer[number] = loop.clock.now() }
                finish(slot, .rejected(status: status, reason: reason))
            case .failed(let cause):
                finish(slot, .failed(cause: cause))
            case .retryable(let cause, let status, let notBefore):
                schedule.failedRetryably(slot, at: origin, cause: cause, status: status)
                retryOrGiveUp(slot, notBefore: notBefore)
            }
        }
        pump()
        finishIfDone()
        quietIfIdle()
    }

    // MARK: Winding down

    /// Before a hand-over to a restarted daemon: starts no call any more (neither from the line
    /// nor a retry) and runs `then` once no request is under way — at once if none is. The
    /// requests under way finish and are recorded as usual, so the next process does not call
    /// them again; the owner abandons the run afterwards (``abandon()``), at the latest when its
    /// own deadline passes.
    package func windDown(then: @escaping () -> Void) {
        windingDown = true
        onQuiet = then
        quietIfIdle()
    }

    func quietIfIdle() {
        guard let onQuiet, finished || schedule.inFlight == 0 else { return }
        self.onQuiet = nil
        onQuiet()
    }

    /// After a retryable failure: the call in `slot` waits to retry, or ends with that failure.
    private func retryOrGiveUp(_ slot: Int, notBefore: Duration?) {
        let attempts = schedule[slot].attempts
        let jitter = Double.random(in: 0...1)
        switch settings.retryPolicy.decide(attempts: attempts, notBefore: notBefore, jitter: jitter, budget: budget) {
        case .giveUp:
            finish(
                slot,
                RetryPolicy.outcomeOfGivingUp(cause: schedule[slot].lastCause, status: schedule[slot].lastStatus))
        case .retry(let delay):
            let number = schedule[slot].number
            let timer = loop.schedule(after: delay) { [weak self] in self?.retryNow(slot, number) }
            schedule[slot].state = .waitingToRetry(timer)
        }
    }

    /// Call `number` in `slot` waited out its backoff: it goes again.
    private func retryNow(_ slot: Int, _ number: Int) {
        guard !finished, schedule[slot].number == number, case .waitingToRetry = schedule[slot].state else { return }
        schedule.requeue(slot)
        pump()
        finishIfDone()
    }

    static func notAttempted(_ origin: String, _ cause: String) -> CallOutcome {
        .failed(cause: "\(origin) is unreachable (\(cause)); no request was sent")
    }
}
