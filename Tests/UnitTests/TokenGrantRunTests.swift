import XCTest

@testable import Configuration
@testable import Endpoints
@testable import EventLoop
@testable import Journal
@testable import Runs
@testable import Sessions
@testable import TestSupport
@testable import Vocabulary

/// A run's calls to endpoints with `TokenURL=`: one grant, the calls waiting for it, its failure
/// failing them at once, one fresh token and one retry on a 401, the cache shared across runs.
final class TokenGrantRunTests: XCTestCase {
    private let clock = ManualClock()
    private var loop: EventLoop!
    private let transport = FakeTransport()
    private let journal = MemoryJournal()
    private var reports: [RunReport] = []
    private var runs: [CleanupRun] = []
    private let token = "tok-5ecret-value"

    override func setUpWithError() throws {
        loop = try EventLoop(clock: clock)
    }

    private func endpoint(_ name: String, scope: String? = "revoke") -> EndpointConfiguration {
        var endpoint = EndpointConfiguration(name: name, url: "http://127.0.0.1:8080/\(name)/{session}/endsession")
        endpoint.clientCredential = "idp-client"
        endpoint.tokenURL = "http://127.0.0.1:8081/token"
        endpoint.tokenScope = scope
        endpoint.timeout = .seconds(2)
        return endpoint
    }

    private func session(_ key: String, _ endpoints: [String] = ["a"]) -> Session {
        Session(id: .random(), key: SessionKey(key), endpoints: endpoints, ownerUID: 0, registeredAt: 0)
    }

    @discardableResult
    private func begin(
        _ sessions: [Session], endpoints: [EndpointConfiguration]? = nil, cache: TokenCache? = nil,
        budget: Duration = .seconds(10), maxConcurrent: Int = 8
    ) -> CleanupRun {
        var stop = StopSettings()
        stop.maxConcurrentRequests = maxConcurrent
        stop.maxAttempts = 1
        let run = CleanupRun(
            kind: .stop, sessions: sessions, endpoints: endpoints ?? [endpoint("a")],
            tokens: ["idp-client": "daemon:client-s3cret"], tokenCache: cache,
            budget: StopBudget(total: budget, minimumRequest: .milliseconds(100), clock: clock),
            settings: CleanupRun.Settings(stop), transport: transport, loop: loop, journal: journal)
        runs.append(run)
        run.begin { [unowned self] report in self.reports.append(report) }
        return run
    }

    private func grantReply(_ token: String, expiresIn: Int = 300) -> HTTPResult {
        FakeTransport.reply(200, #"{"access_token":"\#(token)","token_type":"Bearer","expires_in":\#(expiresIn)}"#)
    }

    private var grantsStarted: Int { transport.started.filter { $0.url.hasSuffix("/token") }.count }

    private func outcomes(_ report: RunReport?) -> [String] { report?.calls.map(\.outcome.word) ?? [] }

    /// No entry of the journal shows the token or the client's secret.
    private func assertNoSecretJournaled(file: StaticString = #filePath, line: UInt = #line) {
        for entry in journal.entries {
            let text = entry.message + " " + entry.fields.map(\.value).joined(separator: " ")
            XCTAssertFalse(text.contains("5ecret"), "journaled: \(text)", file: file, line: line)
            XCTAssertFalse(text.contains("s3cret"), "journaled: \(text)", file: file, line: line)
        }
    }

    func testTheCallsWaitForOneGrantAndThenCarryItsTokenAsBearer() throws {
        let sessions = [session("k1", ["a", "b"]), session("k2", ["a"]), session("k3", ["b"])]
        begin(sessions, endpoints: [endpoint("a"), endpoint("b")])
        XCTAssertEqual(transport.started.count, 1, "only the grant goes out first")
        XCTAssertEqual(grantsStarted, 1, "endpoints with the same token URL, client and scope share one grant")
        XCTAssertTrue(transport.complete(matching: "/token", with: grantReply(token)))
        XCTAssertEqual(transport.pending.count, 4, "every call released at once")
        XCTAssertTrue(transport.pending.allSatisfy { $0.request.headers == ["Authorization: Bearer \(token)"] })
        while transport.complete(with: FakeTransport.reply(200)) {}
        XCTAssertEqual(outcomes(reports.first), ["ended", "ended", "ended", "ended"])
        XCTAssertEqual(grantsStarted, 1)
        let obtained = journal.entries(event: "token-obtained")
        XCTAssertEqual(obtained.count, 1)
        XCTAssertTrue(obtained.first?.message.contains("http://127.0.0.1:8081 for scope revoke") ?? false)
        XCTAssertTrue(obtained.first?.message.contains("valid 5 min") ?? false, obtained.first?.message ?? "")
        assertNoSecretJournaled()
    }

    func testAFailedGrantFailsEveryWaitingCallAtOnceWithTheCause() throws {
        let sessions = (1...5).map { session("k\($0)") }
        begin(sessions, maxConcurrent: 2)
        XCTAssertTrue(
            transport.complete(matching: "/token", with: FakeTransport.reply(401, #"{"error":"invalid_client"}"#)))
        XCTAssertEqual(reports.count, 1, "the run is over without a call made")
        XCTAssertEqual(transport.started.count, 1, "no call went out")
        let causes = Set(reports.first?.calls.compactMap(\.outcome.cause) ?? [])
        XCTAssertEqual(causes, ["token-failed: 401 from http://127.0.0.1:8081 (invalid_client)"])
        XCTAssertEqual(outcomes(reports.first), Array(repeating: "failed", count: 5))
        let failed = journal.entries(event: "token-failed")
        XCTAssertEqual(failed.count, 1, "one entry for the grant, not one per call")
        XCTAssertEqual(
            failed.first?.fields.first { $0.name == .callsWaiting }?.value, "2",
            "calls waiting for a token count as in flight: two waited, the other three were refused after")
        assertNoSecretJournaled()
    }

    func testA401FromTheEndpointGetsOneFreshTokenAndOneRetryNotMore() throws {
        let keep = session("k1")
        begin([keep])
        XCTAssertTrue(transport.complete(matching: "/token", with: grantReply("tok-5ecret-old")))
        XCTAssertTrue(transport.complete(matching: "/a/", with: FakeTransport.reply(401, "{}")))
        XCTAssertEqual(grantsStarted, 2, "the refused token was dropped: a fresh grant")
        XCTAssertTrue(transport.complete(matching: "/token", with: grantReply(token)))
        XCTAssertEqual(transport.pending.first?.request.headers, ["Authorization: Bearer \(token)"])
        XCTAssertTrue(transport.complete(matching: "/a/", with: FakeTransport.reply(401, "{}")))
        XCTAssertEqual(grantsStarted, 2, "a second 401 is the endpoint's answer")
        XCTAssertEqual(outcomes(reports.first), ["rejected"])
        XCTAssertEqual(reports.first?.calls.first?.attempts, 2)
        assertNoSecretJournaled()
    }

    func testAfterAFailedGrantTheRunsLaterCallsFailWithItWithoutAnotherGrant() throws {
        begin([session("k1"), session("k2")])
        XCTAssertTrue(transport.complete(matching: "/token", with: grantReply("tok-5ecret-old")))
        XCTAssertTrue(transport.complete(matching: "/a/", with: FakeTransport.reply(401, "{}")))
        XCTAssertTrue(transport.complete(matching: "/token", with: FakeTransport.reply(503, "")))
        XCTAssertTrue(transport.complete(matching: "/a/", with: FakeTransport.reply(401, "{}")))
        XCTAssertEqual(grantsStarted, 2, "the failed source is not asked again in this run")
        XCTAssertEqual(
            reports.first?.calls.map { $0.outcome.cause ?? "" },
            Array(repeating: "token-failed: 503 from http://127.0.0.1:8081", count: 2))
    }

    func testCallsAnswered401TogetherShareOneFreshGrant() throws {
        begin([session("k1"), session("k2"), session("k3")])
        XCTAssertTrue(transport.complete(matching: "/token", with: grantReply("tok-5ecret-old")))
        for _ in 0..<3 { XCTAssertTrue(transport.complete(matching: "/a/", with: FakeTransport.reply(401, "{}"))) }
        XCTAssertEqual(grantsStarted, 2)
        XCTAssertTrue(transport.complete(matching: "/token", with: grantReply(token)))
        while transport.complete(with: FakeTransport.reply(200)) {}
        XCTAssertEqual(outcomes(reports.first), ["ended", "ended", "ended"])
    }

    func testTheTokenIsSharedByTheRunsOfOneCacheUntilItExpires() throws {
        let cache = TokenCache(clock: loop.clock)
        begin([session("k1")], cache: cache)
        XCTAssertTrue(transport.complete(matching: "/token", with: grantReply(token, expiresIn: 60)))
        XCTAssertTrue(transport.complete(with: FakeTransport.reply(200)))
        begin([session("k2")], cache: cache)
        XCTAssertEqual(grantsStarted, 1, "the next run uses the cached token")
        XCTAssertTrue(transport.complete(with: FakeTransport.reply(200)))
        clock.advance(.seconds(31))
        begin([session("k3")], cache: cache)
        XCTAssertEqual(grantsStarted, 2, "60 s less the 30 s margin: a fresh grant")
        XCTAssertTrue(transport.complete(matching: "/token", with: grantReply(token)))
        XCTAssertTrue(transport.complete(with: FakeTransport.reply(200)))
        XCTAssertEqual(reports.flatMap { outcomes($0) }, ["ended", "ended", "ended"])
    }

    func testADifferentScopeIsADifferentGrant() throws {
        begin([session("k1", ["a", "b"])], endpoints: [endpoint("a"), endpoint("b", scope: "admin")])
        XCTAssertEqual(grantsStarted, 2)
    }

    func testAGrantTimingOutOnItsOwnTimeoutFailsTheCallsButOneCutByTheBudgetLeavesThemNotStarted() throws {
        begin([session("k1")])
        XCTAssertEqual(transport.started.first?.timeout, .seconds(2), "the endpoint's TimeoutSec=")
        XCTAssertTrue(transport.complete(matching: "/token", with: FakeTransport.failure(.timeout)))
        XCTAssertTrue(reports.last?.calls.first?.outcome.cause?.contains("did not answer in time") ?? false)
        begin([session("k2")], budget: .milliseconds(1500))
        XCTAssertLessThan(transport.started.last?.timeout ?? .zero, .seconds(2), "capped by the budget")
        XCTAssertTrue(transport.complete(matching: "/token", with: FakeTransport.failure(.timeout)))
        XCTAssertEqual(outcomes(reports.last), ["not-started"])
    }

    func testTheBudgetExpiringDuringTheGrantCancelsItAndTheCallsAreNotStarted() throws {
        let run = begin([session("k1"), session("k2")])
        _ = run.budget.expire(reason: .secondSignal)
        XCTAssertEqual(transport.cancelled.count, 1, "the grant was cancelled")
        XCTAssertEqual(outcomes(reports.first), ["not-started", "not-started"])
        XCTAssertTrue(journal.entries(event: "token-failed").isEmpty, "a cancelled grant is no failure")
    }

    func testAnUnreachableTokenEndpointFailsTheCallsAsAnUnreachableHostDoes() throws {
        begin([session("k1")])
        XCTAssertTrue(transport.complete(matching: "/token", with: FakeTransport.failure(.connect)))
        XCTAssertTrue(
            reports.first?.calls.first?.outcome.cause?.hasPrefix("token-failed: http://127.0.0.1:8081 unreachable")
                ?? false)
    }
}
