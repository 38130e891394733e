import Vocabulary
import XCTest

@testable import Runs
@testable import TestSupport

final class RetryPolicyTests: XCTestCase {
    private let clock = ManualClock()
    private let policy = RetryPolicy(maxAttempts: 4, retryDelay: .milliseconds(100))

    private func budget(_ total: Duration = .seconds(10)) -> StopBudget {
        StopBudget(total: total, minimumRequest: .seconds(1), clock: clock)
    }

    func testTheBackoffDoublesPerAttemptWithTheUpperHalfJittered() {
        XCTAssertEqual(policy.delay(afterAttempts: 1, notBefore: nil, jitter: 0), .milliseconds(50))
        XCTAssertEqual(policy.delay(afterAttempts: 1, notBefore: nil, jitter: 1), .milliseconds(100))
        XCTAssertEqual(policy.delay(afterAttempts: 2, notBefore: nil, jitter: 0.5), .milliseconds(150))
        XCTAssertEqual(policy.delay(afterAttempts: 3, notBefore: nil, jitter: 1), .milliseconds(400))
    }

    func testTheBackoffStopsDoublingAfterSixteenRetries() {
        XCTAssertEqual(
            policy.delay(afterAttempts: 40, notBefore: nil, jitter: 1),
            policy.delay(afterAttempts: 17, notBefore: nil, jitter: 1))
    }

    func testALongerRetryAfterWinsAndAShorterOneDoesNot() {
        XCTAssertEqual(policy.delay(afterAttempts: 1, notBefore: .seconds(2), jitter: 1), .seconds(2))
        XCTAssertEqual(policy.delay(afterAttempts: 3, notBefore: .milliseconds(10), jitter: 1), .milliseconds(400))
    }

    func testACallRetriesWhileAttemptsAreLeftAndGivesUpAtTheLast() {
        let budget = budget()
        XCTAssertEqual(
            policy.decide(attempts: 3, notBefore: nil, jitter: 1, budget: budget), .retry(after: .milliseconds(400)))
        XCTAssertEqual(policy.decide(attempts: 4, notBefore: nil, jitter: 0, budget: budget), .giveUp)
    }

    func testNoRetryWhoseWaitLeavesLessThanAWholeRequestOfTheBudget() {
        let budget = budget(.seconds(2))
        XCTAssertEqual(
            policy.decide(attempts: 1, notBefore: .seconds(1), jitter: 0, budget: budget), .retry(after: .seconds(1)))
        XCTAssertEqual(
            policy.decide(attempts: 1, notBefore: .milliseconds(1_001), jitter: 0, budget: budget), .giveUp,
            "1 s minimum request after a 1.001 s wait does not fit in 2 s")
    }

    func testNoRetryOnceTheBudgetExpired() {
        let budget = budget()
        budget.expire(reason: .secondSignal)
        XCTAssertEqual(policy.decide(attempts: 1, notBefore: nil, jitter: 0, budget: budget), .giveUp)
    }

    func testGivingUpIsRejectedWhenTheServerAnsweredAndFailedOtherwise() {
        XCTAssertEqual(
            RetryPolicy.outcomeOfGivingUp(cause: "HTTP 503", status: 503), .rejected(status: 503, reason: "HTTP 503"),
            "the attempts are the result's own field, not repeated in the cause")
        XCTAssertEqual(
            RetryPolicy.outcomeOfGivingUp(cause: "connection refused", status: nil),
            .failed(cause: "connection refused"))
    }

    private func failure(_ kind: TransportFailure.Kind) -> TransportFailure {
        TransportFailure(kind: kind, peer: "127.0.0.1:1", detail: "test")
    }

    func testARequestSentAndNotAnsweredIsUnconfirmedWhateverEndedIt() {
        for kind in [TransportFailure.Kind.timeout, .sendReceive, .cancelled] {
            guard case .unconfirmed(let cause)? = RetryPolicy.unanswered(failure(kind), requestSent: true) else {
                return XCTFail("\(kind) after the request was sent is unconfirmed")
            }
            XCTAssertTrue(cause.contains("the request was sent"), cause)
        }
    }

    func testATimeoutBeforeTheRequestWasWrittenIsNotAnAttempt() {
        XCTAssertEqual(RetryPolicy.unanswered(failure(.timeout), requestSent: false), .notSent)
    }

    func testFailuresTheServerCannotHaveActedOnAreJudgedAsUsual() {
        for kind in [TransportFailure.Kind.connect, .resolve, .tls, .sendReceive, .cancelled] {
            XCTAssertNil(RetryPolicy.unanswered(failure(kind), requestSent: false), "\(kind)")
        }
        for kind in [TransportFailure.Kind.connect, .resolve, .tls, .tooLarge, .other] {
            XCTAssertNil(RetryPolicy.unanswered(failure(kind), requestSent: true), "\(kind)")
        }
    }
}
