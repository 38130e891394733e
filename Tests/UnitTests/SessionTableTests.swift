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

final class SessionTableVacancyTests: XCTestCase {
    private func s(_ n: UInt64, uid: UInt32 = 0) -> Session {
        Session(
            id: SessionID(rawValue: n), key: SessionKey("key-\(n)-with-some-length"), endpoints: ["auth"],
            ownerUID: uid, label: "label \(n)", registeredAt: 10_000 - n)
    }

    private func filled(_ count: Int) -> SessionTable {
        var table = SessionTable()
        for n in 0..<count { table.upsert(s(UInt64(n))) }
        return table
    }

    func testRemovingEverySessionWhileAListIsAliveCopiesNoChunkAndTheListStillReadsThem() {
        var table = filled(5000)
        let chunks = table.chunkAddresses
        let list = table.listInRegistrationOrder()
        XCTAssertEqual(list.count, 5000)
        for n in 0..<5000 { XCTAssertTrue(table.delete(SessionID(rawValue: UInt64(n)))) }
        XCTAssertEqual(table.count, 0)
        XCTAssertEqual(table.chunkAddresses, chunks, "no chunk was copied while the list shared them")
        // Ordered by registeredAt (10,000 - n): the last registered first.
        let lastFirst: [UInt64] = (0..<5000).reversed()
        XCTAssertEqual(list.map(\.id.rawValue), lastFirst)
        XCTAssertEqual(list[4999], s(0))
        XCTAssertEqual(list[0].key, SessionKey("key-4999-with-some-length"))
    }

    func testAListLeavesOutRemovedSessionsAndWhatItsFilterRejects() {
        var table = filled(3000)
        for n in stride(from: 0, to: 3000, by: 3) { table.delete(SessionID(rawValue: UInt64(n))) }
        let list = table.listInRegistrationOrder(where: { $0.id.rawValue % 2 == 0 })
        let kept: [UInt64] = (0..<3000).filter { (n: UInt64) in n % 3 != 0 }
        // registeredAt is 10,000 - n: the last registered first.
        XCTAssertEqual(list.map(\.id.rawValue), kept.filter { (n: UInt64) in n % 2 == 0 }.reversed())
        XCTAssertEqual(Set(table.frozen.map(\.id.rawValue)), Set(kept))
        XCTAssertEqual(table.frozen.count, 2000)
    }

    func testVacantSlotsAreFilledBeforeTheTableGrows() {
        var table = filled(2048)
        for n in 0..<100 { table.delete(SessionID(rawValue: UInt64(n))) }
        XCTAssertEqual(table.slotCount, 2048)
        for n in 5000..<5100 { table.upsert(s(UInt64(n))) }
        XCTAssertEqual(table.slotCount, 2048, "the new sessions took the vacant slots")
        XCTAssertEqual(table.count, 2048)
        for n in 5000..<5100 { XCTAssertEqual(table[SessionID(rawValue: UInt64(n))], s(UInt64(n))) }
        XCTAssertNil(table[SessionID(rawValue: 5)])
        XCTAssertEqual(table.frozen.count, 2048)
        XCTAssertEqual(Set(table.frozen.map(\.id)).count, 2048)
    }

    func testMoreThanHalfVacantCompactsOnceNoCopySharesTheChunks() {
        var table = filled(4096)
        do {
            let frozen = table.frozen
            for n in 0..<3000 { table.delete(SessionID(rawValue: UInt64(n))) }
            XCTAssertEqual(table.slotCount, 4096, "no compaction while a copy is alive")
            XCTAssertEqual(frozen.count, 4096)
            XCTAssertEqual(Array(frozen).count, 4096)
        }
        table.delete(SessionID(rawValue: 3000))
        XCTAssertEqual(table.slotCount, 1095, "compacted to the sessions left")
        XCTAssertEqual(table.chunkAddresses.count, 2)
        for n in 0..<4096 {
            XCTAssertEqual(table[SessionID(rawValue: UInt64(n))], n > 3000 ? s(UInt64(n)) : nil, "session \(n)")
        }
        XCTAssertEqual(table.count(ownedBy: 0), 1095)
        XCTAssertEqual(table.endpointUsage, [["auth"]: 1095])
        table.upsert(s(9999))
        XCTAssertEqual(table.slotCount, 1096)
        let left: [UInt64] = Array(3001..<4096) + [9999]
        XCTAssertEqual(Set(table.frozen.map(\.id.rawValue)), Set(left))
    }

    func testRemovingTheLastSessionAndAddingAgainKeepsEverythingConsistent() {
        var table = SessionTable()
        for round in 0..<3 {
            for n in 0..<1500 { table.upsert(s(UInt64(n))) }
            XCTAssertEqual(table.count, 1500, "round \(round)")
            for n in 0..<1500 { XCTAssertNotNil(table.remove(SessionID(rawValue: UInt64(n)))) }
            XCTAssertEqual(table.count, 0)
            XCTAssertEqual(Array(table.frozen), [])
        }
        XCTAssertLessThanOrEqual(table.slotCount, 1500)
    }
}
