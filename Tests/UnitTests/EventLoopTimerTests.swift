import XCTest

@testable import EventLoop
@testable import TestSupport

final class EventLoopTimerTests: XCTestCase {
    func testTimersDueAtTheSameInstantRunInTheOrderTheyWereScheduled() throws {
        let clock = ManualClock()
        let loop = try EventLoop(clock: clock)
        let deadline = clock.now().advanced(by: .milliseconds(10))
        var order: [Int] = []
        for index in 0..<200 { loop.schedule(at: deadline) { order.append(index) } }
        loop.schedule(at: clock.now().advanced(by: .milliseconds(5))) { order.append(-1) }
        clock.advance(.milliseconds(10))
        try loop.runOnce(maximumWait: .zero)
        XCTAssertEqual(order, [-1] + Array(0..<200))
    }
}
