import XCTest
final class PlaceholderIntegrationTests: XCTestCase { func testNothingYet() { XCTAssertTrue(true) } }
