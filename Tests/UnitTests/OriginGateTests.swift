import XCTest

@testable import Runs

final class OriginGateTests: XCTestCase {
    private let origin = "http://127.0.0.1:9"

    func testAnUpOriginAdmitsEveryCall() {
        var gate = OriginGate()
        XCTAssertEqual(gate.admit(0, to: origin), .go)
        XCTAssertEqual(gate.admit(1, to: origin), .go)
        XCTAssertEqual(gate.callFinished(0, at: origin, unreachable: false, cause: ""), OriginGate.Release())
    }

    func testAFailedConnectionMakesTheCallTheProbeAndParksTheOthers() {
        var gate = OriginGate()
        gate.connectionFailed(3, at: origin)
        gate.connectionFailed(4, at: origin)  // already probed by 3
        XCTAssertEqual(gate.admit(3, to: origin), .go, "the probe retries")
        XCTAssertEqual(gate.admit(4, to: origin), .park)
        XCTAssertEqual(gate.admit(5, to: origin), .park)
        XCTAssertEqual(gate.admit(5, to: origin), .park, "parked once")
        XCTAssertEqual(gate.admit(0, to: "http://127.0.0.1:10"), .go, "other origins are unaffected")
        XCTAssertEqual(
            gate.callFinished(4, at: origin, unreachable: true, cause: "x"), OriginGate.Release(), "not the probe")
        XCTAssertEqual(gate.answered(origin), [4, 5])
        XCTAssertEqual(gate.admit(4, to: origin), .go)
    }

    func testAProbeThatGivesUpUnreachableFailsTheParkedAndRefusesLaterCalls() {
        var gate = OriginGate()
        gate.connectionFailed(0, at: origin)
        _ = gate.admit(1, to: origin)
        _ = gate.admit(2, to: origin)
        XCTAssertEqual(
            gate.callFinished(0, at: origin, unreachable: true, cause: "connection refused"),
            OriginGate.Release(fail: [1, 2], cause: "connection refused"))
        XCTAssertEqual(gate.admit(7, to: origin), .refuse(cause: "connection refused"))
    }

    /// A probe that ends any other way — a timeout, TLS, a start error, a budget refusal,
    /// expiry — used to leave the parked calls waiting out the whole budget.
    func testAProbeThatEndsAnyOtherWayReleasesTheParked() {
        var gate = OriginGate()
        gate.connectionFailed(0, at: origin)
        _ = gate.admit(1, to: origin)
        _ = gate.admit(2, to: origin)
        XCTAssertEqual(
            gate.callFinished(0, at: origin, unreachable: false, cause: "timeout"), OriginGate.Release(retry: [1, 2]))
        XCTAssertEqual(gate.admit(1, to: origin), .go, "the origin is up again")
        gate.connectionFailed(1, at: origin)
        XCTAssertEqual(gate.admit(2, to: origin), .park, "and can be probed again")
    }

    func testAnAnswerEndsProbingEvenBeforeTheProbeFinishes() {
        var gate = OriginGate()
        gate.connectionFailed(0, at: origin)
        _ = gate.admit(1, to: origin)
        XCTAssertEqual(gate.answered(origin), [1])
        XCTAssertEqual(
            gate.callFinished(0, at: origin, unreachable: true, cause: "x"), OriginGate.Release(), "no longer the probe"
        )
        XCTAssertEqual(gate.admit(2, to: origin), .go)
    }
}
