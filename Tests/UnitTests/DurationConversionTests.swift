import XCTest

@testable import Basics
@testable import EventLoop

final class DurationConversionTests: XCTestCase {
    func testMicrosecondsTruncateTowardZeroAndClampAtInt64() {
        XCTAssertEqual(Duration.seconds(20).microseconds, 20_000_000)
        XCTAssertEqual(Duration.seconds(300).microseconds, 300_000_000)
        XCTAssertEqual(Duration.nanoseconds(1_999).microseconds, 1)
        XCTAssertEqual(Duration.nanoseconds(-1_999).microseconds, -1, "toward zero, not down")
        XCTAssertEqual(Duration.microseconds(-1_000_001).microseconds, -1_000_001)
        XCTAssertEqual(Duration.zero.microseconds, 0)
        XCTAssertEqual(Duration(secondsComponent: .max, attosecondsComponent: 0).microseconds, .max)
        XCTAssertEqual(Duration(secondsComponent: .min, attosecondsComponent: 0).microseconds, .min)
    }

    func testMillisecondsRoundUpAndNeverGoBelowZero() {
        XCTAssertEqual(Duration.microseconds(1).millisecondsRoundedUp, 1)
        XCTAssertEqual(Duration.microseconds(1_000).millisecondsRoundedUp, 1)
        XCTAssertEqual(Duration.microseconds(1_001).millisecondsRoundedUp, 2)
        XCTAssertEqual(Duration.zero.millisecondsRoundedUp, 0)
        XCTAssertEqual(Duration.seconds(-3).millisecondsRoundedUp, 0)
    }

    func testInstantsSubtractToMicrosecondsEitherWay() {
        let earlier = MonotonicInstant(microseconds: 5_000_000)
        let later = earlier.advanced(by: .milliseconds(1_500))
        XCTAssertEqual(later.microseconds(since: earlier), 1_500_000)
        XCTAssertEqual(earlier.microseconds(since: later), -1_500_000)
        XCTAssertEqual(later.duration(since: earlier), .milliseconds(1_500))
    }
}
