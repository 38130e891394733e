import XCTest

@testable import Basics
@testable import Metrics
@testable import Sessions
@testable import Vocabulary

final class RunReportTests: XCTestCase {
    func testCallCountsNameEveryOutcomeThatOccursAndOnlyThose() {
        var report = RunReport(id: .random(), kind: .stop, budget: .seconds(25), startedAt: 1)
        let outcomes: [CallOutcome] = [
            .ended(status: 200), .ended(status: 204), .rejected(status: 403, reason: "no"), .failed(cause: "x"),
            .failed(cause: "y"), .failed(cause: "z"), .notStarted(reason: "budget"),
        ]
        for (n, outcome) in outcomes.enumerated() {
            report.calls.append(
                RunReport.CallResult(
                    sessionID: SessionID(rawValue: UInt64(n)), ownerUID: 0, endpoint: "auth", outcome: outcome,
                    attempts: 1, duration: .milliseconds(n)))
        }
        XCTAssertEqual(report.callCounts, ["ended": 2, "rejected": 1, "failed": 3, "not-started": 1])
    }

    func testCallCountsByEndpointAddUpSharedAndSeparateShapesInAnyOrder() {
        var report = RunReport(id: .random(), kind: .stop, budget: .seconds(25), startedAt: 1)
        let ended = RunReport.CallResult.Shape("auth", .ended(status: 200), attempts: 1)
        let endedAgain = RunReport.CallResult.Shape("auth", .ended(status: 204), attempts: 2)
        let rejected = RunReport.CallResult.Shape("idp", .rejected(status: 403, reason: "no"), attempts: 1)
        let rejectedOtherwise = RunReport.CallResult.Shape("idp", .rejected(status: 400, reason: "bad"), attempts: 1)
        let expired = RunReport.CallResult.Shape("auth", .expired, attempts: 0)
        // Runs of one shape, a shape coming back after others, two shapes with one word.
        let shapes = [ended, ended, rejected, ended, endedAgain, rejectedOtherwise, rejected, expired, ended]
        for (n, shape) in shapes.enumerated() {
            report.calls.append(
                RunReport.CallResult(
                    sessionID: SessionID(rawValue: UInt64(n)), ownerUID: 0, shape: shape, duration: .milliseconds(n)))
        }
        XCTAssertEqual(report.callCountsByEndpoint, ["auth": ["ended": 5, "expired": 1], "idp": ["rejected": 3]])
        XCTAssertEqual(RunReport(id: .random(), kind: .stop, budget: .seconds(1)).callCountsByEndpoint, [:])
        let metrics = RunMetrics(report, finishedAt: 7, journalDropped: 0)
        XCTAssertEqual(metrics.outcomes, report.callCountsByEndpoint)
    }

    func testDurationMicrosecondsAgreeWithDuration() {
        for duration: Duration in [.zero, .nanoseconds(999), .nanoseconds(1_001), .milliseconds(1_234), .seconds(90)] {
            let result = RunReport.CallResult(
                sessionID: SessionID(rawValue: 1), ownerUID: 0, endpoint: "e", outcome: .expired, attempts: 0,
                duration: duration)
            XCTAssertEqual(result.durationMicroseconds, duration.microseconds, "\(duration)")
        }
    }
}
