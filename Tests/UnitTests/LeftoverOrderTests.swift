import XCTest

@testable import Daemon
@testable import Sessions

/// The leftover run after a start takes the calls whose request was sent but not answered
/// first: those are the ones a quick answer confirms.
final class LeftoverOrderTests: XCTestCase {
    private func session(_ key: String, _ lastOutcome: String?) -> Session {
        Session(
            id: .random(), key: SessionKey(key), endpoints: ["auth"], ownerUID: 0, registeredAt: 0,
            lastOutcome: lastOutcome)
    }

    func testUnconfirmedSessionsGoFirstAndEachGroupKeepsTheStoresOrder() {
        let sessions = [
            session("a", "failed"), session("b", "unconfirmed"), session("c", "expired"),
            session("d", "unconfirmed"), session("e", "not-started"),
        ]
        let ordered = LeftoverOrder.ordered(sessions).map(\.key)
        XCTAssertEqual(ordered, ["b", "d", "a", "c", "e"].map { SessionKey($0) })
    }

    func testWithoutUnconfirmedSessionsTheOrderIsUnchanged() {
        let sessions = [session("a", "failed"), session("b", "expired")]
        XCTAssertEqual(LeftoverOrder.ordered(sessions).map(\.key), sessions.map(\.key))
    }
}
