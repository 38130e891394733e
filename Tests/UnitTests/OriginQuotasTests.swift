import XCTest

@testable import Runs

final class OriginQuotasTests: XCTestCase {
    func testAnOriginsQuotaIsItsPartOfTheConcurrencyByItsCallsRoundedUp() {
        // 256 over 100 origins of 100 calls each: 2.56, so 3 in flight each.
        var quotas = OriginQuotas(concurrency: 256, waiting: Array(repeating: 100, count: 100))
        XCTAssertEqual(quotas.quota(of: 7), 3)
        for _ in 0..<3 {
            XCTAssertTrue(quotas.hasRoom(7))
            quotas.taken(7)
            quotas.started(7)
        }
        XCTAssertFalse(quotas.hasRoom(7), "a fourth would open a connection the quota does not need")
        quotas.stopped(7)
        XCTAssertTrue(quotas.hasRoom(7))
        XCTAssertEqual(quotas.inFlight(7), 2)
        // Unequal origins: 9 of 12 calls on one, 4 in flight: 3 and 1.
        let unequal = OriginQuotas(concurrency: 4, waiting: [9, 3])
        XCTAssertEqual([unequal.quota(of: 0), unequal.quota(of: 1)], [3, 1])
    }

    func testAnOriginWithNoCallWaitingHasNoRoom() {
        var quotas = OriginQuotas(concurrency: 4, waiting: [1, 5])
        quotas.taken(0)
        XCTAssertFalse(quotas.hasRoom(0))
        XCTAssertTrue(quotas.hasRoom(1))
    }

    func testAnOriginThatRunsOutOfCallsLeavesItsQuotaToOriginsWithMoreThanTheirsWaiting() {
        // 64 in flight, 500 calls each on a and b: 32 each. a is done first (b is slower): b,
        // with 500 waiting, gets the whole concurrency.
        var quotas = OriginQuotas(concurrency: 64, waiting: [500, 500])
        XCTAssertEqual(quotas.quota(of: 1), 32)
        for _ in 0..<500 { quotas.taken(0) }
        XCTAssertEqual(quotas.quota(of: 1), 64)
    }

    func testAtTheEndNoQuotaGrowsForCallsAnOriginsOwnConnectionsWillTake() {
        // 4 origins of 2 calls, 8 in flight: 2 each. Once one has started its 2, the others have
        // no more waiting than their quota: raising it would only open connections.
        var quotas = OriginQuotas(concurrency: 8, waiting: [2, 2, 2, 2])
        quotas.taken(0)
        quotas.taken(0)
        XCTAssertEqual((1..<4).map { quotas.quota(of: $0) }, [2, 2, 2])
    }

    func testASlotIsLeftFreeOnlyWhenEveryOriginWithCallsWaitingHasItsQuotaInFlightAndNoMoreWaiting() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<40 {
            let origins = Int.random(in: 1...40, using: &generator)
            let concurrency = Int.random(in: 1...300, using: &generator)
            var waiting = (0..<origins).map { _ in Int.random(in: 0...50, using: &generator) }
            var quotas = OriginQuotas(concurrency: concurrency, waiting: waiting)
            var inFlight = 0
            while waiting.contains(where: { $0 > 0 }) {
                let room = (0..<origins).filter { quotas.hasRoom($0) }
                if inFlight < concurrency, let origin = room.randomElement(using: &generator) {
                    quotas.taken(origin)
                    quotas.started(origin)
                    waiting[origin] -= 1
                    inFlight += 1
                    continue
                }
                if inFlight < concurrency {
                    for origin in 0..<origins where waiting[origin] > 0 {
                        XCTAssertEqual(quotas.inFlight(origin), quotas.quota(of: origin))
                        XCTAssertLessThanOrEqual(waiting[origin], quotas.quota(of: origin))
                    }
                }
                let running = (0..<origins).filter { quotas.inFlight($0) > 0 }
                guard let origin = running.randomElement(using: &generator) else {
                    return XCTFail("calls waiting, none in flight and no origin with room: \(waiting)")
                }
                quotas.stopped(origin)
                inFlight -= 1
            }
        }
    }
}
