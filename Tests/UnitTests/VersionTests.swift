import XCTest
@testable import SessionCleanup
final class VersionTests: XCTestCase { func testVersionIsSemantic() { XCTAssertEqual(SessionCleanupVersion.string.split(separator: ".").count, 3) } }
