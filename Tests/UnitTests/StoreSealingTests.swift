import XCTest

@testable import Sessions

/// The sealing of session keys at rest (CSealing's AES-256-GCM, through ``StoreKey`` and
/// ``SealedSessionKey``): what seals opens with the same key and record, and nothing else does.
final class StoreSealingTests: XCTestCase {
    private func randomKey() -> StoreKey {
        StoreKey(bytes: (0..<StoreKey.byteCount).map { _ in UInt8.random(in: 0...255) })!
    }

    private func sealed(_ text: String, with key: StoreKey, aad: [UInt8] = [1, 2, 3]) -> [UInt8] {
        let plain = Array(text.utf8)
        return plain.withUnsafeBytes { key.seal($0, aad: aad) }!
    }

    private func opened(_ sealed: [UInt8], with key: StoreKey, aad: [UInt8] = [1, 2, 3]) -> String? {
        sealed.withUnsafeBytes { raw in key.open(raw, aad: aad) { String(decoding: $0, as: UTF8.self) } }
    }

    func testWhatIsSealedOpensWithTheSameKeyAndAAD() {
        let key = randomKey()
        for text in ["", "k", "a session key-ü-🚀", String(repeating: "x", count: 70_000)] {
            let box = sealed(text, with: key)
            XCTAssertEqual(box.count, text.utf8.count + 28, "nonce 12 + tag 16")
            XCTAssertEqual(opened(box, with: key), text)
        }
    }

    func testEachSealHasItsOwnNonceSoTheSameKeyNeverSealsAlike() {
        let key = randomKey()
        let first = sealed("same session key", with: key)
        let second = sealed("same session key", with: key)
        XCTAssertNotEqual(first, second)
        XCTAssertNotEqual(Array(first[0..<12]), Array(second[0..<12]))
        XCTAssertNil(first.firstRange(of: Array("same session key".utf8)), "no plaintext in the sealed bytes")
    }

    func testAnotherKeyDoesNotOpen() {
        let box = sealed("secret", with: randomKey())
        XCTAssertNil(opened(box, with: randomKey()))
    }

    func testEveryChangedByteAndEveryCutIsRefused() {
        let key = randomKey()
        let box = sealed("a session key", with: key)
        for i in box.indices {
            var tampered = box
            tampered[i] ^= 0x01
            XCTAssertNil(opened(tampered, with: key), "byte \(i) changed")
        }
        for length in 0..<box.count { XCTAssertNil(opened(Array(box[0..<length]), with: key), "cut to \(length)") }
    }

    func testAnotherAADDoesNotOpen() {
        let key = randomKey()
        let box = sealed("secret", with: key, aad: [9, 9])
        XCTAssertNil(opened(box, with: key, aad: [9, 8]))
        XCTAssertNil(opened(box, with: key, aad: []))
        XCTAssertEqual(opened(box, with: key, aad: [9, 9]), "secret")
    }

    func testASealedKeyMovedToAnotherSessionOrRecordTypeDoesNotOpen() {
        let key = randomKey()
        let a = SessionID(rawValue: 0xA)
        let b = SessionID(rawValue: 0xB)
        let tag = StoreRecord.sealedRegisterTag
        let box = SealedSessionKey.seal(SessionKey("key of a"), id: a, tag: tag, with: key)!
        box.withUnsafeBytes { raw in
            XCTAssertEqual(SealedSessionKey.open(raw, id: a, tag: tag, with: key), SessionKey("key of a"))
            XCTAssertNil(SealedSessionKey.open(raw, id: b, tag: tag, with: key), "moved to session b")
            XCTAssertNil(SealedSessionKey.open(raw, id: a, tag: StoreRecord.registerTag, with: key), "another type")
        }
    }

    func testAKeyMustBeExactly32BytesAndNeverPrintsThem() {
        XCTAssertNil(StoreKey(bytes: []))
        XCTAssertNil(StoreKey(bytes: [UInt8](repeating: 7, count: 31)))
        XCTAssertNil(StoreKey(bytes: [UInt8](repeating: 7, count: 33)))
        let key = StoreKey(bytes: [UInt8](repeating: 0x41, count: 32))!
        XCTAssertEqual("\(key)", "<redacted>")
        XCTAssertEqual(String(reflecting: key), "<redacted>")
        var dumped = ""
        dump(key, to: &dumped)
        XCTAssertFalse(dumped.contains("65") || dumped.contains("AAAA"), dumped)
    }

    func testASealedRegisterRecordRoundTripsWithItsKeyAndHoldsNoKeyInClear() throws {
        let key = randomKey()
        let session = Session(
            id: SessionID(rawValue: 0x5EA1), key: SessionKey("plain-session-key-123"), endpoints: ["auth", "licence"],
            ownerUID: 1000, label: "a label", registeredAt: 42, attempts: 2, lastOutcome: "HTTP 503")
        var w = ByteWriter()
        StoreRecord.register(session).encode(into: &w, sealingWith: key)
        XCTAssertEqual(w.bytes.first, StoreRecord.sealedRegisterTag)
        XCTAssertNil(w.bytes.firstRange(of: Array("plain-session-key-123".utf8)))
        try w.bytes.withUnsafeBytes { raw in
            var tally = KeyTally()
            var r = ByteReader(raw)
            guard case .record(.register(let decoded)) = try StoreRecord.decode(&r, opening: key, tally: &tally) else {
                return XCTFail("not a register record")
            }
            XCTAssertEqual(decoded, session)
            XCTAssertEqual(r.offset, raw.count)
            XCTAssertEqual(tally.opened, 1)

            for (storeKey, withoutKey) in [(nil, true), (randomKey(), false)] as [(StoreKey?, Bool)] {
                var tally = KeyTally()
                var r = ByteReader(raw)
                guard case .unopenable(let id) = try StoreRecord.decode(&r, opening: storeKey, tally: &tally) else {
                    return XCTFail("opened without its key")
                }
                XCTAssertEqual(id, session.id)
                XCTAssertEqual(r.offset, raw.count, "the rest of the record is read, so the next one is found")
                XCTAssertEqual(tally.unopenable.count, 1)
                XCTAssertEqual(tally.readWithoutKey, withoutKey)
            }
            var skipper = ByteReader(raw)
            XCTAssertEqual(try StoreRecord.skip(&skipper).known, true)
            XCTAssertEqual(skipper.offset, raw.count)
        }
    }
}
