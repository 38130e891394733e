import XCTest

@testable import HTTPEngine
@testable import Vocabulary

final class TransferQueueTests: XCTestCase {
    private let a = HTTPOrigin(isTLS: false, host: "a.example", port: 80)
    private let b = HTTPOrigin(isTLS: true, host: "b.example", port: 443)

    /// Takes every transfer that may run now.
    private func drain(_ queue: inout TransferQueue, live: Set<UInt64>? = nil) -> [UInt64] {
        var taken: [UInt64] = []
        while let next = queue.next(isWaiting: { live?.contains($0) ?? true }) { taken.append(next.tag) }
        return taken
    }

    func testTransfersRunInStartOrderUpToTheTotalLimit() {
        var queue = TransferQueue(maxRunning: 3, maxPerOrigin: 3)
        let origin = queue.originNumber(a, cap: nil)
        for tag in 1...5 { queue.admit(UInt64(tag), origin: origin) }
        XCTAssertEqual(drain(&queue), [1, 2, 3])
        XCTAssertEqual(queue.running, 3)
        queue.finished(origin)
        XCTAssertEqual(drain(&queue), [4])
        queue.finished(origin)
        queue.finished(origin)
        XCTAssertEqual(drain(&queue), [5])
    }

    func testAnOriginAtItsCapDoesNotBlockAnotherOrigin() {
        var queue = TransferQueue(maxRunning: 10, maxPerOrigin: 10)
        let first = queue.originNumber(a, cap: 2)
        let second = queue.originNumber(b, cap: nil)
        for tag in 1...4 { queue.admit(UInt64(tag), origin: first) }
        queue.admit(5, origin: second)
        XCTAssertEqual(drain(&queue), [1, 2, 5])
        XCTAssertEqual(queue.running(first), 2)
        queue.finished(first)
        XCTAssertEqual(drain(&queue), [3], "the origin that freed a slot runs its oldest blocked transfer")
    }

    func testTheSmallestCapAnyRequestGaveApplies() {
        var queue = TransferQueue(maxRunning: 10, maxPerOrigin: 8)
        _ = queue.originNumber(a, cap: 4)
        let origin = queue.originNumber(a, cap: 6)
        XCTAssertEqual(queue.originNumber(a, cap: nil), origin, "one number per origin")
        for tag in 1...8 { queue.admit(UInt64(tag), origin: origin) }
        XCTAssertEqual(drain(&queue).count, 4)
    }

    func testTransfersThatLeftWhileWaitingAreSkipped() {
        var queue = TransferQueue(maxRunning: 2, maxPerOrigin: 2)
        let origin = queue.originNumber(a, cap: nil)
        for tag in 1...4 { queue.admit(UInt64(tag), origin: origin) }
        XCTAssertEqual(drain(&queue, live: [2, 4]), [2, 4])
    }

    func testARestrictionHoldsAnOriginAndLiftingItLetsTheBlockedRun() {
        var queue = TransferQueue(maxRunning: 10, maxPerOrigin: 10)
        let origin = queue.originNumber(a, cap: nil)
        XCTAssertFalse(queue.restrict(origin, to: 1), "nothing was blocked")
        for tag in 1...3 { queue.admit(UInt64(tag), origin: origin) }
        XCTAssertEqual(drain(&queue), [1])
        XCTAssertTrue(queue.restrict(origin, to: nil))
        XCTAssertEqual(drain(&queue), [2, 3])
        XCTAssertFalse(queue.restrict(origin, to: 1), "lowering never frees anything")
    }
}
