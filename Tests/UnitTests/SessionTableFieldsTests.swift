import XCTest

@testable import Sessions

/// The table kept field by field: what goes in comes out the same, keys are zeroed when they
/// go, and the fields a run reads from a list are the sessions'.
final class SessionTableFieldsTests: XCTestCase {
    private func varied(_ n: UInt64) -> Session {
        let keys = [
            "k\(n)", "a-key-longer-than-fifteen-bytes-\(n)", "ключ-\(n)-🔑", String(repeating: "x", count: 200) + "\(n)",
        ]
        let lists: [[String]] = [["auth"], ["auth", "licence"], [], ["licence", "auth", "billing"]]
        return Session(
            id: SessionID(rawValue: n &* 0x9E37_79B9_7F4A_7C15), key: SessionKey(keys[Int(n % 4)]),
            endpoints: lists[Int(n % 4)], ownerUID: UInt32(n % 5), label: n % 3 == 0 ? "label \(n)" : nil,
            registeredAt: 1_000_000 + n / 2, attempts: n % 7 == 0 ? Int(n) : 0,
            lastOutcome: n % 11 == 0 ? "HTTP 503 after \(n) attempts" : nil)
    }

    /// Session `n` with key `secret`.
    private func keyed(_ n: UInt64, _ secret: String) -> Session {
        Session(id: SessionID(rawValue: n), key: SessionKey(secret), endpoints: ["a"], ownerUID: 0, registeredAt: n)
    }

    func testEveryFieldComesBackAsItWentInFromTheTableItsFrozenCopyAndAList() throws {
        var table = SessionTable()
        let sessions = (UInt64(0)..<3000).map(varied)
        for session in sessions { table.upsert(session) }
        for session in sessions { XCTAssertEqual(table[session.id], session) }
        XCTAssertEqual(Set(table.frozen.map(\.id)), Set(sessions.map(\.id)))
        for session in table.frozen { XCTAssertEqual(session, table[session.id]) }

        let ordered = sessions.sorted { ($0.registeredAt, $0.id.rawValue) < ($1.registeredAt, $1.id.rawValue) }
        let list = table.listInRegistrationOrder()
        XCTAssertEqual(Array(list), ordered)
        for (i, session) in ordered.enumerated() {
            XCTAssertEqual(list.id(at: i), session.id)
            XCTAssertEqual(list.key(at: i), session.key)
            XCTAssertEqual(list.key(at: i).exposedSecret, session.key.exposedSecret)
            XCTAssertEqual(list.endpoints(at: i), session.endpoints)
            XCTAssertEqual(list.endpointCount(at: i), session.endpoints.count)
            XCTAssertEqual(list.ownerUID(at: i), session.ownerUID)
            XCTAssertEqual(list.label(at: i), session.label)
            XCTAssertEqual(list.attempts(at: i), session.attempts)
        }
        XCTAssertEqual(list.callCount, sessions.reduce(0) { $0 + $1.endpoints.count })

        // A list made from an array reads the same.
        let fromArray = SessionList(sessions)
        XCTAssertEqual(Array(fromArray), sessions)
        XCTAssertEqual(fromArray.callCount, list.callCount)
        XCTAssertEqual((0..<sessions.count).map { fromArray.key(at: $0) }, sessions.map(\.key))
        XCTAssertEqual(SessionList([]).count, 0)
    }

    func testUpdateChangesOnlyWhatTheClosureChangesAndKeepsTheKey() throws {
        var table = SessionTable()
        for n in UInt64(0)..<50 { table.upsert(varied(n)) }
        let id = varied(5).id
        let updated = try XCTUnwrap(
            table.update(id) {
                $0.attempts += 3
                $0.lastOutcome = "timeout"
                $0.label = "changed"
                $0.endpoints = ["other"]
            })
        var expected = varied(5)
        expected.attempts += 3
        expected.lastOutcome = "timeout"
        expected.label = "changed"
        expected.endpoints = ["other"]
        XCTAssertEqual(updated, expected)
        XCTAssertEqual(table[id], expected)
        XCTAssertEqual(table.endpointUsage[["other"]], 1)
        // Back to no extra fields at all.
        table.update(id) {
            $0.attempts = 0
            $0.lastOutcome = nil
            $0.label = nil
        }
        XCTAssertNil(table[id]?.label)
        XCTAssertEqual(table[id]?.attempts, 0)
        XCTAssertEqual(table[id]?.key, varied(5).key)
        for n in UInt64(0)..<50 where n != 5 { XCTAssertEqual(table[varied(n).id], varied(n)) }
    }

    func testLongKeysAndLabelsShareTheRecordAndALabelChangeKeepsTheKey() throws {
        var table = SessionTable()
        let key = String(repeating: "k", count: 200)
        let label = String(repeating: "é", count: 150)  // 300 bytes: a two-byte length
        var session = keyed(1, key)
        session.label = label
        table.upsert(session)
        table.upsert(keyed(2, "short"))
        XCTAssertEqual(table[SessionID(rawValue: 1)], session)
        for newLabel in [nil, "", "x", label] {
            table.update(SessionID(rawValue: 1)) { $0.label = newLabel }
            session.label = newLabel
            XCTAssertEqual(table[SessionID(rawValue: 1)], session, "label \(newLabel ?? "nil")")
            XCTAssertEqual(table[SessionID(rawValue: 2)], keyed(2, "short"))
        }
        let list = table.listInRegistrationOrder()
        XCTAssertEqual(list.label(at: 0), label)
        XCTAssertNil(list.label(at: 1))
        XCTAssertEqual(list.key(at: 0).exposedSecret, key)
    }

    func testARemovedSessionsKeyBytesAreZeroedAtOnceWhenNoCopySharesThem() throws {
        var table = SessionTable()
        let secret = "secret-key-0123456789-abcdef"
        let session = Session(
            id: SessionID(rawValue: 7), key: SessionKey(secret), endpoints: ["auth"], ownerUID: 0, registeredAt: 1)
        table.upsert(session)
        for n in UInt64(100)..<110 { table.upsert(varied(n)) }
        XCTAssertTrue(table.keyBuffersContain(Array(secret.utf8)))
        let slot = try XCTUnwrap(table.slot(of: session.id))
        XCTAssertTrue(table.delete(session.id))
        XCTAssertFalse(table.keyBuffersContain(Array(secret.utf8)), "the key's bytes are gone")
        XCTAssertEqual(table.withKeyBytes(ofSlot: slot) { $0.count }, 0)
        for n in UInt64(100)..<110 { XCTAssertEqual(table[varied(n).id], varied(n)) }
    }

    func testAKeyRemovedWhileAListSharesTheChunkIsZeroedByTheFirstRemovalAfterTheListIsGone() {
        var table = SessionTable()
        let secret = "shared-secret-key-xyz-987654321"
        table.upsert(keyed(1, secret))
        for n in UInt64(100)..<110 { table.upsert(varied(n)) }
        do {
            let list = table.listInRegistrationOrder()
            table.delete(SessionID(rawValue: 1))
            // The list still reads it: its bytes could not be touched.
            XCTAssertEqual(list.key(at: 0).exposedSecret, secret)
            XCTAssertTrue(table.keyBuffersContain(Array(secret.utf8)))
        }
        table.delete(varied(100).id)
        XCTAssertFalse(table.keyBuffersContain(Array(secret.utf8)))
        XCTAssertEqual(table.count, 9)
    }

    func testARefilledSlotsOldKeyIsZeroedEvenIfItsRemovalCouldNotClearIt() {
        var table = SessionTable()
        let secret = "old-key-of-a-refilled-slot-123456"
        table.upsert(keyed(1, secret))
        let list = table.listInRegistrationOrder()
        table.delete(SessionID(rawValue: 1))
        table.upsert(varied(2))  // takes the vacant slot while the list still shares the chunk
        XCTAssertEqual(list.key(at: 0).exposedSecret, secret)
        XCTAssertFalse(table.keyBuffersContain(Array(secret.utf8)), "the table's own (copied) chunk has no old key")
        XCTAssertEqual(table[varied(2).id], varied(2))
    }

    func testReplacingKeysOverAndOverKeepsTheKeyBuffersSmall() {
        var table = SessionTable()
        let long = String(repeating: "k", count: 100)
        for round in 0..<100 {
            for n in UInt64(0)..<100 {
                table.upsert(
                    Session(
                        id: SessionID(rawValue: n), key: SessionKey("\(long)-\(round)"), endpoints: ["a"], ownerUID: 0,
                        registeredAt: n))
            }
        }
        XCTAssertEqual(table.count, 100)
        XCTAssertEqual(table[SessionID(rawValue: 42)]?.key.exposedSecret, "\(long)-99")
        // 100 live keys of ~105 bytes: garbage is given back once it is more than half.
        XCTAssertLessThan(table.keyBytesUsed, 4 * 100 * 106 + 4096)
        XCTAssertFalse(table.keyBuffersContain(Array("\(long)-98".utf8)))
    }

    func testEndpointListNumbersAreGivenBackAndUsedAgainWithTrueCounts() {
        var table = SessionTable()
        func session(_ n: UInt64, _ endpoints: [String]) -> Session {
            Session(
                id: SessionID(rawValue: n), key: SessionKey("k"), endpoints: endpoints, ownerUID: 0, registeredAt: n)
        }
        for n in UInt64(0)..<10 { table.upsert(session(n, ["a"])) }
        for n in UInt64(10)..<15 { table.upsert(session(n, ["b", "c"])) }
        for n in UInt64(0)..<10 { table.delete(SessionID(rawValue: n)) }
        XCTAssertEqual(table.endpointUsage, [["b", "c"]: 5])
        for n in UInt64(20)..<23 { table.upsert(session(n, ["d"])) }
        XCTAssertEqual(table.endpointUsage, [["b", "c"]: 5, ["d"]: 3])
        for n in UInt64(20)..<23 { XCTAssertEqual(table[SessionID(rawValue: n)]?.endpoints, ["d"]) }
        for n in UInt64(10)..<15 { XCTAssertEqual(table[SessionID(rawValue: n)]?.endpoints, ["b", "c"]) }
        table.upsert(session(10, ["a"]))
        XCTAssertEqual(table.endpointUsage, [["b", "c"]: 4, ["d"]: 3, ["a"]: 1])
    }

    func testTheIndexReusesItsBucketsWhenSessionsComeAndGo() {
        var table = SessionTable()
        for n in UInt64(0)..<5000 { table.upsert(varied(n)) }
        let capacity = table.indexCapacity
        XCTAssertEqual(capacity, 8192, "4-byte buckets, at most 3/4 full")
        for round in UInt64(1)...5 {
            for n in UInt64(0)..<5000 { XCTAssertTrue(table.delete(varied(n + (round - 1) * 5000).id)) }
            for n in UInt64(0)..<5000 { table.upsert(varied(n + round * 5000)) }
            XCTAssertEqual(table.count, 5000)
            XCTAssertLessThanOrEqual(table.indexCapacity, capacity, "round \(round)")
        }
        for n in UInt64(25000)..<30000 { XCTAssertEqual(table[varied(n).id], varied(n)) }
        XCTAssertNil(table[varied(0).id])
    }

    func testNoDescriptionOrReflectionOfTheTableOrAListShowsAKey() {
        var table = SessionTable()
        let secret = "do-not-print-me-please-42"
        table.upsert(keyed(1, secret))
        let list = table.listInRegistrationOrder()
        var dumped = ""
        dump(table, to: &dumped)
        dump(list, to: &dumped)
        let texts = [
            dumped, String(describing: table), String(reflecting: table), String(describing: list),
            String(reflecting: list), "\(list[0])", String(reflecting: list[0]),
        ]
        // The secret's bytes as text, and as the decimal numbers an array of bytes prints.
        let decimal = Array(secret.utf8).prefix(4).map(String.init).joined(separator: ", ")
        for text in texts {
            XCTAssertFalse(text.contains(secret), text)
            XCTAssertFalse(text.contains(decimal), text)
        }
    }
}
