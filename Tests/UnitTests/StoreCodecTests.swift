import XCTest

@testable import Sessions

final class StoreCodecTests: XCTestCase {
    private func sample(_ n: UInt64 = 1) -> Session {
        Session(
            id: SessionID(rawValue: 0xDEAD_BEEF_0000_0000 | n), key: SessionKey("key-ü-\(n)"),
            endpoints: ["https://a.example.invalid/end?x=1", "https://b.example.invalid/ünïcode"],
            ownerUID: 4_000_000_000, label: "label \(n) 🚀", registeredAt: 1_700_000_000_000_000 + n,
            attempts: 3, lastOutcome: "HTTP 503")
    }

    private func roundTrip(_ record: StoreRecord) throws -> StoreRecord {
        var w = ByteWriter()
        record.encode(into: &w)
        return try w.bytes.withUnsafeBytes { raw in
            var r = ByteReader(raw)
            guard case .record(let decoded) = try StoreRecord.decode(&r) else {
                XCTFail("unknown tag")
                return record
            }
            XCTAssertEqual(r.offset, raw.count, "decoder must consume exactly the encoded bytes")
            return decoded
        }
    }

    func testEveryRecordKindRoundTripsThroughBinaryEncoding() throws {
        var minimal = sample()
        minimal.label = nil
        minimal.lastOutcome = nil
        minimal.endpoints = []
        minimal.attempts = -5
        let records: [StoreRecord] = [
            .register(sample()), .register(minimal), .remove(SessionID(rawValue: 7)),
            .outcome(SessionID(rawValue: 9), attempts: Int(Int64.max), lastOutcome: "ok"),
            .outcome(SessionID(rawValue: 9), attempts: 0, lastOutcome: nil),
            .snapshotHeader(SnapshotHeader(formatVersion: 2, lastSequence: 7, sessionCount: 42, createdAt: 99)),
            .snapshotHeader(SnapshotHeader(formatVersion: 1, lastSequence: 0, sessionCount: 42, createdAt: 99)),
            .snapshotEnd(sessionCount: 42),
            .logHeader(LogHeader(formatVersion: 2, snapshotSequence: .max, snapshotSessions: 3, createdAt: 1)),
        ]
        for r in records { XCTAssertEqual(try roundTrip(r), r) }
    }

    func testVarintRoundTripsBoundaryValues() throws {
        for v: UInt64 in [0, 1, 127, 128, 16383, 16384, UInt64(UInt32.max), UInt64.max] {
            var w = ByteWriter()
            w.varint(v)
            let back = try w.bytes.withUnsafeBytes { raw in
                var r = ByteReader(raw)
                return try r.varint()
            }
            XCTAssertEqual(back, v)
        }
        for v: Int64 in [0, -1, 1, Int64.min, Int64.max] {
            var w = ByteWriter()
            w.zigzag(v)
            XCTAssertEqual(
                try w.bytes.withUnsafeBytes { raw in
                    var r = ByteReader(raw)
                    return try r.zigzag()
                }, v)
        }
    }

    func testTruncatedRecordFailsWithOffsetInsteadOfCrashing() {
        var w = ByteWriter()
        StoreRecord.register(sample()).encode(into: &w)
        for cut in 0..<w.bytes.count {
            let prefix = Array(w.bytes[0..<cut])
            prefix.withUnsafeBytes { raw in
                var r = ByteReader(raw)
                do throws(DecodeError) {
                    _ = try StoreRecord.decode(&r)
                    XCTFail("decoding \(cut) of \(w.bytes.count) bytes should fail")
                } catch {
                    XCTAssertLessThanOrEqual(error.offset, cut)
                }
            }
        }
    }

    func testFrameScanFindsAllGoodFramesAndResyncsPastDamage() {
        var file: [UInt8] = []
        var w = ByteWriter()
        for i in 0..<3 {
            w.bytes.removeAll()
            StoreRecord.register(sample(UInt64(i))).encode(into: &w)
            w.bytes.withUnsafeBytes { StoreFrame.append(stamp: 5, recordCount: 1, records: $0, to: &file) }
        }
        let clean = file.withUnsafeBytes { StoreFrame.scan($0) }
        XCTAssertEqual(clean.frames.count, 3)
        XCTAssertTrue(clean.damage.isEmpty)
        XCTAssertEqual(clean.goodEnd, file.count)
        XCTAssertEqual(clean.frames.map(\.stamp), [5, 5, 5])

        // Damage the second frame's payload: first and third survive, the damage is mid-file.
        let second = clean.frames[1]
        file[second.offset + 30] ^= 0x40
        let damaged = file.withUnsafeBytes { StoreFrame.scan($0) }
        XCTAssertEqual(damaged.frames.map(\.offset), [clean.frames[0].offset, clean.frames[2].offset])
        XCTAssertEqual(damaged.damage.count, 1)
        XCTAssertEqual(damaged.damage[0].start, second.offset)
        XCTAssertEqual(damaged.damage[0].end, clean.frames[2].offset)
        XCTAssertFalse(damaged.damage[0].reachesEnd)
        XCTAssertTrue(damaged.damage[0].reason.contains("CRC"), damaged.damage[0].reason)
    }

    func testFrameMagicCannotAppearInsideUTF8Strings() {
        // 0xFF and 0xFE are never valid UTF-8, so a client cannot embed a frame in a string field.
        let hostile = String(decoding: [0xFF, 0x53, 0x43, 0xFE], as: UTF8.self)
        XCTAssertFalse(Array(hostile.utf8).contains(0xFF))
        XCTAssertFalse(Array(hostile.utf8).contains(0xFE))
    }

    func testSnapshotEncoderPutsEachSessionInAFrameOfItsOwn() {
        let sessions = (1...5).map { sample(UInt64($0)) }
        let bytes = SnapshotEncoder.encode(sessions, count: 5, lastSequence: 9, createdAt: 1)
        let scan = bytes.withUnsafeBytes { StoreFrame.scan($0) }
        XCTAssertTrue(scan.damage.isEmpty)
        XCTAssertEqual(scan.frames.count, 7, "header, one frame per session, end")
        XCTAssertEqual(Set(scan.frames.map(\.stamp)), [9], "every frame carries the snapshot's last sequence")
        XCTAssertEqual(scan.frames.map(\.recordCount), [1, 1, 1, 1, 1, 1, 1])
    }

    func testCompactionPolicyThresholds() {
        let p = CompactionPolicy()
        XCTAssertFalse(p.shouldCompact(logBytes: 1000, snapshotBytes: 10))
        XCTAssertTrue(p.shouldCompact(logBytes: 70 << 10, snapshotBytes: 10))
        XCTAssertFalse(p.shouldCompact(logBytes: 3 << 20, snapshotBytes: 10 << 20))
        XCTAssertTrue(p.shouldCompact(logBytes: 5 << 20, snapshotBytes: 10 << 20))
    }
}
