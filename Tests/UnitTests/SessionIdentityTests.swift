import XCTest

@testable import Sessions

final class SessionIDTests: XCTestCase {
    func testValidatingAcceptsExactlySixteenLowercaseHexCharacters() {
        XCTAssertEqual(SessionID(validating: "0123456789abcdef")?.rawValue, 0x0123_4567_89AB_CDEF)
        XCTAssertEqual(SessionID(validating: "ffffffffffffffff")?.rawValue, UInt64.max)
        for bad in [
            "", "0123456789abcde", "0123456789abcdef0", "0123456789ABCDEF", "0123456789abcdeg",
            " 123456789abcdef", "0123456789abcdé", "0x23456789abcdef",
        ] {
            XCTAssertNil(SessionID(validating: bad), bad)
        }
    }

    func testRandomIDsAreValidDistinctAndRoundTripThroughText() {
        var seen = Set<SessionID>()
        for _ in 0..<1000 {
            let id = SessionID.random()
            XCTAssertEqual(id.description.count, 16)
            XCTAssertEqual(SessionID(validating: id.description), id)
            seen.insert(id)
        }
        XCTAssertEqual(seen.count, 1000)
        XCTAssertEqual(SessionID(rawValue: 0xAB).description, "00000000000000ab")
    }
}

final class SessionKeyRedactionTests: XCTestCase {
    let secret = "s3cr3t-TOKEN-value-0987"

    func testKeyNeverPrintsItsSecretThroughAnyDescriptionPath() {
        let key = SessionKey(secret)
        var dumped = ""
        dump(key, to: &dumped)
        let renderings = [
            key.description, key.debugDescription, "\(key)", String(describing: key), String(reflecting: key),
            dumped, "\(Mirror(reflecting: key).children.map { "\($0.label ?? ""):\($0.value)" })",
        ]
        for r in renderings {
            XCTAssertFalse(r.contains(secret), r)
            XCTAssertFalse(r.contains("s3cr3t"), r)
        }
        XCTAssertEqual(key.description, "<redacted>")
        XCTAssertEqual(key.debugDescription, "<redacted>")
        XCTAssertTrue(Mirror(reflecting: key).children.isEmpty)
    }

    func testSessionContainingKeyDoesNotPrintTheSecret() {
        let s = Session(
            id: .random(), key: SessionKey(secret), endpoints: ["https://example.invalid/end"], ownerUID: 1000,
            label: "x", registeredAt: 1)
        var dumped = ""
        dump(s, to: &dumped)
        for r in ["\(s)", String(reflecting: s), dumped, "\([s])"] {
            XCTAssertFalse(r.contains(secret), r)
            XCTAssertTrue(r.contains("<redacted>"), r)
        }
    }

    func testNoEncoderCanWriteTheSecret() {
        // Not Codable on purpose: the store and the protocol read and write the key explicitly.
        let key: Any = SessionKey(secret)
        let session: Any = Session(id: .random(), key: SessionKey(secret), endpoints: [], ownerUID: 0, registeredAt: 0)
        XCTAssertFalse(key is any Encodable)
        XCTAssertFalse(session is any Encodable)
        XCTAssertFalse(key is any Decodable)
    }

    func testKeyEqualityComparesContents() {
        XCTAssertEqual(SessionKey("abc"), SessionKey("abc"))
        XCTAssertNotEqual(SessionKey("abc"), SessionKey("abd"))
        XCTAssertNotEqual(SessionKey("abc"), SessionKey("abcd"))
    }
}
