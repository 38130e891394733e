import XCTest

@testable import EventLoop

final class DescriptorTableTests: XCTestCase {
    func testAValueStaysUntilRemovedAndUnknownDescriptorsHaveNone() {
        var table = DescriptorTable<String>()
        XCTAssertNil(table[0])
        XCTAssertNil(table[-1], "a negative descriptor has no value")
        table[7] = "seven"
        table[3] = "three"
        XCTAssertEqual(table[7], "seven")
        XCTAssertEqual(table[3], "three")
        XCTAssertNil(table[5], "a descriptor below the highest one stored has no value of its own")
        XCTAssertNil(table[8], "nor one above it")
        table[7] = "again"
        XCTAssertEqual(table[7], "again", "setting replaces")
        XCTAssertEqual(table.removeValue(for: 7), "again")
        XCTAssertNil(table[7])
        XCTAssertNil(table.removeValue(for: 7), "removed once")
        XCTAssertNil(table.removeValue(for: 1_000), "removing what was never there does nothing")
        table[1_000] = nil
        XCTAssertNil(table[1_000])
        XCTAssertEqual(table[3], "three", "other values are untouched")
    }
}
