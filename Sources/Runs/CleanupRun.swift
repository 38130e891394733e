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
/// - Retryable failures (connect, DNS, timeout, 5xx, 429 with `Retry-After`) are retried with
///   exponential backoff and jitter while attempts and the budget allow.
/// - When an origin cannot be reached (DNS, connection refused or unreachable), its other calls
///   wait while the failed call probes it with backoff (``OriginGate``); if the probe gives up,
///   they all fail at once instead of each waiting out a timeout; if it ends any other way, they
///   are released to try for themselves.
/// - When the budget expires, in-flight transfers are cancelled and their calls recorded as
///   `expired` at once; calls never started become `not-started`.
package final class CleanupRun {
    /// Tuning, from `[Stop]`.
    package struct Settings: Sendable {
        /// Calls in flight at most.
        package var maxConcurrent: Int
        /// Requests per call at most.
        package var maxAttempts: Int
        /// The first retry's backoff; doubled per retry, with jitter.
        package var retryDelay: Duration
        /// Kept between a request's timeout and the deadline, to record its outcome in time.
        package var margin: Duration = .milliseconds(50)

        /// Settings from the configuration's `[Stop]`.
        package init(_ stop: StopSettings) {
            maxConcurrent = stop.maxConcurrentRequests
            maxAttempts = stop.maxAttempts
            retryDelay = stop.retryDelay
        }
    }

    /// Reported as each session's last call finishes.
    package typealias SessionFinished = (SessionResult) -> Void

    /// The run's id: every journal entry of the run carries it (`SESSION_CLEANUP_RUN_ID=`).
    package let id: RunID
    /// The kind of run.
    package let kind: RunKind
    /// The budget it runs in.
    package let budget: StopBudget
    let settings: Settings
    let transport: any HTTPTransport
    let loop: EventLoop
    let journal: any JournalSink
    let runJournal: RunJournal
    /// Shared with the store, not copied: a stop run's sessions are all the store holds.
    private let sessions: SessionList
    private let retryPolicy: RetryPolicy
    /// The calls not yet taken (unchecked exclusivity: see below).
    @exclusivity(unchecked) var line: CallLine
    // The state every call touches several times. Exclusivity is not checked at run time for it
    // (measured: ~20 dynamic checks per call, ~1,600 instructions of a stop run's ~110,000 per
    // call, issue 10): a run is confined to the loop's thread, and no access to one of these is
    // open while code runs that could reach it again — each is one statement; the transport's
    // completions, the journal and `onSessionFinished` run outside them.
    /// The calls taken and not yet finished.
    @exclusivity(unchecked) var calls = CallSlots()
    /// Calls under way ready to go again (retries, released calls): served before the line.
    @exclusivity(unchecked) var ready = ReadyCalls()
    @exclusivity(unchecked) private var gate = OriginGate()
    @exclusivity(unchecked) var inFlight = 0
    @exclusivity(unchecked) var results: RunResults
    @exclusivity(unchecked) var finished = false
    private var completion: ((RunReport) -> Void)?
    private var expiryTimer: EventLoop.TimerID?
    private var statusTimer: EventLoop.TimerID?
    private var random = SystemRandomNumberGenerator()

    /// Called with progress text for `STATUS=` at most every 250 ms.
    package var onProgress: ((String) -> Void)?
    /// Called as each session's calls are all done.
    // Read once per call; exclusivity is not checked at run time (issue 10's instruction count):
    // set by the run's owner before ``begin(completion:)``, and each read is one statement.
    @exclusivity(unchecked) package var onSessionFinished: SessionFinished?

    /// Prepares a run over `sessions`, each at the endpoints it names (looked up in
    /// `endpoints`; a name not configured gives a `failed` outcome), with bearer `tokens` by
    /// credential name (an endpoint whose credential is missing gets `failed` calls).
    package convenience init(
        id: RunID = .random(), kind: RunKind, sessions: [Session], endpoints: [EndpointConfiguration],
        tokens: [String: String], budget: StopBudget, settings: Settings, transport: any HTTPTransport, loop: EventLoop,
        journal: any JournalSink
    ) {
        self.init(
            id: id, kind: kind, sessions: SessionList(sessions), endpoints: endpoints, tokens: tokens, budget: budget,
            settings: settings, transport: transport, loop: loop, journal: journal)
    }

    /// The same over sessions listed from the store (``SessionList``: shared, not copied).
    package init(
        id: RunID = .random(), kind: RunKind, sessions: SessionList, endpoints: [EndpointConfiguration],
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
        self.sessions = sessions
        retryPolicy = RetryPolicy(maxAttempts: settings.maxAttempts, retryDelay: settings.retryDelay)
        runJournal = RunJournal(run: id, kind: kind, journal: journal, loop: loop)
        results = RunResults(sessions: sessions, report: RunReport(id: id, kind: kind, budget: budget.total))
        var byName: [String: EndpointTemplate] = [:]
        for endpoint in endpoints { byName[endpoint.name] = EndpointTemplate(endpoint, credentials: tokens) }
        line = CallLine(sessions: sessions, templates: byName, concurrency: settings.maxConcurrent)
    }

    /// Starts the run; `completion` runs once, when every call has an outcome.
    package func begin(completion: @escaping (RunReport) -> Void) {
        self.completion = completion
        budget.onExpiration { [weak self] reason in self?.expire(reason) }
        expiryTimer = loop.schedule(at: budget.deadline) { [budget] in budget.expireIfDue() }
        statusTimer = loop.schedule(after: .milliseconds(250)) { [weak self] in self?.reportProgress() }
        // Calls that cannot be made end now; the line skips them.
        line.prepare { session, name, template, cause in
            finish(session, name, template, .failed(cause: cause))
        }
        pump()
        finishIfDone()
    }

    /// Cancels everything without recording outcomes: the stop run takes these sessions over.
    /// Returns what the run did to the sessions it had not finished — the endpoints that already
    /// ended each and the requests made — so that the stop run does not call those endpoints
    /// again. (Sessions already finished were reported through ``onSessionFinished``.)
    @discardableResult
    package func abandon() -> [SessionResult] {
        guard !finished else { return [] }
        finished = true
        runJournal.flush()
        var attemptsUnderWay: [Int: Int] = [:]
        for index in calls.indices {
            switch calls[index].state {
            case .inFlight(let id): transport.cancel(id)
            case .waitingToRetry(let timer): loop.cancel(timer)
            case .done: continue
            default: break
            }
            attemptsUnderWay[calls[index].session, default: 0] += calls[index].attempts
            calls[index].state = .done
        }
        cancelTimers()
        return results.unfinished(attemptsUnderWay: attemptsUnderWay)
    }

    // MARK: Scheduling

    /// The next call to try: a retry (or a released call) first, then the next in line, given
    /// a slot.
    func nextCall() -> Int? {
        if let index = ready.next() { return index }
        guard let taken = line.take() else { return nil }
        return calls.add(
            session: taken.session,
            endSession: EndSessionCall(
                id: sessions.id(at: taken.session), key: sessions.key(at: taken.session), template: taken.template),
            endpointName: taken.endpoint, origin: taken.origin)
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

    private func start(_ index: Int, _ endSession: EndSessionCall) {
        let template = endSession.template
        let limit = template.configuration.timeout
        guard let timeout = budget.requestTimeout(limit: limit, margin: settings.margin) else {
            finish(index, calls[index].attempts > 0 ? .expired : .notStarted(reason: "too little budget was left"))
            return
        }
        calls[index].timeoutIsBudget = timeout < limit
        calls[index].lastAttemptUnreachable = false  // this attempt's own result decides
        // The template read the endpoint's token from the run's tokens when the run began.
        let request = endSession.request(timeout: timeout, token: template.token)
        let number = calls[index].number
        do {
            let id = try transport.start(request) { [weak self] result in self?.completed(index, number, result) }
            calls[index].state = .inFlight(id)
            calls[index].attempts += 1
            if calls[index].firstStart == nil { calls[index].firstStart = loop.clock.now() }
            inFlight += 1
            if let origin = calls[index].origin { line.started(origin) }
        } catch {
            finish(index, .failed(cause: "could not start the request: \(error)"))
        }
    }

    // MARK: Completions

    private func completed(_ index: Int, _ number: Int, _ result: HTTPResult) {
        guard !finished, calls[index].number == number, case .inFlight = calls[index].state else { return }
        inFlight -= 1
        if let origin = calls[index].origin { line.stopped(origin) }
        let endSession = calls[index].endSession
        let origin = endSession.origin
        calls[index].lastAttemptUnreachable = result.failure.map { $0.kind == .connect || $0.kind == .resolve } ?? false
        if let failure = result.failure,
            failure.kind == .cancelled || (failure.kind == .timeout && calls[index].timeoutIsBudget)
        {
            // Cut off by the budget, not by the endpoint's own timeout.
            finish(index, .expired)
        } else {
            switch endSession.template.judge(result) {
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
        let jitter = Double.random(in: 0...1, using: &random)
        switch retryPolicy.decide(attempts: attempts, notBefore: notBefore, jitter: jitter, budget: budget) {
        case .giveUp:
            finish(
                index,
                RetryPolicy.outcomeOfGivingUp(
                    cause: calls[index].lastCause, status: calls[index].lastStatus, attempts: attempts))
        case .retry(let delay):
            let number = calls[index].number
            calls[index].state = .waitingToRetry(
                loop.schedule(after: delay) { [weak self] in self?.retryNow(index, number) })
        }
    }

    private func retryNow(_ index: Int, _ number: Int) {
        guard !finished, calls[index].number == number, case .waitingToRetry = calls[index].state else { return }
        calls[index].state = .queued
        ready.append(index)
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
            ready.append(index)
        }
    }

    private static func notAttempted(_ origin: String, _ cause: String) -> CallOutcome {
        .failed(cause: "not attempted: \(origin) is unreachable (\(cause))")
    }

    // MARK: Outcomes

    /// A call under way has its outcome: its slot is freed.
    func finish(_ index: Int, _ outcome: CallOutcome) {
        guard calls.finish(index) else { return }
        let call = calls[index]
        let duration = call.firstStart.map { loop.clock.now().duration(since: $0) } ?? .zero
        record(
            call.session, call.endpointName, call.endSession.template, outcome, attempts: call.attempts,
            duration: duration)
        // Every call's end passes here, so a probe's end releases or fails what it held back,
        // whatever the outcome; the caller pumps. (At expiry, the expiry records every call.)
        if results.report.expiry == nil {
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
    func finish(_ session: Int, _ name: String, _ template: EndpointTemplate?, _ outcome: CallOutcome) {
        record(session, name, template, outcome, attempts: 0, duration: .zero)
    }

    private func record(
        _ index: Int, _ endpoint: String, _ template: EndpointTemplate?, _ outcome: CallOutcome, attempts: Int,
        duration: Duration
    ) {
        let sessionFinished = results.record(index, endpoint, outcome, attempts: attempts, duration: duration)
        runJournal.callFinished(
            session: sessions.id(at: index), label: sessions.label(at: index), endpoint: endpoint,
            url: template?.redactedURL,
            outcome: outcome, attempts: attempts, duration: duration)
        if let sessionFinished { onSessionFinished?(sessionFinished) }
    }

    func finishIfDone() {
        guard !finished, results.callsLeft == 0 else { return }
        finished = true
        cancelTimers()
        results.report.duration = budget.elapsed
        runJournal.summarise(results.report)
        results.report.journalEntries = runJournal.entriesWritten
        results.report.journalDropped = runJournal.entriesDropped
        let completion = self.completion
        self.completion = nil
        completion?(results.report)
    }

    private func cancelTimers() {
        if let expiryTimer { loop.cancel(expiryTimer) }
        if let statusTimer { loop.cancel(statusTimer) }
        expiryTimer = nil
        statusTimer = nil
    }

    // MARK: Progress

    /// `Ending sessions: 812/1000 ended, 3 failed, 6.2 s left`.
    package var progressText: String {
        "Ending sessions: \(results.report.sessionsEnded)/\(sessions.count) ended, \(results.callsNotEnded) failed, "
            + "\(budget.timeRemaining.humanReadable) left"
    }

    private func reportProgress() {
        guard !finished else { return }
        onProgress?(progressText)
        statusTimer = loop.schedule(after: .milliseconds(250)) { [weak self] in self?.reportProgress() }
    }
}
