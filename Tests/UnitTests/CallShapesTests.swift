import XCTest

@testable import SessionCleanup
@testable import Sessions

final class CallShapesTests: XCTestCase {
    func testResultsWithTheSameEndpointAndOutcomeShareOneShapeAndReadBackTheirOwn() {
        var shapes = CallShapes()
        let ended = shapes.shape("auth", .ended(status: 200))
        XCTAssertTrue(shapes.shape("auth", .ended(status: 200)) === ended)
        let other = shapes.shape("licence", .ended(status: 200))
        XCTAssertFalse(other === ended)
        XCTAssertTrue(shapes.shape("auth", .ended(status: 200)) === ended, "two alternating endpoints both stay shared")
        XCTAssertTrue(shapes.shape("licence", .ended(status: 200)) === other)
        let failed = shapes.shape("auth", .failed(cause: "connection refused"))
        XCTAssertEqual(failed.endpoint, "auth")
        XCTAssertEqual(failed.outcome, .failed(cause: "connection refused"))
        XCTAssertFalse(shapes.shape("auth", .failed(cause: "timed out")) === failed)
    }

    func testAShapeForgottenAfterManyOthersIsMadeAgainWithTheSameValue() {
        var shapes = CallShapes()
        let first = shapes.shape("auth", .rejected(status: 403, reason: "forbidden"))
        for n in 0..<CallShapes.remembered { _ = shapes.shape("auth", .failed(cause: "cause \(n)")) }
        let again = shapes.shape("auth", .rejected(status: 403, reason: "forbidden"))
        XCTAssertFalse(again === first)
        XCTAssertEqual(again.outcome, first.outcome)
        XCTAssertEqual(again.endpoint, first.endpoint)
    }

    func testACallResultIsThirtyTwoBytesAndEqualWhetherItsShapeIsSharedOrNot() {
        XCTAssertEqual(MemoryLayout<RunReport.CallResult>.stride, 32)
        var shapes = CallShapes()
        let id = SessionID(rawValue: 7)
        let shared = RunReport.CallResult(
            sessionID: id, ownerUID: 3, shape: shapes.shape("auth", .ended(status: 204)), attempts: 2,
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
    }
}
