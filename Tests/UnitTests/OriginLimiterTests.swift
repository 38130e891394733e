import XCTest

@testable import Runs

final class OriginLimiterTests: XCTestCase {
    /// One round: as many requests as the limit answered in `latency`, each replaced at once
    /// (the limit full: the others in flight as each completes).
    private func round(_ limiter: inout OriginLimiter, latency: Duration, reused: Bool = true) {
        for _ in 0..<limiter.limit {
            limiter.succeeded(latency: latency, reused: reused, inFlight: limiter.limit - 1)
        }
    }

    func testItStartsSmallAndDoublesPerRoundTripWhileRepliesStayFast() {
        var limiter = OriginLimiter(cap: 256, initial: 4)
        XCTAssertEqual(limiter.limit, 4)
        var limits: [Int] = []
        for _ in 0..<7 {
            round(&limiter, latency: .milliseconds(50))
            limits.append(limiter.limit)
        }
        XCTAssertEqual(limits, [8, 16, 32, 64, 128, 256, 256], "slow start, then the cap")
        XCTAssertEqual(limiter.summary.highest, 256)
    }

    func testWithoutAStartItStartsAtItsCap() {
        XCTAssertEqual(OriginLimiter(cap: 86).limit, 86, "the origin's share, as Concurrency=fixed")
    }

    func testConnectionsLostAtAFullAcceptQueueCutItToWhatTheServerTook() {
        var limiter = OriginLimiter(cap: 50)
        limiter.connectionsLost(44, inFlight: 50)
        XCTAssertEqual(limiter.limit, 6)
        XCTAssertEqual(limiter.summary.cuts[.unacknowledged], 44)
        limiter.connectionsLost(3, inFlight: 6)
        XCTAssertEqual(limiter.limit, 6, "once per round")
    }

    func testItNeverExceedsItsCapAndStartsBelowASmallOne() {
        var limiter = OriginLimiter(cap: 4, initial: 8)
        XCTAssertEqual(limiter.limit, 4)
        for _ in 0..<5 { round(&limiter, latency: .milliseconds(10)) }
        XCTAssertEqual(limiter.limit, 4)
        XCTAssertEqual(OriginLimiter(cap: 0, initial: 4).limit, 1, "at least 1")
    }

    func testAnUnusedLimitDoesNotGrow() {
        var limiter = OriginLimiter(cap: 256, initial: 4)
        for _ in 0..<20 { limiter.succeeded(latency: .milliseconds(50), reused: true, inFlight: 1) }
        XCTAssertEqual(limiter.limit, 4, "1 in flight says nothing of whether 5 would do")
    }

    func testRisingLatencyCutsToTheShareThatKeepsItWithinTwiceTheLowest() {
        // A CPU-bound server: latency grows with the requests in flight (0.125 s each).
        var limiter = OriginLimiter(cap: 256, initial: 4)
        limiter.succeeded(latency: .milliseconds(1_000), reused: false, inFlight: 8)
        limiter.succeeded(latency: .milliseconds(900), reused: true, inFlight: 8)
        for _ in 0..<40 {
            let inFlight = limiter.limit
            limiter.succeeded(latency: .milliseconds(125 * inFlight), reused: true, inFlight: inFlight)
        }
        XCTAssertLessThanOrEqual(limiter.limit, 16, "2 × 900 ms is 14-15 in flight")
        XCTAssertGreaterThanOrEqual(limiter.limit, 7)
        XCTAssertGreaterThan(limiter.summary.cuts[.latency] ?? 0, 0)
        XCTAssertEqual(limiter.summary.lowest, .milliseconds(750), "6 in flight, before it grew")
    }

    func testARoundIsSlowOnlyIfItsFastestReplyIs() {
        // 100 in flight at 50 ms; the client reads most replies late (a burst of TLS handshakes on
        // its thread), but a few come at 50 ms: the server is not queueing.
        var limiter = OriginLimiter(cap: 100)
        limiter.succeeded(latency: .milliseconds(50), reused: true, inFlight: 99)
        for index in 0..<99 {
            let latency: Duration = index % 10 == 0 ? .milliseconds(55) : .milliseconds(400)
            limiter.succeeded(latency: latency, reused: true, inFlight: 99)
        }
        XCTAssertNil(limiter.summary.cuts[.latency], "a round with a fast reply in it")
        XCTAssertEqual(limiter.limit, 100)
        // Every reply of the next round at 200 ms: the server queues them all.
        for _ in 0..<99 { limiter.succeeded(latency: .milliseconds(200), reused: true, inFlight: 99) }
        XCTAssertEqual(limiter.summary.cuts[.latency], 1, "one cut, at the round's end")
        XCTAssertEqual(limiter.limit, 50, "to limit × 2 × 50 / 200")
    }

    func testANewConnectionsHandshakeIsNoQueue() {
        // 50 ms round trips: a kept connection answers in 50 ms, a new TLS one in 150 ms.
        var limiter = OriginLimiter(cap: 256, initial: 4)
        limiter.succeeded(latency: .milliseconds(150), reused: false, inFlight: 8)
        for _ in 0..<7 { limiter.succeeded(latency: .milliseconds(50), reused: true, inFlight: 8) }
        limiter.succeeded(latency: .milliseconds(160), reused: false, inFlight: 9)
        XCTAssertNil(limiter.summary.cuts[.latency], "compared with new connections' lowest, not kept ones'")
        XCTAssertEqual(limiter.limit, 11)
    }

    func testLoopbackNoiseBelowTheFloorIsNoSignal() {
        var limiter = OriginLimiter(cap: 256, initial: 4)
        limiter.succeeded(latency: .microseconds(100), reused: true, inFlight: 1)
        limiter.succeeded(latency: .microseconds(900), reused: true, inFlight: 1)
        XCTAssertNil(limiter.summary.cuts[.latency])
        limiter.succeeded(latency: .milliseconds(1_100), reused: true, inFlight: 1)  // a SYN retransmitted
        XCTAssertEqual(limiter.summary.cuts[.latency], 1)
        XCTAssertEqual(limiter.limit, 2, "at most halved")
    }

    func testOverloadAndConnectionFailuresHalveItOncePerRound() {
        var limiter = OriginLimiter(cap: 256, initial: 4)
        for _ in 0..<4 { round(&limiter, latency: .milliseconds(20)) }
        XCTAssertEqual(limiter.limit, 64)
        // 64 in flight when the server overflowed: the other 63 saw the same moment.
        for inFlight in stride(from: 64, to: 40, by: -1) { limiter.failed(.overloaded, inFlight: inFlight) }
        XCTAssertEqual(limiter.limit, 32, "one cut for the round")
        XCTAssertEqual(limiter.summary.cuts[.overloaded], 24, "every signal counted")
        for inFlight in stride(from: 41, to: 0, by: -1) { limiter.failed(.refused, inFlight: inFlight) }
        XCTAssertEqual(limiter.limit, 16, "the next round's cut")
        for _ in 0..<10 { limiter.failed(.reset, inFlight: 1) }
        XCTAssertEqual(limiter.limit, 1, "the floor")
        for signal in [OriginLimiter.Signal.timeout, .unacknowledged] { limiter.failed(signal, inFlight: 1) }
        XCTAssertEqual(limiter.limit, 1)
        XCTAssertEqual(limiter.summary.cuts[.timeout], 1)
        XCTAssertEqual(limiter.summary.final, 1)
        XCTAssertEqual(limiter.summary.highest, 64)
    }

    func testAfterACutItGrowsByOnePerRound() {
        var limiter = OriginLimiter(cap: 256, initial: 4)
        for _ in 0..<3 { round(&limiter, latency: .milliseconds(20)) }
        limiter.failed(.overloaded, inFlight: 1)
        XCTAssertEqual(limiter.limit, 16)
        for _ in 0..<3 { round(&limiter, latency: .milliseconds(20)) }
        XCTAssertTrue(
            (17...19).contains(limiter.limit), "additive increase above the slow-start threshold: \(limiter.limit)")
    }

    func testTheMedianLatencyIsOfTheSuccesses() {
        var limiter = OriginLimiter(cap: 8, initial: 4)
        for ms in [30, 10, 20, 50, 40] { limiter.succeeded(latency: .milliseconds(ms), reused: true, inFlight: 1) }
        XCTAssertEqual(limiter.summary.median, .milliseconds(30))
        XCTAssertEqual(limiter.summary.lowest, .milliseconds(10))
        XCTAssertNil(OriginLimiter(cap: 8, initial: 4).summary.median)
    }
}
