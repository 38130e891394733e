import XCTest

@testable import Basics
@testable import Configuration

final class DurationParserTests: XCTestCase {
    func testParsesSystemdTimeSpans() {
        XCTAssertEqual(DurationParser.parse("20s"), .seconds(20))
        XCTAssertEqual(DurationParser.parse("500ms"), .milliseconds(500))
        XCTAssertEqual(DurationParser.parse("1min 30s"), .seconds(90))
        XCTAssertEqual(DurationParser.parse("1min30s"), .seconds(90))
        XCTAssertEqual(DurationParser.parse("1.5s"), .milliseconds(1_500))
        XCTAssertEqual(DurationParser.parse("2h"), .seconds(7_200))
        XCTAssertEqual(DurationParser.parse("15"), .seconds(15), "a bare number is seconds")
        XCTAssertEqual(DurationParser.parse("250us"), .microseconds(250))
        XCTAssertEqual(DurationParser.parse(" 3 min "), .seconds(180))
    }

    func testRejectsWhatIsNotAFiniteDuration() {
        for text in ["", "s", "-5s", "10 parsecs", "infinity", "1e3s", "5s junk", "1..5s"] {
            XCTAssertNil(DurationParser.parse(text), "'\(text)' must not parse")
        }
    }
}
