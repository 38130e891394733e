import XCTest

@testable import SessionCleanup

final class SessionTableTests: XCTestCase {
    private func s(_ n: UInt64) -> Session {
        Session(id: SessionID(rawValue: n), key: SessionKey("k\(n)"), endpoints: [], ownerUID: 0, registeredAt: n)
    }

    func testSwapRemoveKeepsIndexConsistentWithReferenceDictionary() {
        var table = SessionTable()
        var reference: [SessionID: Session] = [:]
        var rng = SystemRandomNumberGenerator()
        for step in 0..<5000 {
            let id = UInt64.random(in: 0..<300, using: &rng)
            switch step % 3 {
            case 0, 1:
                table.upsert(s(id))
                reference[SessionID(rawValue: id)] = s(id)
            default:
                XCTAssertEqual(
                    table.remove(SessionID(rawValue: id)), reference.removeValue(forKey: SessionID(rawValue: id)))
            }
            if step % 7 == 0 {
                let before = reference[SessionID(rawValue: id)]
                let updated = table.update(SessionID(rawValue: id)) { $0.attempts += 1 }
                XCTAssertEqual(updated == nil, before == nil, "updates exactly the sessions it holds")
                XCTAssertEqual(updated?.attempts, before.map { $0.attempts + 1 })
                if let updated { reference[updated.id] = updated }
            }
        }
        XCTAssertEqual(table.count, reference.count)
        for (id, value) in reference { XCTAssertEqual(table[id], value) }
        XCTAssertEqual(Set(table.sessions.map(\.id)), Set(reference.keys))
    }
}
