import XCTest

@testable import Configuration
@testable import Endpoints
@testable import Runs
@testable import Sessions

final class CallSlotsTests: XCTestCase {
    private let template = EndpointTemplate(
        EndpointConfiguration(name: "auth", url: "http://127.0.0.1:8080/user/{session}/endsession"))

    private func add(_ slots: inout CallSlots, session: Int) -> Int {
        let value = Session(
            id: .random(), key: SessionKey("k\(session)"), endpoints: ["auth"], ownerUID: 0, registeredAt: 0)
        return slots.add(
            session: session, endSession: EndSessionCall(session: value, template: template), endpointName: "auth")
    }

    func testAFinishedCallsSlotGoesToTheNextCallWithTheNextNumber() {
        var slots = CallSlots()
        XCTAssertEqual(add(&slots, session: 0), 0)
        XCTAssertEqual(add(&slots, session: 1), 1)
        XCTAssertEqual(add(&slots, session: 2), 2)
        XCTAssertTrue(slots.finish(1))
        XCTAssertEqual(add(&slots, session: 3), 1, "the freed slot is reused")
        XCTAssertEqual(slots[1].number, 3, "a reused slot's call has a new number")
        XCTAssertEqual(slots[1].session, 3)
        XCTAssertEqual(add(&slots, session: 4), 3, "no slot free: a new one")
        XCTAssertEqual(slots.taken, 5)
        XCTAssertEqual(slots.indices.count, 4, "slots follow the calls under way, not the calls taken")
    }

    func testACallFinishesOnce() {
        var slots = CallSlots()
        let slot = add(&slots, session: 0)
        XCTAssertTrue(slots.finish(slot))
        XCTAssertFalse(slots.finish(slot), "already done: the slot is not freed twice")
        XCTAssertEqual(add(&slots, session: 1), slot)
        XCTAssertEqual(add(&slots, session: 2), 1, "only one free slot was there")
    }

    func testCallsUnderWayComeInTheOrderTheyWereTakenWhateverTheirSlots() {
        var slots = CallSlots()
        for session in 0..<4 { _ = add(&slots, session: session) }
        _ = slots.finish(0)
        _ = slots.finish(2)
        _ = add(&slots, session: 4)  // slot 2
        _ = add(&slots, session: 5)  // slot 0
        XCTAssertEqual(slots.underWayInOrder.map { slots[$0].session }, [1, 3, 4, 5])
    }

    func testReadyCallsAreServedFirstInFirstOut() {
        var ready = ReadyCalls()
        XCTAssertTrue(ready.isEmpty)
        ready.append(4)
        ready.append(1)
        XCTAssertEqual(ready.next(), 4)
        ready.append(7)
        XCTAssertEqual(ready.next(), 1)
        XCTAssertEqual(ready.next(), 7)
        XCTAssertNil(ready.next())
        XCTAssertTrue(ready.isEmpty)
    }
}
