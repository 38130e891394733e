import XCTest

@testable import Basics
@testable import Configuration
@testable import Sessions
@testable import Vocabulary

final class CallShapesTests: XCTestCase {
    func testResultsWithTheSameEndpointAndOutcomeShareOneShapeAndReadBackTheirOwn() {
        var shapes = CallShapes()
        let ended = shapes.shape("auth", .ended(status: 200), attempts: 1)
        XCTAssertTrue(shapes.shape("auth", .ended(status: 200), attempts: 1) === ended)
        let other = shapes.shape("licence", .ended(status: 200), attempts: 1)
        XCTAssertFalse(other === ended)
        XCTAssertTrue(
            shapes.shape("auth", .ended(status: 200), attempts: 1) === ended,
            "two alternating endpoints both stay shared")
        XCTAssertTrue(shapes.shape("licence", .ended(status: 200), attempts: 1) === other)
        let failed = shapes.shape("auth", .failed(cause: "connection refused"), attempts: 1)
        XCTAssertEqual(failed.endpoint, "auth")
        XCTAssertEqual(failed.outcome, .failed(cause: "connection refused"))
        XCTAssertFalse(shapes.shape("auth", .failed(cause: "timed out"), attempts: 1) === failed)
        let retried = shapes.shape("auth", .ended(status: 200), attempts: 3)
        XCTAssertFalse(retried === ended, "the requests made are part of the shape")
        XCTAssertEqual(retried.attempts, 3)
        XCTAssertTrue(shapes.shape("auth", .ended(status: 200), attempts: 1) === ended)
    }

    func testAShapeForgottenAfterManyOthersIsMadeAgainWithTheSameValue() {
        var shapes = CallShapes()
        let first = shapes.shape("auth", .rejected(status: 403, reason: "forbidden"), attempts: 1)
        for n in 0..<CallShapes.remembered { _ = shapes.shape("auth", .failed(cause: "cause \(n)"), attempts: 1) }
        let again = shapes.shape("auth", .rejected(status: 403, reason: "forbidden"), attempts: 1)
        XCTAssertFalse(again === first)
        XCTAssertEqual(again.outcome, first.outcome)
        XCTAssertEqual(again.endpoint, first.endpoint)
    }

    func testACallResultIsTwentyFourBytesAndEqualWhetherItsShapeIsSharedOrNot() {
        XCTAssertEqual(MemoryLayout<RunReport.CallResult>.stride, 24)
        var shapes = CallShapes()
        let id = SessionID(rawValue: 7)
        let shared = RunReport.CallResult(
            sessionID: id, ownerUID: 3, shape: shapes.shape("auth", .ended(status: 204), attempts: 2),
            duration: .milliseconds(12))
        let own = RunReport.CallResult(
            sessionID: id, ownerUID: 3, endpoint: "auth", outcome: .ended(status: 204), attempts: 2,
            duration: .milliseconds(12))
        XCTAssertEqual(shared, own)
        XCTAssertNotEqual(
            shared,
            RunReport.CallResult(
                sessionID: id, ownerUID: 3, endpoint: "auth", outcome: .ended(status: 200), attempts: 2,
                duration: .milliseconds(12)))
        XCTAssertEqual(own.endpoint, "auth")
        XCTAssertEqual(own.outcome, .ended(status: 204))
        XCTAssertEqual(own.attempts, 2)
        XCTAssertEqual(own.duration, .milliseconds(12))
        XCTAssertNotEqual(
            shared,
            RunReport.CallResult(
                sessionID: id, ownerUID: 3, endpoint: "auth", outcome: .ended(status: 204), attempts: 1,
                duration: .milliseconds(12)))
    }

    /// Durations are kept in whole microseconds (what the results file and `report` show), cut
    /// toward zero; the longest budget (30 minutes) fits, and beyond 71 minutes they are clamped.
    func testDurationsAreWholeMicrosecondsAndTheLongestBudgetFits() {
        func kept(_ duration: Duration) -> Duration {
            RunReport.CallResult(
                sessionID: SessionID(rawValue: 1), ownerUID: 0, endpoint: "e", outcome: .expired, attempts: 1,
                duration: duration
            ).duration
        }
        XCTAssertEqual(kept(.nanoseconds(1_999)), .microseconds(1))
        XCTAssertEqual(kept(StopSettings.maximumBudget), StopSettings.maximumBudget)
        XCTAssertEqual(kept(.seconds(10_000)), .microseconds(UInt32.max))
        XCTAssertEqual(kept(.zero), .zero)
    }
}
