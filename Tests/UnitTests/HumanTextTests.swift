import XCTest

@testable import Basics

final class HumanTextTests: XCTestCase {
    func testCountsTakeTheRightPlural() {
        XCTAssertEqual(HumanText.count(0, "session"), "0 sessions")
        XCTAssertEqual(HumanText.count(1, "session"), "1 session")
        XCTAssertEqual(HumanText.count(2, "session"), "2 sessions")
        XCTAssertEqual(HumanText.count(1, "entry", plural: "entries"), "1 entry")
        XCTAssertEqual(HumanText.count(3, "entry", plural: "entries"), "3 entries")
    }

    func testDurationsUseTheUnitThatReadsBest() {
        let cases: [(Int64, String)] = [
            (0, "0 µs"), (850, "850 µs"), (250_000, "250 ms"), (1_000_000, "1 s"), (1_240_000, "1.2 s"),
            (1_250_000, "1.3 s"),
            (2_560_000, "2.6 s"), (9_960_000, "10 s"), (25_000_000, "25 s"), (60_000_000, "1 min"),
            (200_000_000, "3 min 20 s"), (3_600_000_000, "1 h"), (7_500_000_000, "2 h 5 min"),
            (273_600_000_000, "3 d 4 h"), (-2_000_000, "-2 s"),
        ]
        for (microseconds, text) in cases {
            XCTAssertEqual(HumanText.duration(microseconds: microseconds), text, "\(microseconds) µs")
        }
        XCTAssertEqual(HumanText.duration(seconds: 7), "7 s")
        XCTAssertEqual(HumanText.duration(seconds: 125), "2 min 5 s")
    }

    func testRelativeTimesNameOneUnit() {
        let now: UInt64 = 1_800_000_000_000_000
        XCTAssertEqual(HumanText.relative(epochMicroseconds: now, now: now), "just now")
        XCTAssertEqual(HumanText.relative(epochMicroseconds: now - 42_000_000, now: now), "42 s ago")
        XCTAssertEqual(HumanText.relative(epochMicroseconds: now - 200_000_000, now: now), "3 min ago")
        XCTAssertEqual(HumanText.relative(epochMicroseconds: now - 18_000_000_000, now: now), "5 h ago")
        XCTAssertEqual(HumanText.relative(epochMicroseconds: now - 180_000_000_000, now: now), "2 d ago")
        XCTAssertEqual(HumanText.relative(epochMicroseconds: now + 180_000_000, now: now), "in 3 min")
    }

    func testMomentsAreLocalTimeAndHowLongAgo() {
        let now: UInt64 = 1_800_000_000_000_000
        let text = HumanText.moment(epochMicroseconds: now - 180_000_000, now: now)
        XCTAssertTrue(text.hasSuffix(" (3 min ago)"), text)
        XCTAssertNotNil(text.range(of: #"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d "#, options: .regularExpression), text)
    }
}
