import XCTest

@testable import Configuration
@testable import EventLoop
@testable import HTTPEngine
@testable import Runs
@testable import Sessions
@testable import TestSupport
@testable import Vocabulary

final class CleanupRunTests: XCTestCase {
    private let clock = ManualClock()
    private var loop: EventLoop!
    private let transport = FakeTransport()
    private let journal = MemoryJournal()
    private var report: RunReport?
    private var run: CleanupRun?  // the owner keeps the run alive, as the daemon does
    private var finishedSessions: [(SessionID, Bool)] = []
    private var endedEndpoints: [SessionID: [String]] = [:]

    override func setUpWithError() throws {
        loop = try EventLoop(clock: clock)
    }

    private func session(_ key: String, _ endpoints: [String] = ["auth"]) -> Session {
        Session(id: .random(), key: SessionKey(key), endpoints: endpoints, ownerUID: 0, registeredAt: 0)
    }

    private func endpoint(_ name: String, host: String = "127.0.0.1:8080") -> EndpointConfiguration {
        EndpointConfiguration(name: name, url: "http://\(host)/user/{session}/endsession")
    }

    private func makeRun(
        _ sessions: [Session], endpoints: [EndpointConfiguration]? = nil, budget: Duration = .seconds(10),
        maxConcurrent: Int = 8, maxAttempts: Int = 3
    ) -> CleanupRun {
        var stop = StopSettings()
        stop.maxConcurrentRequests = maxConcurrent
        stop.maxAttempts = maxAttempts
        stop.retryDelay = .milliseconds(100)
        let run = CleanupRun(
            kind: .stop, sessions: sessions, endpoints: endpoints ?? [endpoint("auth")], tokens: [:],
            budget: StopBudget(total: budget, minimumRequest: .seconds(1), clock: clock),
            settings: CleanupRun.Settings(stop), transport: transport, loop: loop, journal: journal)
        run.onSessionFinished = { [unowned self] result in
            self.finishedSessions.append((result.id, result.ended))
            self.endedEndpoints[result.id] = result.endedEndpoints
        }
        return run
    }

    private func begin(_ run: CleanupRun) {
        self.run = run
        run.begin { [unowned self] report in
            XCTAssertNil(self.report, "the completion runs once")
            self.report = report
        }
    }

    /// Moves time on and runs whatever timers fell due.
    private func advance(_ duration: Duration) throws {
        clock.advance(duration)
        try loop.runOnce(maximumWait: .zero)
    }

    private func outcome(_ session: Session, _ endpoint: String = "auth") -> CallOutcome? {
        report?.calls.first { $0.sessionID == session.id && $0.endpoint == endpoint }?.outcome
    }

    func testEveryCallIsAccountedForExactlyOnceAndASessionEndsOnlyWhenAllEndpointsDid() throws {
        let both = session("ok-both", ["auth", "licence"])
        let half = session("half", ["auth", "licence"])
        let run = makeRun(
            [both, half], endpoints: [endpoint("auth"), endpoint("licence", host: "127.0.0.1:9090")])
        begin(run)
        XCTAssertEqual(transport.pending.count, 4, "all calls start together")
        XCTAssertTrue(transport.complete(matching: "ok-both", with: FakeTransport.reply(200)))
        XCTAssertTrue(transport.complete(matching: "ok-both", with: FakeTransport.reply(200)))
        XCTAssertTrue(transport.complete(matching: "half", with: FakeTransport.reply(200)))
        XCTAssertNil(report)
        XCTAssertTrue(transport.complete(matching: "half", with: FakeTransport.reply(200, "{\"success\": false}")))
        let report = try XCTUnwrap(report)
        XCTAssertEqual(report.calls.count, 4)
        XCTAssertEqual(report.sessionsEnded, 1)
        XCTAssertEqual(report.sessionsLeft, 1)
        XCTAssertEqual(report.callCounts, ["ended": 3, "rejected": 1])
        XCTAssertEqual(finishedSessions.map(\.1).sorted { !$0 && $1 }, [false, true])
        XCTAssertEqual(journal.entries(event: "call-finished").count, 1, "one entry per call not ended")
        let ended = journal.entries(event: "calls-ended")
        XCTAssertEqual(ended.map { $0.values(of: .sessionID).count }.reduce(0, +), 3, "ended calls, grouped")
        let calls = (journal.entries(event: "call-finished") + ended).compactMap {
            $0.value(of: .calls).flatMap(Int.init)
        }
        XCTAssertEqual(calls.reduce(0, +), 4, "CALLS= adds up to the calls made")
        XCTAssertEqual(journal.entries(event: "run-finished").first?.value(of: .callsTotal), "4")
        XCTAssertEqual(endedEndpoints[half.id], ["auth"], "the half-ended session knows where it was ended")
        XCTAssertEqual(endedEndpoints[both.id]?.sorted(), ["auth", "licence"])
    }

    func testConcurrencyLimitIsRespected() throws {
        let sessions = (0..<10).map { session("ok-\($0)") }
        begin(makeRun(sessions, maxConcurrent: 3))
        XCTAssertEqual(transport.pending.count, 3)
        while transport.complete(with: FakeTransport.reply(200)) {}
        XCTAssertEqual(transport.maxInFlight, 3)
        XCTAssertEqual(report?.sessionsEnded, 10)
    }

    func testCallsUnderWayReuseSlotsAndEveryCallStillEndsOnceInOrder() throws {
        // 40 sessions at two endpoints (one names an endpoint not configured), 2 in flight, every
        // fifth reply a 503: finished calls' slots take new calls while retries wait their turn.
        var sessions = (0..<40).map { session("s-\($0)-", ["auth", "licence"]) }
        sessions[7] = session("s-7-", ["auth", "gone"])
        let run = makeRun(
            sessions, endpoints: [endpoint("auth"), endpoint("licence", host: "127.0.0.1:9090")], maxConcurrent: 2)
        begin(run)
        var replies = 0
        while report == nil {
            if transport.pending.isEmpty {
                try advance(.milliseconds(200))
                continue
            }
            replies += 1
            XCTAssertTrue(transport.complete(with: FakeTransport.reply(replies % 5 == 0 ? 503 : 200)))
        }
        let report = try XCTUnwrap(report)
        XCTAssertEqual(transport.maxInFlight, 2)
        XCTAssertEqual(report.calls.count, 80)
        let pairs = Set(report.calls.map { "\($0.sessionID) \($0.endpoint)" })
        XCTAssertEqual(pairs.count, 80, "every call has exactly one result")
        XCTAssertEqual(
            outcome(sessions[7], "gone"), .failed(cause: "endpoint 'gone' is not configured"))
        XCTAssertEqual(Set(finishedSessions.map(\.0)).count, 40, "every session finishes once")
        XCTAssertEqual(report.sessionsEnded + report.sessionsLeft, 40)
        for session in sessions where session.endpoints == ["auth", "licence"] {
            if report.calls.filter({ $0.sessionID == session.id }).allSatisfy(\.outcome.isEnded) {
                XCTAssertEqual(endedEndpoints[session.id]?.sorted(), ["auth", "licence"])
            }
        }
        // Sessions are taken in the order given.
        let keys = transport.started.compactMap { request in
            sessions.firstIndex { request.url.contains("/user/\($0.key.exposedSecret)/") }
        }
        var seen = Set<Int>()
        let order = keys.filter { seen.insert($0).inserted }
        XCTAssertEqual(order, Array(0..<40), "sessions are called in the order given")
    }

    func testEachOriginKeepsToItsQuotaOfTheCallsInFlightWhileTheRunKeepsItsConcurrency() throws {
        // 60 sessions on 3 origins in turn, 6 in flight: a quota of ⌈6 × 20/60⌉ = 2 per origin.
        // Origins answer in bursts (everything one has in flight, then the next), so in line
        // order the calls in flight would pile up on the origins that did not answer (each rise
        // a new connection).
        let hosts = ["127.0.0.1:8001", "127.0.0.1:8002", "127.0.0.1:8003"]
        // Fixed: the quotas alone (an adaptive limit grows only while it is what holds calls back).
        let sessions = (0..<60).map { session("s-\($0)-", ["o\($0 % 3)"]) }
        let endpoints = hosts.indices.map { index in
            var fixed = endpoint("o\(index)", host: hosts[index])
            fixed.concurrency = .fixed
            return fixed
        }
        begin(makeRun(sessions, endpoints: endpoints, maxConcurrent: 6))
        var turn = 0
        while report == nil {
            let inFlight = hosts.map { host in transport.pending.filter { $0.request.url.contains(host) }.count }
            let startedPerOrigin = hosts.map { host in transport.started.filter { $0.url.contains(host) }.count }
            if startedPerOrigin.allSatisfy({ $0 < 20 }) {
                XCTAssertLessThanOrEqual(inFlight.max() ?? 0, 2, "every origin has calls to start: each keeps to 2")
            }
            if transport.started.count < 60 {
                XCTAssertEqual(transport.pending.count, 6, "the run keeps its concurrency while calls are left")
            }
            turn = inFlight[turn % 3] > 0 ? turn : turn + 1
            if inFlight[turn % 3] > 0 {
                XCTAssertTrue(transport.complete(matching: hosts[turn % 3], with: FakeTransport.reply(200)))
            }
        }
        XCTAssertEqual(report?.sessionsEnded, 60)
        XCTAssertEqual(transport.maxInFlight, 6)
    }

    func testServerErrorIsRetriedWithBackoffThenEnds() throws {
        let flaky = session("flaky")
        begin(makeRun([flaky]))
        transport.complete(with: FakeTransport.reply(500, "oops"))
        XCTAssertEqual(transport.pending.count, 0, "waits for the backoff")
        try advance(.milliseconds(150))
        XCTAssertEqual(transport.pending.count, 1, "retried after the first backoff (50–100 ms)")
        transport.complete(with: FakeTransport.reply(200))
        XCTAssertEqual(outcome(flaky), .ended(status: 200))
        XCTAssertEqual(report?.calls.first?.attempts, 2)
    }

    func testRetryAfterIsHonoured() throws {
        begin(makeRun([session("busy")]))
        transport.complete(with: FakeTransport.reply(429, "", retryAfter: .seconds(2)))
        try advance(.milliseconds(1_900))
        XCTAssertEqual(transport.pending.count, 0)
        try advance(.milliseconds(200))
        XCTAssertEqual(transport.pending.count, 1)
    }

    func testUnreachableOriginFailsTheOtherCallsFastInsteadOfEachTimingOut() throws {
        let sessions = (0..<20).map { session("refused-\($0)") }
        begin(makeRun(sessions, maxConcurrent: 1, maxAttempts: 2))
        transport.complete(with: FakeTransport.failure(.connect))
        XCTAssertEqual(transport.pending.count, 0, "the other calls wait for the probe instead of starting")
        try advance(.milliseconds(150))
        XCTAssertEqual(transport.started.count, 2, "only the probe retries")
        transport.complete(with: FakeTransport.failure(.connect))
        let report = try XCTUnwrap(report, "all calls finished as soon as the probe gave up")
        XCTAssertEqual(report.callCounts, ["failed": 20])
        XCTAssertEqual(report.calls.filter { $0.attempts == 0 }.count, 19)
        XCTAssertEqual(transport.started.count, 2)
    }

    func testProbeSuccessReleasesTheParkedCalls() throws {
        let sessions = (0..<5).map { session("s\($0)") }
        begin(makeRun(sessions, maxConcurrent: 1))
        transport.complete(with: FakeTransport.failure(.connect))
        try advance(.milliseconds(150))
        transport.complete(with: FakeTransport.reply(200))
        while transport.complete(with: FakeTransport.reply(200)) {}
        XCTAssertEqual(report?.sessionsEnded, 5)
    }

    /// Parks four calls behind a probe (the first call, which could not connect), then lets the
    /// probe's retry end with `ending`; returns the sessions.
    private func parkBehindAProbe(
        endpoint: EndpointConfiguration? = nil, budget: Duration = .seconds(10), maxAttempts: Int = 2,
        _ ending: () throws -> Void
    ) throws -> [Session] {
        let sessions = (0..<5).map { session("s\($0)") }
        begin(
            makeRun(
                sessions, endpoints: endpoint.map { [$0] }, budget: budget, maxConcurrent: 1, maxAttempts: maxAttempts))
        transport.complete(with: FakeTransport.failure(.connect))
        try advance(.milliseconds(150))
        XCTAssertEqual(transport.started.count, 2, "only the probe retries")
        try ending()
        return sessions
    }

    /// Before OriginGate, each of these endings left the parked calls unattempted until the
    /// budget ran out.
    func testAProbeThatTimesOutReleasesTheParkedCalls() throws {
        var short = endpoint("auth")
        short.timeout = .seconds(1)
        let sessions = try parkBehindAProbe(endpoint: short) {
            transport.complete(with: FakeTransport.failure(.timeout, requestSent: true))
        }
        XCTAssertEqual(transport.pending.count, 1, "a released call started at once")
        while transport.complete(with: FakeTransport.reply(200)) {}
        XCTAssertEqual(report?.sessionsEnded, 4)
        XCTAssertEqual(outcome(sessions[0])?.word, "unconfirmed", "the probe's request was sent")
    }

    func testAProbeThatFailsTLSReleasesTheParkedCalls() throws {
        let sessions = try parkBehindAProbe { transport.complete(with: FakeTransport.failure(.tls)) }
        while transport.complete(with: FakeTransport.reply(200)) {}
        XCTAssertEqual(report?.sessionsEnded, 4)
        XCTAssertEqual(outcome(sessions[0])?.word, "failed")
    }

    func testAProbeWhoseRequestCannotStartReleasesTheParkedCalls() throws {
        let sessions = (0..<5).map { session("s\($0)") }
        begin(makeRun(sessions, maxConcurrent: 1))
        transport.complete(with: FakeTransport.failure(.connect))
        transport.nextStartError = HTTPEngineError("curl_multi_add_handle", detail: "out of memory")
        try advance(.milliseconds(150))
        XCTAssertEqual(transport.pending.count, 1)
        while transport.complete(with: FakeTransport.reply(200)) {}
        XCTAssertEqual(report?.sessionsEnded, 4)
        XCTAssertEqual(outcome(sessions[0])?.word, "failed")
    }

    func testAProbeCutOffByTheBudgetLeavesTheParkedCallsNotStartedAtOnce() throws {
        let sessions = try parkBehindAProbe(budget: .seconds(3)) {
            try advance(.milliseconds(2_700))
            transport.complete(with: FakeTransport.failure(.timeout))  // its timeout was the budget's rest
        }
        let report = try XCTUnwrap(report, "finished at 2.85 s, not at the budget's end")
        XCTAssertEqual(outcome(sessions[0]), .expired)
        XCTAssertEqual(report.callCounts, ["expired": 1, "not-started": 4])
        XCTAssertNil(report.expiry)
    }

    func testAProbeThatGivesUpOnARetryableStatusReleasesTheParkedCalls() throws {
        _ = try parkBehindAProbe(maxAttempts: 2) { transport.complete(with: FakeTransport.reply(503, "")) }
        while transport.complete(with: FakeTransport.reply(200)) {}
        XCTAssertEqual(report?.sessionsEnded, 4)
    }

    func testBudgetExpiryCancelsInFlightAndRecordsEveryCall() throws {
        let sessions = (0..<6).map { session("hang-\($0)") }
        begin(makeRun(sessions, budget: .seconds(3), maxConcurrent: 2))
        XCTAssertEqual(transport.pending.count, 2)
        try advance(.seconds(3))
        let report = try XCTUnwrap(report)
        XCTAssertEqual(report.expiry, .timeUp)
        XCTAssertEqual(report.callCounts, ["expired": 2, "not-started": 4])
        XCTAssertEqual(transport.cancelled.count, 2)
        XCTAssertEqual(transport.pending.count, 0)
        XCTAssertEqual(journal.entries(event: "expired").count, 1)
    }

    func testATimeoutCappedByTheBudgetBeforeTheRequestWasSentIsExpired() throws {
        let capped = session("capped", ["auth"])
        begin(makeRun([capped], endpoints: [endpoint("auth")], budget: .seconds(3)))
        transport.complete(with: FakeTransport.failure(.timeout))
        XCTAssertEqual(outcome(capped), .expired, "20 s endpoint timeout capped to the 3 s budget")
        XCTAssertEqual(report?.calls.first?.attempts, 0, "never sent: not an attempt")
    }

    /// Before issue 25, a request that timed out was sent again while the server still worked
    /// on the first: a CPU-bound server did the work twice (336 requests for 200 calls).
    func testARequestSentAndNotAnsweredIsUnconfirmedAndNeverSentAgain() throws {
        var short = endpoint("auth")
        short.timeout = .seconds(1)
        for kind in [TransportFailure.Kind.timeout, .sendReceive] {
            report = nil
            let before = transport.started.count
            let own = session("own-\(kind)", ["auth"])
            begin(makeRun([own], endpoints: [short], budget: .seconds(30), maxAttempts: 3))
            transport.complete(with: FakeTransport.failure(kind, requestSent: true))
            try advance(.seconds(5))
            XCTAssertEqual(transport.started.count - before, 1, "\(kind): one request, not sent again")
            XCTAssertEqual(outcome(own)?.word, "unconfirmed", "\(kind)")
            XCTAssertEqual(report?.callCounts, ["unconfirmed": 1])
        }
    }

    func testARequestPastItsTimeoutIsAbandonedOnlyWhileItsOriginAnswersNothing() throws {
        var short = endpoint("auth")
        short.timeout = .seconds(1)
        let sessions = (0..<3).map { session("slow-\($0)") }
        begin(makeRun(sessions, endpoints: [short], budget: .seconds(10)))
        transport.pendingRequestsSent = true
        XCTAssertGreaterThan(transport.started.first?.timeout ?? .zero, .seconds(9), "the budget's rest")
        try advance(.milliseconds(500))
        transport.complete(with: FakeTransport.reply(200))  // the origin is working
        try advance(.milliseconds(750))  // 1.25 s: past the 1 s timeout, the origin answered 0.75 s ago
        XCTAssertEqual(transport.pending.count, 2, "given the time that remains")
        try advance(.milliseconds(500))  // 1.75 s: silent for 1.25 s
        XCTAssertEqual(transport.pending.count, 0)
        XCTAssertEqual(report?.callCounts, ["ended": 1, "unconfirmed": 2])
        XCTAssertEqual(transport.started.count, 3, "not sent again")
        XCTAssertTrue(outcome(sessions[1])?.cause?.contains("answered nothing else") ?? false)
    }

    func testARequestTheServersTCPNeverAcknowledgedGoesAgainOnANewConnectionAsNoAttempt() throws {
        let sessions = [session("stuck"), session("fine")]
        begin(makeRun(sessions, budget: .seconds(10), maxAttempts: 1))
        transport.pendingRequestsSent = true
        let stuck = try XCTUnwrap(transport.pending.first?.id)
        transport.unacknowledged = [stuck]
        try advance(.milliseconds(250))
        XCTAssertEqual(transport.started.count, 2, "not before it ran 0.5 s")
        try advance(.milliseconds(500))
        XCTAssertEqual(transport.cancelled, [stuck])
        XCTAssertEqual(transport.started.count, 2, "the limit cut to the 1 request the server took")
        transport.complete(with: FakeTransport.reply(200))
        XCTAssertEqual(transport.started.count, 3, "sent again, though MaxAttempts=1")
        XCTAssertEqual(transport.started[2].url, transport.started[0].url)
        while transport.complete(with: FakeTransport.reply(200)) {}
        XCTAssertEqual(report?.callCounts, ["ended": 2])
        XCTAssertEqual(report?.calls.first { $0.sessionID == sessions[0].id }?.attempts, 1, "the server got it once")
    }

    func testAnAdaptiveOriginStartsAtItsShareAndIsCutByWhatTheServerSays() throws {
        let sessions = (0..<100).map { session("s\($0)") }
        begin(makeRun(sessions, maxConcurrent: 50))
        XCTAssertEqual(transport.pending.count, 50, "its share, as fixed")
        transport.complete(with: FakeTransport.reply(200))
        transport.complete(with: FakeTransport.reply(503))
        XCTAssertEqual(transport.started.count, 51, "halved to 25: no call starts while 48 are in flight")
        for _ in 0..<24 { transport.complete(with: FakeTransport.reply(200)) }
        XCTAssertEqual(transport.pending.count, 25, "room again below 25")
        for _ in 0..<20 {
            while transport.complete(with: FakeTransport.reply(200)) {}
            try advance(.milliseconds(200))
        }
        XCTAssertEqual(report?.callCounts, ["ended": 100])
        // Say why: the report and the journal give the origin's limit and its cuts.
        let origin = try XCTUnwrap(report?.origins.first)
        XCTAssertEqual(origin.origin, "http://127.0.0.1:8080")
        XCTAssertEqual(origin.highestLimit, 50)
        XCTAssertEqual(origin.overloaded, 1)
        XCTAssertEqual(origin.timeouts + origin.refused + origin.resets + origin.unacknowledged, 0)
        XCTAssertNotNil(origin.medianLatency)
        let entry = try XCTUnwrap(journal.entries(event: "origin-limit").first)
        XCTAssertEqual(entry.value(of: .cutsOverloaded), "1")
        XCTAssertEqual(entry.value(of: .limitHighest), "50")
        XCTAssertTrue(entry.message.contains("1 503/429 replies"), entry.message)
    }

    func testSYNsLostAtAFullAcceptQueueGoAgainAndCutTheLimitToWhatTheServerTook() throws {
        let sessions = (0..<20).map { session("q\($0)") }
        begin(makeRun(sessions, maxConcurrent: 10, maxAttempts: 1))
        transport.complete(with: FakeTransport.reply(200))  // 5 ms on a new connection: connect timeout 250 ms
        let stuck = Set(transport.pending.suffix(6).map(\.id))
        transport.connecting = stuck
        try advance(.milliseconds(250))
        XCTAssertEqual(Set(transport.cancelled), stuck)
        XCTAssertEqual(transport.pending.count, 4, "cut to the 4 the server took")
        XCTAssertNil(report)
        for _ in 0..<20 {
            while transport.complete(with: FakeTransport.reply(200)) {}
            try advance(.milliseconds(250))
        }
        XCTAssertEqual(report?.callCounts, ["ended": 20], "as no attempt, though MaxAttempts=1")
        XCTAssertEqual(report?.origins.first?.unacknowledged, 6)
    }

    func testAFirstWaveWhoseSYNsWereAllDroppedIsCutBeforeTheKernelSendsThemAgain() throws {
        // A fleet's daemon whose whole first wave the server's full accept queue dropped: no
        // answer, so no connect timeout known; the kernel would send all 10 SYNs again at 1 s.
        let sessions = (0..<10).map { session("w\($0)") }
        begin(makeRun(sessions, maxConcurrent: 10, maxAttempts: 1))
        transport.connecting = Set(transport.pending.map(\.id))
        try advance(.milliseconds(500))
        XCTAssertEqual(transport.cancelled.count, 0, "a SYN may wait 600 ms")
        try advance(.milliseconds(250))
        XCTAssertEqual(transport.cancelled.count, 10, "before the kernel's retransmission at 1 s")
        XCTAssertEqual(transport.pending.count, 1, "the limit cut to 1: the server took none")
        while transport.complete(with: FakeTransport.reply(200)) {
            try advance(.milliseconds(10))
        }
        XCTAssertEqual(report?.callCounts, ["ended": 10], "as no attempt, though MaxAttempts=1")
        XCTAssertEqual(report?.origins.first?.unacknowledged, 10)
    }

    func testACallsSYNCountsAsLostAtMostThreeTimesThenWaitsForTheKernel() throws {
        let sessions = [session("far")]
        begin(makeRun(sessions, budget: .seconds(20)))
        transport.allConnecting = true  // a server farther than 600 ms, or one that takes nothing
        for _ in 0..<24 { try advance(.milliseconds(250)) }
        XCTAssertEqual(transport.started.count, 4, "the first request and 3 new handshakes, then the kernel's")
        XCTAssertEqual(transport.pending.count, 1)
        XCTAssertNil(report)
    }

    func testAConnectLostAtAFullAcceptQueueIsTriedAgainAtOnceOnANewConnection() throws {
        let sessions = (0..<5).map { session("c\($0)") }
        var small = endpoint("auth")
        small.maxConnectionsPerHost = 4
        begin(makeRun(sessions, endpoints: [small], maxConcurrent: 256, maxAttempts: 1))
        XCTAssertNil(transport.started[0].connectTimeout, "no latency known yet: the kernel's own")
        transport.complete(with: FakeTransport.reply(200))  // 5 ms on a new connection
        let next = try XCTUnwrap(transport.pending.last)
        XCTAssertEqual(next.request.connectTimeout, .milliseconds(250), "4 × 5 ms, at least 250 ms")
        let before = transport.started.count
        XCTAssertTrue(transport.complete(matching: next.request.url, with: FakeTransport.failure(.timeout)))
        XCTAssertEqual(transport.started.count, before, "halved to 2: it waits while 3 are in flight")
        transport.complete(with: FakeTransport.reply(200))
        transport.complete(with: FakeTransport.reply(200))
        XCTAssertEqual(transport.started.count, before + 1, "again, though MaxAttempts=1")
        XCTAssertEqual(transport.started.last?.url, next.request.url)
        while transport.complete(with: FakeTransport.reply(200)) {}
        XCTAssertEqual(report?.callCounts, ["ended": 5])
        XCTAssertEqual(report?.origins.first?.timeouts, 1, "and it cut the limit")
    }

    func testAFixedOriginGetsItsShareAtOnce() throws {
        var fixed = endpoint("auth")
        fixed.concurrency = .fixed
        begin(makeRun((0..<100).map { session("s\($0)") }, endpoints: [fixed], maxConcurrent: 256))
        XCTAssertEqual(transport.pending.count, 100)
        while transport.complete(with: FakeTransport.reply(200)) {}
        XCTAssertEqual(report?.origins, [], "no adaptive limit to report")
        XCTAssertTrue(journal.entries(event: "origin-limit").isEmpty)
    }

    func testARequestStillWaitingForAConnectionIsNotAbandonedAtItsTimeout() throws {
        var short = endpoint("auth")
        short.timeout = .seconds(1)
        begin(makeRun([session("waiting")], endpoints: [short], budget: .seconds(10)))
        try advance(.milliseconds(1_500))
        XCTAssertEqual(transport.pending.count, 1, "never sent: it keeps waiting")
        transport.complete(with: FakeTransport.reply(200))
        XCTAssertEqual(report?.callCounts, ["ended": 1])
    }

    func testBudgetExpiryRecordsCallsWhoseRequestWasSentAsUnconfirmed() throws {
        let sessions = (0..<4).map { session("hang-\($0)") }
        begin(makeRun(sessions, budget: .seconds(3), maxConcurrent: 2))
        transport.pendingRequestsSent = true
        try advance(.seconds(3))
        let report = try XCTUnwrap(report)
        XCTAssertEqual(report.callCounts, ["unconfirmed": 2, "not-started": 2])
        XCTAssertEqual(outcome(sessions[0])?.word, "unconfirmed")
        XCTAssertEqual(journal.entries(event: "call-finished").count { $0.value(of: .outcome) == "unconfirmed" }, 2)
    }

    /// Abandoning a run used to forget the endpoints that had already ended a session, so the
    /// stop run called them again.
    func testAbandonReportsTheEndpointsThatAlreadyEndedUnfinishedSessions() throws {
        let partly = session("partly", ["auth", "licence"])
        let untouched = session("untouched", ["auth"])
        let run = makeRun(
            [partly, untouched], endpoints: [endpoint("auth"), endpoint("licence", host: "127.0.0.1:9090")],
            maxConcurrent: 2)
        begin(run)
        XCTAssertTrue(transport.complete(matching: "8080/user/partly", with: FakeTransport.reply(200)))
        let results = run.abandon()
        XCTAssertEqual(results.map(\.id), [partly.id, untouched.id])
        XCTAssertEqual(results.first?.endedEndpoints, ["auth"])
        XCTAssertEqual(results.first?.ended, false)
        XCTAssertEqual(results.first?.attempts, 2, "the ended call and the cancelled one")
        XCTAssertEqual(results.last?.endedEndpoints, [])
        XCTAssertNil(report, "an abandoned run reports nothing")
        XCTAssertEqual(run.abandon().count, 0, "once")
    }

    func testSecondSignalExpiresTheRunAtOnce() throws {
        let run = makeRun([session("hang")])
        begin(run)
        run.budget.expire(reason: .secondSignal)
        XCTAssertEqual(report?.expiry, .secondSignal)
        XCTAssertEqual(report?.callCounts, ["expired": 1])
    }

    func testNoRequestStartsWithLessThanTheMinimumLeft() throws {
        let first = session("slow")
        let second = session("later")
        begin(makeRun([first, second], budget: .seconds(3), maxConcurrent: 1))
        try advance(.milliseconds(2_500))
        transport.complete(with: FakeTransport.reply(200))
        XCTAssertEqual(outcome(first), .ended(status: 200))
        XCTAssertEqual(outcome(second)?.word, "not-started")
        XCTAssertEqual(transport.started.count, 1)
    }

    func testRequestTimeoutIsCappedByTheTimeRemaining() throws {
        begin(makeRun([session("a"), session("b")], budget: .seconds(5), maxConcurrent: 1))
        XCTAssertEqual(transport.started.first?.timeout, .seconds(5) - .milliseconds(50))
        try advance(.seconds(2))
        transport.complete(with: FakeTransport.reply(200))
        XCTAssertEqual(transport.started.last?.timeout, .seconds(3) - .milliseconds(50))
    }

    func testUnconfiguredEndpointIsAFailedCallNotAHang() throws {
        let lost = session("x", ["gone-endpoint"])
        begin(makeRun([lost]))
        XCTAssertEqual(outcome(lost, "gone-endpoint"), .failed(cause: "endpoint 'gone-endpoint' is not configured"))
    }

    func testJournalEntriesCarryTheFieldsButNeverTheKey() throws {
        let secret = "ok-TOPSECRET-key"
        let refused = "no-TOPSECRET-key"
        let run = makeRun([session(secret), session(refused)])
        begin(run)
        transport.complete(matching: "ok-", with: FakeTransport.reply(200))
        transport.complete(matching: "no-", with: FakeTransport.reply(403))
        let ended = try XCTUnwrap(journal.entries(event: "calls-ended").first)
        XCTAssertEqual(ended.value(of: .outcome), "ended")
        XCTAssertEqual(ended.value(of: .httpStatus), "200")
        XCTAssertEqual(ended.value(of: .calls), "1")
        XCTAssertEqual(ended.values(of: .sessionID).count, 1)
        let rejected = try XCTUnwrap(journal.entries(event: "call-finished").first)
        XCTAssertEqual(rejected.value(of: .outcome), "rejected")
        XCTAssertEqual(rejected.value(of: .httpStatus), "403")
        XCTAssertEqual(rejected.value(of: .attempts), "1")
        XCTAssertEqual(rejected.value(of: .url), "http://127.0.0.1:8080/user/<redacted>/endsession")
        XCTAssertEqual(rejected.priority, .warning)
        XCTAssertNotNil(rejected.value(of: .sessionID))
        for entry in journal.entries {
            XCTAssertFalse("\(entry)".contains("TOPSECRET"))
            XCTAssertEqual(entry.value(of: .runID), run.id.description, "every entry of the run carries its id")
        }
        XCTAssertTrue(transport.started.first?.url.contains(secret) ?? false, "the request itself carries the key")
    }
}
