import Endpoints
import Sessions
import Vocabulary

/// Which of a run's calls goes next, and where each call under way stands: the line of calls not
/// yet taken (``CallLine``), the slots of the calls under way (``CallSlots``), the calls ready
/// to go again (``ReadyCalls``), the origins being probed or given up on (``OriginGate``), and
/// how many requests are in flight — at most ``maxConcurrent``.
///
/// Pure bookkeeping, no I/O: the run (``CleanupRun``) starts and cancels the requests, runs the
/// timers and records the outcomes; the schedule says which call is next and keeps each call's
/// state as the run reports what happened to it. Calls are named by their slot.
struct CallSchedule {
    /// Requests in flight at most.
    let maxConcurrent: Int
    /// The run's sessions, by index: what a call's request is made from.
    private let sessions: SessionList
    private var line: CallLine
    private var calls = CallSlots()
    /// Calls under way ready to go again (retries, released calls): served before the line.
    private var ready = ReadyCalls()
    private var gate = OriginGate()
    /// Requests in flight.
    private(set) var inFlight = 0

    /// The schedule of every call of `sessions`, at the endpoints' `templates` by name, with at
    /// most `maxConcurrent` requests in flight.
    init(sessions: SessionList, templates: [String: EndpointTemplate], maxConcurrent: Int) {
        self.sessions = sessions
        self.maxConcurrent = maxConcurrent
        line = CallLine(sessions: sessions, templates: templates, concurrency: maxConcurrent)
        limiters = line.origins.map { origin in
            guard origin.templates.contains(where: { $0.configuration.concurrency == .adaptive }) else { return nil }
            let caps = origin.templates.compactMap { $0.configuration.maxConnectionsPerHost }
            return OriginLimiter(cap: min(caps.min() ?? maxConcurrent, maxConcurrent))
        }
        for (origin, limiter) in limiters.enumerated() {
            if let limiter { line.limit(origin, to: limiter.limit) }
        }
    }

    // MARK: Adaptive limits

    /// Each origin's adaptive limit (by number); nil for an origin whose endpoints all say
    /// `Concurrency=fixed`.
    private(set) var limiters: [OriginLimiter?] = []

    /// The origins' texts (`scheme://host:port`), by number.
    var originNames: [String] { line.origins.map(\.name) }

    /// The connect timeout for a new request of `origin` (a number): its limiter's, if it has one.
    func connectTimeout(_ origin: Int) -> Duration? { limiters[origin]?.connectTimeout }

    /// How long a SYN of `origin` (a number) may wait before it counts as lost: its limiter's
    /// (``OriginLimiter/synTimeout``), if it has one.
    func synTimeout(_ origin: Int) -> Duration? { limiters[origin]?.synTimeout }

    /// What the run report says of each origin with an adaptive limit.
    var originReports: [OriginReport] {
        zip(line.origins, limiters).compactMap { origin, limiter in
            guard let summary = limiter?.summary else { return nil }
            var report = OriginReport(
                origin: origin.name, highestLimit: summary.highest, finalLimit: summary.final,
                lowestLatency: summary.lowest, medianLatency: summary.median)
            report.timeouts = summary.cuts[.timeout] ?? 0
            report.overloaded = summary.cuts[.overloaded] ?? 0
            report.refused = summary.cuts[.refused] ?? 0
            report.resets = summary.cuts[.reset] ?? 0
            report.unacknowledged = summary.cuts[.unacknowledged] ?? 0
            report.slowRounds = summary.cuts[.latency] ?? 0
            return report
        }
    }

    /// A request of `origin` (a number) was answered in `latency`, on a kept connection or not.
    mutating func originSucceeded(_ origin: Int, latency: Duration, reused: Bool) {
        guard limiters[origin] != nil else { return }
        limiters[origin]?.succeeded(latency: latency, reused: reused, inFlight: line.inFlight(origin))
        if let limit = limiters[origin]?.limit { line.limit(origin, to: limit) }
    }

    /// Requests of `origin` (a number) in flight.
    func inFlight(at origin: Int) -> Int { line.inFlight(origin) }

    /// `count` of the `inFlight` requests of `origin` (a number) were lost at its full accept queue.
    mutating func connectionsLost(_ origin: Int, _ count: Int, inFlight: Int) {
        guard limiters[origin] != nil else { return }
        limiters[origin]?.connectionsLost(count, inFlight: inFlight)
        if let limit = limiters[origin]?.limit { line.limit(origin, to: limit) }
    }

    /// A request of `origin` (a number) failed with `signal`.
    mutating func originFailed(_ origin: Int, _ signal: OriginLimiter.Signal) {
        guard limiters[origin] != nil else { return }
        limiters[origin]?.failed(signal, inFlight: line.inFlight(origin))
        if let limit = limiters[origin]?.limit { line.limit(origin, to: limit) }
    }

    /// Calls `uncallable` for every call that cannot be made (see ``CallLine/prepare(_:)``):
    /// the line skips them. Once, before ``next()``.
    mutating func prepare(_ uncallable: (Int, String, EndpointTemplate?, String) -> Void) {
        line.prepare(uncallable)
    }

    // MARK: Taking calls

    /// Whether another request may go in flight.
    var hasRoom: Bool { hasRoom(waiting: 0) }

    /// Whether another call may be taken, with `waiting` calls parked for an access token
    /// (``TokenGate``) counted as in flight: they go as soon as the token comes, and a slow
    /// grant must not draw the whole line into slots.
    func hasRoom(waiting: Int) -> Bool { inFlight + waiting < maxConcurrent }

    /// Whether a call under way is ready to go again.
    var hasReady: Bool { !ready.isEmpty }

    /// The next call to try: one ready to go again (a retry, or a released call) first, then
    /// the next in line, given a slot; nil when none may go now.
    mutating func next() -> Int? {
        if let slot = ready.first {
            // A call ready again waits while its origin is at its adaptive limit (it went again
            // because the server's accept queue lost it: the limit was just cut).
            if let origin = calls[slot].origin, let limit = limiters[origin]?.limit, line.inFlight(origin) >= limit {
                return nil
            }
            return ready.next()
        }
        guard let taken = line.take() else { return nil }
        return calls.add(
            session: taken.session,
            endSession: EndSessionCall(
                id: sessions.id(at: taken.session), key: sessions.key(at: taken.session), template: taken.template),
            endpointName: taken.endpoint, origin: taken.origin)
    }

    /// The next call still in line, to end untried; nil once none is left.
    mutating func takeUntried() -> CallLine.Call? { line.takeUntried() }

    /// The call in `slot`.
    subscript(slot: Int) -> CallUnderWay {
        _read { yield calls[slot] }
        _modify { yield &calls[slot] }
    }

    /// Every slot, done or not.
    var slots: Range<Int> { calls.indices }

    /// The slots of the calls not done, in the order the calls were taken.
    var underWayInOrder: [Int] { calls.underWayInOrder }

    // MARK: What happens to a call

    /// Whether the call in `slot` may go to `origin` now (``OriginGate``); a call told to wait
    /// is parked until the gate releases it.
    mutating func admit(_ slot: Int, to origin: String) -> OriginGate.Admission {
        let admission = gate.admit(slot, to: origin)
        if case .park = admission { calls[slot].state = .parked }
        return admission
    }

    /// The call in `slot` has its request in flight as `transfer`.
    mutating func started(_ slot: Int, transfer: TransferID) {
        calls[slot].state = .inFlight(transfer)
        calls[slot].attempts += 1
        inFlight += 1
        if let origin = calls[slot].origin { line.started(origin) }
    }

    /// The request of the call in `slot` ended without being written (it waited for a
    /// connection): it does not count as an attempt.
    mutating func notSent(_ slot: Int) {
        calls[slot].attempts = max(calls[slot].attempts - 1, 0)
    }

    /// The request of the call in `slot` is no longer in flight (completed or cancelled).
    mutating func stopped(_ slot: Int) {
        inFlight -= 1
        if let origin = calls[slot].origin { line.stopped(origin) }
    }

    /// `origin` answered (any HTTP status): the calls parked behind its probe go again.
    mutating func originAnswered(_ origin: String) {
        release(gate.answered(origin))
    }

    /// The call in `slot` failed in a way worth retrying, with `cause` (and HTTP `status` if
    /// `origin` answered); if it could not connect, it probes the origin (``OriginGate``).
    mutating func failedRetryably(_ slot: Int, at origin: String, cause: String, status: Int?) {
        calls[slot].lastCause = cause
        calls[slot].lastStatus = status
        if status != nil { originAnswered(origin) }
        if calls[slot].lastAttemptUnreachable { gate.connectionFailed(slot, at: origin) }
    }

    /// The call in `slot` goes again: queued, served before the line.
    mutating func requeue(_ slot: Int) {
        calls[slot].state = .queued
        ready.append(slot)
    }

    /// Marks the call in `slot` done and frees its slot; false if it was done already.
    mutating func finish(_ slot: Int) -> Bool { calls.finish(slot) }

    /// The call in `slot`, to `origin`, has its final outcome (`unreachable`: its last attempt
    /// could not connect, with `cause`). When it was the origin's probe, the calls parked behind
    /// it are released, or, when the origin is unreachable, returned with the cause: they are
    /// to fail without an attempt.
    mutating func callFinished(
        _ slot: Int, at origin: String, unreachable: Bool, cause: String
    ) -> (parked: [Int], cause: String) {
        let parked = gate.callFinished(slot, at: origin, unreachable: unreachable, cause: cause)
        release(parked.retry)
        return (parked.fail, parked.cause)
    }

    /// Queues parked calls again.
    private mutating func release(_ parked: [Int]) {
        for slot in parked where calls[slot].state.isParked { requeue(slot) }
    }
}
