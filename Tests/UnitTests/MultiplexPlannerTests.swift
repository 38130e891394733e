import XCTest

@testable import HTTPEngine

final class MultiplexPlannerTests: XCTestCase {
    func testPlainHTTPIsNeverHeldOrWaiting() {
        var planner = MultiplexPlanner(streamsPerConnection: 100)
        XCTAssertFalse(planner.handing(1, origin: 0, mayMultiplex: false, running: 1))
        XCTAssertNil(planner.limit(0))
        XCTAssertTrue(planner.awaited.isEmpty)
    }

    func testTheFirstTransferProbesAloneUntilItsReplyTellsTheVersion() {
        var planner = MultiplexPlanner(streamsPerConnection: 100)
        XCTAssertFalse(planner.handing(1, origin: 0, mayMultiplex: true, running: 1), "the probe opens a connection")
        XCTAssertEqual(planner.limit(0), 1)
        XCTAssertEqual(planner.awaited, [0: 1])
        planner.connected(1, origin: 0, opened: true)
        XCTAssertEqual(planner.limit(0), 1, "a connection alone does not tell the version")
    }

    func testAnOriginKnownToAnswerInHTTP1IsNotProbed() {
        var planner = MultiplexPlanner(streamsPerConnection: 100)
        planner.assumeHTTP1(0)
        XCTAssertFalse(planner.handing(1, origin: 0, mayMultiplex: true, running: 1), "no waiting")
        XCTAssertFalse(planner.isProbe(1, of: 0), "no probe")
        XCTAssertNil(planner.limit(0), "no limit: every transfer may start at once")
        XCTAssertTrue(planner.awaited.isEmpty)
        // Met already, an origin keeps what it told: the hint does not overrule it.
        _ = planner.handing(2, origin: 1, mayMultiplex: true, running: 1)
        planner.assumeHTTP1(1)
        XCTAssertTrue(planner.isProbe(2, of: 1))
        XCTAssertEqual(planner.limit(1), 1)
    }

    func testAKnownHTTP1OriginThatAnswersInHTTP2SharesTheConnectionsItOpened() {
        var planner = MultiplexPlanner(streamsPerConnection: 100)
        planner.assumeHTTP1(0)
        for tag in 1...3 { XCTAssertFalse(planner.handing(UInt64(tag), origin: 0, mayMultiplex: true, running: tag)) }
        planner.finished(1, origin: 0, version: "1.1", opened: true, running: 3)
        XCTAssertNil(planner.limit(0), "a reply in HTTP/1.1 confirms it")
        planner.finished(2, origin: 0, version: "2", opened: true, running: 2)
        XCTAssertEqual(planner.limit(0), 201, "two connections up, each with 100 streams, plus an opener")
        XCTAssertTrue(planner.handing(4, origin: 0, mayMultiplex: true, running: 2), "the next one shares")
        // A probed origin that said HTTP/1.1 stays so (no flip on a stray reply).
        _ = planner.handing(5, origin: 1, mayMultiplex: true, running: 1)
        planner.finished(5, origin: 1, version: "1.1", opened: true)
        planner.finished(6, origin: 1, version: "2", opened: true, running: 1)
        XCTAssertNil(planner.limit(1))
    }

    func testTheProbesALPNTellsTheVersionBeforeItsReply() {
        var planner = MultiplexPlanner(streamsPerConnection: 100)
        _ = planner.handing(1, origin: 0, mayMultiplex: true, running: 1)
        _ = planner.handing(2, origin: 1, mayMultiplex: true, running: 1)
        XCTAssertTrue(planner.isProbe(1, of: 0))
        XCTAssertFalse(planner.isProbe(2, of: 0), "another origin's probe")
        planner.probeConnected(1, origin: 0, http2: false)
        XCTAssertNil(planner.limit(0), "HTTP/1.1 by ALPN: no limit from then on")
        XCTAssertFalse(planner.isProbe(1, of: 0))
        XCTAssertFalse(planner.handing(3, origin: 0, mayMultiplex: true, running: 2), "and no waiting")
        planner.probeConnected(2, origin: 1, http2: true)
        XCTAssertEqual(planner.limit(1), 101, "HTTP/2 by ALPN: the probe's connection's streams plus one opener")
        XCTAssertEqual(planner.awaited, [:])
        // Its reply comes later and changes nothing.
        planner.finished(2, origin: 1, version: "2", opened: true)
        XCTAssertEqual(planner.limit(1), 101)
        planner.finished(1, origin: 0, version: "1.1", opened: true)
        XCTAssertNil(planner.limit(0))
    }

    func testAProbeConnectedAgainOrAnotherTransferConnectedChangesNothing() {
        var planner = MultiplexPlanner(streamsPerConnection: 100)
        _ = planner.handing(1, origin: 0, mayMultiplex: true, running: 1)
        planner.probeConnected(9, origin: 0, http2: false)
        XCTAssertEqual(planner.limit(0), 1, "not the probe")
        planner.probeConnected(1, origin: 0, http2: true)
        planner.probeConnected(1, origin: 0, http2: false)
        XCTAssertEqual(planner.limit(0), 101, "told once")
    }

    func testAnHTTP2ReplyOpensFurtherConnectionsOneAtATime() {
        var planner = MultiplexPlanner(streamsPerConnection: 100)
        _ = planner.handing(1, origin: 0, mayMultiplex: true, running: 1)
        planner.finished(1, origin: 0, version: "2", opened: true)
        XCTAssertEqual(planner.limit(0), 101, "one connection's streams plus one opener")
        XCTAssertTrue(planner.handing(2, origin: 0, mayMultiplex: true, running: 100))
        XCTAssertTrue(planner.awaited.isEmpty, "it fits on the open connection")
        XCTAssertTrue(planner.handing(3, origin: 0, mayMultiplex: true, running: 101))
        XCTAssertEqual(planner.awaited, [0: 3], "the 101st opens the next connection")
        XCTAssertEqual(planner.limit(0), 101, "nobody else starts until that connection is up")
        planner.connected(3, origin: 0, opened: true)
        XCTAssertEqual(planner.limit(0), 201)
        XCTAssertTrue(planner.handing(4, origin: 0, mayMultiplex: true, running: 201))
        planner.connected(4, origin: 0, opened: false)
        XCTAssertEqual(planner.limit(0), 201, "an opener libcurl put on an open connection adds no streams")
    }

    func testAnOpenerThatFailsBeforeItsConnectionLeavesTheCountAsItWas() {
        var planner = MultiplexPlanner(streamsPerConnection: 10)
        _ = planner.handing(1, origin: 0, mayMultiplex: true, running: 1)
        planner.finished(1, origin: 0, version: "2", opened: true)
        _ = planner.handing(2, origin: 0, mayMultiplex: true, running: 11)
        planner.finished(2, origin: 0, version: nil, opened: false)
        XCTAssertEqual(planner.limit(0), 11)
        XCTAssertTrue(planner.awaited.isEmpty)
    }

    func testAnHTTP1ReplyLiftsEveryLimitAndWaitingStops() {
        var planner = MultiplexPlanner(streamsPerConnection: 100)
        _ = planner.handing(1, origin: 0, mayMultiplex: true, running: 1)
        planner.finished(1, origin: 0, version: "1.1", opened: true)
        XCTAssertNil(planner.limit(0))
        XCTAssertFalse(planner.handing(2, origin: 0, mayMultiplex: true, running: 50))
    }

    func testAProbeThatFailsBeforeItsConnectionDoesNotHoldTheOthersAgain() {
        var planner = MultiplexPlanner(streamsPerConnection: 100)
        _ = planner.handing(1, origin: 0, mayMultiplex: true, running: 1)
        planner.finished(1, origin: 0, version: nil, opened: false)
        XCTAssertNil(planner.limit(0))
        XCTAssertFalse(planner.handing(2, origin: 0, mayMultiplex: true, running: 1))
        XCTAssertTrue(planner.awaited.isEmpty)
    }

    func testAProbeWithoutAReplyPinsNothingTheNextReplyTells() {
        var planner = MultiplexPlanner(streamsPerConnection: 10)
        _ = planner.handing(1, origin: 0, mayMultiplex: true, running: 1)
        planner.finished(1, origin: 0, version: nil, opened: false)
        XCTAssertNil(planner.limit(0), "meanwhile no limit: a server that does not answer is not called one at a time")
        for tag in 2...4 { XCTAssertFalse(planner.handing(UInt64(tag), origin: 0, mayMultiplex: true, running: 3)) }
        planner.finished(5, origin: 0, version: nil, opened: true, running: 3)
        XCTAssertNil(planner.limit(0), "another call without a reply tells nothing either")
        // The server answers now (in a later run, say), in HTTP/2: its connections are shared from then on.
        planner.finished(2, origin: 0, version: "2", opened: true, running: 3)
        XCTAssertEqual(planner.limit(0), 3 * 10 + 1)
        XCTAssertTrue(planner.handing(6, origin: 0, mayMultiplex: true, running: 3), "waits to share a connection")
        // Likewise an answer in HTTP/1.1 is what pins HTTP/1.1.
        _ = planner.handing(7, origin: 1, mayMultiplex: true, running: 1)
        planner.finished(7, origin: 1, version: nil, opened: false)
        planner.finished(8, origin: 1, version: "1.1", opened: true, running: 2)
        planner.finished(9, origin: 1, version: "2", opened: true, running: 2)
        XCTAssertNil(planner.limit(1), "pinned by the HTTP/1.1 answer")
    }
}
