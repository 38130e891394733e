import XCTest

@testable import Sessions

final class SessionTableTests: XCTestCase {
    private func s(_ n: UInt64, uid: UInt32 = 0, endpoints: [String] = ["auth"]) -> Session {
        Session(
            id: SessionID(rawValue: n), key: SessionKey("k\(n)"), endpoints: endpoints, ownerUID: uid, registeredAt: n)
    }

    func testSwapRemoveKeepsIndexAndOwnerCountsConsistentWithAReferenceDictionary() {
        var table = SessionTable()
        var reference: [SessionID: Session] = [:]
        var rng = SystemRandomNumberGenerator()
        // Enough sessions to span several chunks, so removals move sessions across them.
        for step in 0..<30_000 {
            let n = UInt64.random(in: 0..<3000, using: &rng)
            let id = SessionID(rawValue: n)
            switch step % 3 {
            case 0, 1:
                let endpoints = [["auth"], ["auth", "licence"], ["licence"]][Int(n % 3)]
                table.upsert(s(n, uid: UInt32(n % 7), endpoints: endpoints))
                reference[id] = s(n, uid: UInt32(n % 7), endpoints: endpoints)
            default:
                XCTAssertEqual(table.remove(id), reference.removeValue(forKey: id))
            }
            if step % 7 == 0 {
                let before = reference[id]
                let updated = table.update(id) { $0.attempts += 1 }
                XCTAssertEqual(updated != nil, before != nil, "update finds exactly the sessions that are present")
                XCTAssertEqual(updated?.attempts, before.map { $0.attempts + 1 })
                if let updated { reference[id] = updated }
            }
        }
        XCTAssertEqual(table.count, reference.count)
        for (id, value) in reference { XCTAssertEqual(table[id], value) }
        XCTAssertEqual(Set(table.frozen.map(\.id)), Set(reference.keys))
        XCTAssertEqual(table.frozen.count, reference.count)
        var usage: [[String]: Int] = [:]
        for value in reference.values { usage[value.endpoints, default: 0] += 1 }
        XCTAssertEqual(table.endpointUsage, usage)
        for uid in UInt32(0)..<7 {
            XCTAssertEqual(
                table.count(ownedBy: uid), reference.values.filter { $0.ownerUID == uid }.count, "uid \(uid)")
        }
    }

    func testCountsAreTrueAfterEveryChangeWhileRunsOfOneListAndOneOwnerAreCountedTogether() {
        var table = SessionTable()
        var reference: [SessionID: Session] = [:]
        let lists = [["auth"], ["auth", "licence"]]
        // Runs of one list and one owner, as a stop run removes them, broken by others.
        for n in UInt64(0)..<400 {
            let session = s(n, uid: n % 50 < 45 ? 1 : 2, endpoints: lists[n % 40 < 35 ? 0 : 1])
            table.upsert(session)
            reference[session.id] = session
        }
        for n in UInt64(0)..<400 where n % 3 != 2 {
            XCTAssertEqual(table.remove(SessionID(rawValue: n)), reference.removeValue(forKey: SessionID(rawValue: n)))
            var usage: [[String]: Int] = [:]
            for value in reference.values { usage[value.endpoints, default: 0] += 1 }
            XCTAssertEqual(table.endpointUsage, usage, "after removing \(n)")
            for uid in UInt32(1)...2 {
                XCTAssertEqual(table.count(ownedBy: uid), reference.values.filter { $0.ownerUID == uid }.count)
            }
        }
    }

    func testFrozenCopyIsUnaffectedByLaterChanges() {
        var table = SessionTable()
        for n in 0..<2500 { table.upsert(s(UInt64(n))) }
        let frozen = table.frozen
        table.remove(SessionID(rawValue: 3))
        table.update(SessionID(rawValue: 2400)) { $0.lastOutcome = "failed" }
        for n in 2500..<2600 { table.upsert(s(UInt64(n))) }
        XCTAssertEqual(frozen.count, 2500)
        XCTAssertEqual(Array(frozen).count, 2500)
        XCTAssertTrue(frozen.contains { $0.id.rawValue == 3 })
        XCTAssertNil(frozen.first { $0.id.rawValue == 2400 }?.lastOutcome)
        XCTAssertEqual(table.count, 2599)
    }

    func testUpdateKeepsIdAndOwnerSoTheIndexAndCountsStayTrue() {
        var table = SessionTable()
        table.upsert(s(1, uid: 5))
        table.update(SessionID(rawValue: 1)) {
            $0.id = SessionID(rawValue: 99)
            $0.ownerUID = 6
        }
        XCTAssertNotNil(table[SessionID(rawValue: 1)])
        XCTAssertNil(table[SessionID(rawValue: 99)])
        XCTAssertEqual(table.count(ownedBy: 5), 1)
        XCTAssertEqual(table.count(ownedBy: 6), 0)
    }

    func testEqualEndpointListsShareOneBuffer() throws {
        var table = SessionTable()
        table.upsert(s(1, endpoints: ["auth", "licence"]))
        table.upsert(s(2, endpoints: ["auth", "licence"]))
        let a = try XCTUnwrap(table[SessionID(rawValue: 1)]).endpoints
        let b = try XCTUnwrap(table[SessionID(rawValue: 2)]).endpoints
        XCTAssertEqual(a.withUnsafeBufferPointer { $0.baseAddress }, b.withUnsafeBufferPointer { $0.baseAddress })
    }
}
