import XCTest

@testable import Journal

final class JournalQueueTests: XCTestCase {
    private func entry(_ tag: UInt8, _ size: Int = 10) -> [UInt8] { [UInt8](repeating: tag, count: size) }

    func testEssentialEntriesGoFirstAndEachLaneKeepsItsOrder() {
        var queue = JournalQueue()
        XCTAssertTrue(queue.push(entry(1), essential: false))
        XCTAssertTrue(queue.push(entry(2), essential: false))
        XCTAssertTrue(queue.push(entry(3), essential: true))
        XCTAssertTrue(queue.push(entry(4), essential: true))
        var order: [UInt8] = []
        while let next = queue.next {
            order.append(next[0])
            queue.removeNext()
        }
        XCTAssertEqual(order, [3, 4, 1, 2])
        XCTAssertTrue(queue.isEmpty)
    }

    func testAFullBulkLaneStillTakesEssentialEntries() {
        var queue = JournalQueue(limits: .init(bulkBytes: 100, essentialBytes: 50))
        for _ in 0..<10 { XCTAssertTrue(queue.push(entry(1), essential: false)) }
        XCTAssertFalse(queue.push(entry(1), essential: false), "bulk is full")
        XCTAssertTrue(queue.push(entry(9), essential: true), "the lifecycle entry still has room")
        XCTAssertEqual(queue.next?.first, 9)
        XCTAssertEqual(queue.count, 11)
    }

    func testAHalfWrittenBulkEntryIsFinishedBeforeAnEssentialOne() {
        var queue = JournalQueue()
        XCTAssertTrue(queue.push(entry(1), essential: false))
        queue.holdNext()  // a stream took part of entry 1
        XCTAssertTrue(queue.push(entry(2), essential: true))
        XCTAssertEqual(queue.next?.first, 1)
        queue.removeNext()
        XCTAssertEqual(queue.next?.first, 2)
    }

    func testRemovingEverythingCountsIt() {
        var queue = JournalQueue()
        for index in 0..<5000 { XCTAssertTrue(queue.push(entry(UInt8(index % 200)), essential: index % 2 == 0)) }
        for _ in 0..<4500 { queue.removeNext() }
        XCTAssertEqual(queue.count, 500)
        XCTAssertEqual(queue.removeAll(), 500)
        XCTAssertNil(queue.next)
    }
}
