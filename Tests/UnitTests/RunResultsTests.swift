import XCTest

@testable import Runs
@testable import Sessions
@testable import Vocabulary

final class RunResultsTests: XCTestCase {
    private func session(_ endpoints: [String]) -> Session {
        Session(id: .random(), key: SessionKey("key"), endpoints: endpoints, ownerUID: 7, registeredAt: 0)
    }

    private func results(_ sessions: [Session]) -> RunResults {
        RunResults(sessions: SessionList(sessions), report: RunReport(id: .random(), kind: .stop, budget: .seconds(10)))
    }

    func testASessionWithOneEndpointFinishesWithItsCall() throws {
        let sessions = [session(["a"])]
        var results = results(sessions)
        XCTAssertEqual(results.callsTotal, 1)
        let result = try XCTUnwrap(results.record(0, "a", .ended(status: 200), attempts: 2, duration: .seconds(1)))
        XCTAssertEqual(result.id, sessions[0].id)
        XCTAssertTrue(result.ended)
        XCTAssertEqual(result.endedEndpoints, ["a"])
        XCTAssertEqual(result.attempts, 2)
        XCTAssertEqual(results.callsLeft, 0)
        XCTAssertEqual(results.report.sessionsEnded, 1)
        XCTAssertEqual(results.report.calls.first?.ownerUID, 7)
    }

    func testASessionWithSeveralEndpointsFinishesWithItsLastCallAndKeepsTheOutcomeThatDidNotEndIt() throws {
        var results = results([session(["a", "b", "c"])])
        XCTAssertNil(results.record(0, "b", .ended(status: 200), attempts: 1, duration: .zero))
        XCTAssertNil(results.record(0, "a", .failed(cause: "refused"), attempts: 3, duration: .zero))
        let result = try XCTUnwrap(results.record(0, "c", .ended(status: 204), attempts: 1, duration: .zero))
        XCTAssertFalse(result.ended, "ended only when every endpoint ended it")
        XCTAssertEqual(result.endedEndpoints, ["b", "c"])
        XCTAssertEqual(result.outcome, .failed(cause: "refused"))
        XCTAssertEqual(result.attempts, 5)
        XCTAssertEqual(results.callsNotEnded, 1)
        XCTAssertEqual(results.report.sessionsLeft, 1)
        XCTAssertEqual(results.report.sessionsEnded, 0)
        XCTAssertEqual(results.report.calls.map(\.endpoint), ["b", "a", "c"], "one result per call, in order")
    }

    func testOfSeveralCallsThatDidNotEndASessionItsResultCarriesTheLastOne() throws {
        var results = results([session(["a", "b", "c"])])
        XCTAssertNil(results.record(0, "a", .failed(cause: "refused"), attempts: 3, duration: .zero))
        XCTAssertNil(results.record(0, "b", .rejected(status: 403, reason: "forbidden"), attempts: 1, duration: .zero))
        let result = try XCTUnwrap(results.record(0, "c", .ended(status: 200), attempts: 1, duration: .zero))
        XCTAssertEqual(result.outcome, .rejected(status: 403, reason: "forbidden"), "the last, not the first")
        XCTAssertEqual(results.callsNotEnded, 2)
    }

    func testAnAbandonedRunNamesTheEndpointsThatEndedUnfinishedSessionsAndTheirRequests() {
        let sessions = [session(["a", "b"]), session(["a"]), session(["a", "b"]), session(["a"])]
        var results = results(sessions)
        _ = results.record(0, "a", .ended(status: 200), attempts: 1, duration: .zero)
        _ = results.record(1, "a", .ended(status: 200), attempts: 1, duration: .zero)  // finished: not reported again
        let unfinished = results.unfinished(attemptsUnderWay: [0: 2, 2: 0, 3: 1])
        XCTAssertEqual(unfinished.map(\.id), [sessions[0].id, sessions[3].id], "session 2 had nothing done")
        XCTAssertEqual(unfinished.first?.endedEndpoints, ["a"])
        XCTAssertEqual(unfinished.first?.attempts, 3)
        XCTAssertEqual(unfinished.last?.endedEndpoints, [])
        XCTAssertEqual(unfinished.last?.attempts, 1)
        XCTAssertFalse(unfinished.contains { $0.ended })
    }
}
