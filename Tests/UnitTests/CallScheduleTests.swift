import XCTest

@testable import Configuration
@testable import Endpoints
@testable import Runs
@testable import Sessions
@testable import Vocabulary

/// The run's schedule on its own: which call goes next and where each call under way stands,
/// as the run reports what happens to it.
final class CallScheduleTests: XCTestCase {
    private let template = EndpointTemplate(
        EndpointConfiguration(name: "auth", url: "http://127.0.0.1:9/user/{session}/endsession"), credentials: [:])

    private func schedule(sessions count: Int, maxConcurrent: Int) -> CallSchedule {
        let sessions = (0..<count).map { index in
            Session(id: .random(), key: SessionKey("k\(index)"), endpoints: ["auth"], ownerUID: 0, registeredAt: 0)
        }
        var schedule = CallSchedule(
            sessions: SessionList(sessions), templates: ["auth": template], maxConcurrent: maxConcurrent)
        schedule.prepare { _, _, _, _ in XCTFail("every call can be made") }
        return schedule
    }

    func testCallsInFlightAreCountedUpToTheLimit() throws {
        var schedule = schedule(sessions: 3, maxConcurrent: 2)
        let first = try XCTUnwrap(schedule.next())
        let second = try XCTUnwrap(schedule.next())
        XCTAssertEqual([schedule[first].session, schedule[second].session], [0, 1], "in the line's order")
        schedule.started(first, transfer: TransferID(rawValue: 1))
        XCTAssertTrue(schedule.hasRoom)
        schedule.started(second, transfer: TransferID(rawValue: 2))
        XCTAssertFalse(schedule.hasRoom, "two in flight of two")
        XCTAssertEqual(schedule[second].attempts, 1)
        schedule.stopped(first)
        XCTAssertEqual(schedule.inFlight, 1)
        XCTAssertTrue(schedule.hasRoom)
        XCTAssertTrue(schedule.finish(first))
        XCTAssertFalse(schedule.finish(first), "a call finishes once")
        XCTAssertEqual(schedule.underWayInOrder, [second])
    }

    func testACallGoingAgainIsServedBeforeTheLine() throws {
        var schedule = schedule(sessions: 3, maxConcurrent: 3)
        let first = try XCTUnwrap(schedule.next())
        schedule.started(first, transfer: TransferID(rawValue: 1))
        schedule.stopped(first)
        XCTAssertFalse(schedule.hasReady)
        schedule.requeue(first)
        XCTAssertTrue(schedule.hasReady)
        XCTAssertEqual(schedule.next(), first, "the retry first")
        let next = try XCTUnwrap(schedule.next())
        XCTAssertEqual(schedule[next].session, 1, "then the line")
    }

    func testAnUnreachableProbesEndFailsTheCallsParkedBehindIt() throws {
        var schedule = schedule(sessions: 3, maxConcurrent: 3)
        let origin = "http://127.0.0.1:9"
        let probe = try XCTUnwrap(schedule.next())
        schedule[probe].lastAttemptUnreachable = true
        schedule.failedRetryably(probe, at: origin, cause: "connection refused", status: nil)
        let parked = try XCTUnwrap(schedule.next())
        XCTAssertEqual(schedule.admit(parked, to: origin), .park)
        XCTAssertTrue(schedule[parked].state.isParked)
        XCTAssertEqual(schedule.admit(probe, to: origin), .go, "the probe retries")
        XCTAssertTrue(schedule.finish(probe))
        let held = schedule.callFinished(probe, at: origin, unreachable: true, cause: "connection refused")
        XCTAssertEqual(held.parked, [parked])
        XCTAssertEqual(held.cause, "connection refused")
        XCTAssertFalse(schedule.hasReady, "failed, not released")
    }

    func testAProbeThatEndsOtherwiseReleasesTheCallsParkedBehindIt() throws {
        var schedule = schedule(sessions: 2, maxConcurrent: 2)
        let origin = "http://127.0.0.1:9"
        let probe = try XCTUnwrap(schedule.next())
        schedule[probe].lastAttemptUnreachable = true
        schedule.failedRetryably(probe, at: origin, cause: "connection refused", status: nil)
        let parked = try XCTUnwrap(schedule.next())
        XCTAssertEqual(schedule.admit(parked, to: origin), .park)
        XCTAssertTrue(schedule.finish(probe))
        let held = schedule.callFinished(probe, at: origin, unreachable: false, cause: "timed out")
        XCTAssertEqual(held.parked, [], "none to fail")
        XCTAssertEqual(schedule.next(), parked, "released: it goes again")
        XCTAssertEqual(schedule.admit(parked, to: origin), .go)
    }

    func testAnOriginThatAnswersReleasesTheCallsParkedBehindItsProbe() throws {
        var schedule = schedule(sessions: 2, maxConcurrent: 2)
        let origin = "http://127.0.0.1:9"
        let probe = try XCTUnwrap(schedule.next())
        schedule[probe].lastAttemptUnreachable = true
        schedule.failedRetryably(probe, at: origin, cause: "connection refused", status: nil)
        let parked = try XCTUnwrap(schedule.next())
        XCTAssertEqual(schedule.admit(parked, to: origin), .park)
        schedule.failedRetryably(probe, at: origin, cause: "HTTP 503", status: 503)
        XCTAssertEqual(schedule[probe].lastStatus, 503)
        XCTAssertEqual(schedule.next(), parked, "an answer, even a 503, says the origin is up")
    }
}
