import XCTest

@testable import Runs
@testable import TestSupport
@testable import Vocabulary

final class StopBudgetTests: XCTestCase {
    func testTimeRemainingCountsDownWithTheClockAndStopsAtZero() {
        let clock = ManualClock()
        let budget = StopBudget(total: .seconds(10), minimumRequest: .seconds(1), clock: clock)
        XCTAssertEqual(budget.timeRemaining, .seconds(10))
        clock.advance(.milliseconds(2_500))
        XCTAssertEqual(budget.timeRemaining, .milliseconds(7_500))
        clock.advance(.seconds(20))
        XCTAssertEqual(budget.timeRemaining, .zero)
    }

    func testNoRequestStartsWhenLessThanTheMinimumRemains() {
        let clock = ManualClock()
        let budget = StopBudget(total: .seconds(5), minimumRequest: .seconds(1), clock: clock)
        clock.advance(.milliseconds(3_999))
        XCTAssertTrue(budget.allowsNewRequest)
        clock.advance(.milliseconds(2))
        XCTAssertFalse(budget.allowsNewRequest)
        XCTAssertNil(budget.requestTimeout(limit: .seconds(20), margin: .zero))
    }

    func testRequestTimeoutIsCappedByTimeRemainingLessTheMargin() {
        let clock = ManualClock()
        let budget = StopBudget(total: .seconds(10), minimumRequest: .seconds(1), clock: clock)
        XCTAssertEqual(budget.requestTimeout(limit: .seconds(2), margin: .milliseconds(200)), .seconds(2))
        clock.advance(.seconds(7))
        XCTAssertEqual(budget.requestTimeout(limit: .seconds(20), margin: .milliseconds(200)), .milliseconds(2_800))
    }

    func testExpirationHandlerRunsExactlyOnce() {
        let clock = ManualClock()
        let budget = StopBudget(total: .seconds(1), minimumRequest: .zero, clock: clock)
        var reasons: [RunExpiryReason] = []
        budget.onExpiration { reasons.append($0) }
        XCTAssertFalse(budget.expireIfDue(), "not due yet")
        clock.advance(.seconds(1))
        XCTAssertTrue(budget.expireIfDue())
        XCTAssertFalse(budget.expireIfDue())
        XCTAssertFalse(budget.expire(reason: .secondSignal))
        XCTAssertEqual(reasons, [.timeUp])
    }

    func testSecondSignalExpiresAtOnceAndNothingMayStartAfterwards() {
        let clock = ManualClock()
        let budget = StopBudget(total: .seconds(30), minimumRequest: .seconds(1), clock: clock)
        var reasons: [RunExpiryReason] = []
        budget.onExpiration { reasons.append($0) }
        XCTAssertTrue(budget.expire(reason: .secondSignal))
        XCTAssertEqual(reasons, [.secondSignal])
        XCTAssertEqual(budget.timeRemaining, .zero)
        XCTAssertFalse(budget.allowsNewRequest)
        clock.advance(.seconds(30))
        XCTAssertFalse(budget.expireIfDue(), "the timer firing later does not expire it again")
        XCTAssertEqual(reasons.count, 1)
    }
}
