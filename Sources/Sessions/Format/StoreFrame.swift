/// Framing shared by the log and the snapshot (docs/store-format.md, "Frames").
///
/// Frame = magic[4] | payloadLength u32 | crc32 u32 | payload.
/// `crc32` covers the 4 length bytes followed by the payload, so a damaged length is caught too.
/// Payload = stamp u64 | recordCount u32 | records. The stamp is the commit sequence number in a
/// log frame, the snapshot's last sequence in a snapshot frame (in format 1: the generation).
///
/// The magic is `FF 53 43 FE`. 0xFF and 0xFE never occur in valid UTF-8, so a frame cannot be
/// smuggled inside a client-supplied string (key, endpoint, label) and then "found" by resync.
enum StoreFrame {
    static let magic: (UInt8, UInt8, UInt8, UInt8) = (0xFF, 0x53, 0x43, 0xFE)
    static let headerSize = 12
    static let payloadPrefixSize = 12
    /// Largest payload a writer produces and a reader accepts.
    static let maxPayload = 16 << 20

    /// Appends one frame holding `recordCount` already-encoded records.
    static func append(
        stamp: UInt64, recordCount: Int, records: UnsafeRawBufferPointer, to out: inout [UInt8]
    ) {
        let payloadLength = payloadPrefixSize + records.count
        let start = out.count
        out.append(magic.0)
        out.append(magic.1)
        out.append(magic.2)
        out.append(magic.3)
        var w = ByteWriter()
        w.u32(UInt32(payloadLength))
        out.append(contentsOf: w.bytes)
        out.append(contentsOf: [0, 0, 0, 0])  // crc placeholder
        var p = ByteWriter(capacity: payloadPrefixSize)
        p.u64(stamp)
        p.u32(UInt32(recordCount))
        out.append(contentsOf: p.bytes)
        out.append(contentsOf: records)
        let crc = out.withUnsafeBytes { raw -> UInt32 in
            let lengthBytes = UnsafeRawBufferPointer(rebasing: raw[(start + 4)..<(start + 8)])
            let payload = UnsafeRawBufferPointer(rebasing: raw[(start + headerSize)...])
            return CRC32.update(CRC32.update(0, lengthBytes), payload)
        }
        withUnsafeBytes(of: crc.littleEndian) { c in
            for i in 0..<4 { out[start + 8 + i] = c[i] }
        }
    }

    /// A frame that passed every check.
    struct Scanned {
        /// Byte offset of the frame's magic within the file.
        var offset: Int
        /// Total bytes including the header.
        var size: Int
        /// Commit sequence (log), last sequence (snapshot), generation (format 1).
        var stamp: UInt64
        /// Number of records in the payload.
        var recordCount: Int
        /// File offsets of the first record and one past the last.
        var recordsStart: Int
        var recordsEnd: Int
    }

    /// Decodes the records of a frame that `check` accepted, handing each to `body` in order;
    /// sealed keys stay unopened (their records are skipped).
    static func forEachRecord(
        _ buf: UnsafeRawBufferPointer, _ frame: Scanned, _ body: (StoreRecord) -> Void
    ) throws(DecodeError) {
        var tally = KeyTally()
        try forEachRecord(buf, frame, opening: nil, tally: &tally, body)
    }

    /// Decodes the records of a frame that `check` accepted, opening sealed keys with
    /// `storeKey`, handing each record to `body` in order. A register record whose sealed key
    /// does not open is not handed on: `tally` notes it, and its frame's other records go on.
    static func forEachRecord(
        _ buf: UnsafeRawBufferPointer, _ frame: Scanned, opening storeKey: StoreKey?, tally: inout KeyTally,
        _ body: (StoreRecord) -> Void
    ) throws(DecodeError) {
        var r = ByteReader(buf, offset: frame.recordsStart, end: frame.recordsEnd)
        for _ in 0..<frame.recordCount {
            let start = r.offset
            switch try StoreRecord.decode(&r, opening: storeKey, tally: &tally) {
            case .record(let rec): body(rec)
            case .unopenable: continue
            case .unknownTag: throw DecodeError(offset: start, reason: "unknown record tag")
            }
        }
    }

    /// The records of an accepted frame as an array (for small frames and tests).
    static func records(_ buf: UnsafeRawBufferPointer, _ frame: Scanned) throws(DecodeError) -> [StoreRecord] {
        var out: [StoreRecord] = []
        try forEachRecord(buf, frame) { out.append($0) }
        return out
    }

    /// Bytes that could not be read as frames.
    struct Damage {
        /// First damaged byte.
        var start: Int
        /// One past the last damaged byte (the next good frame, or end of file).
        var end: Int
        /// Number (0-based) the next frame would have had.
        var frameNumber: Int
        /// Why the frame at `start` was rejected (no data contents).
        var reason: String
        /// True when no good frame follows (a torn or corrupt tail).
        var reachesEnd: Bool
    }

    /// Outcome of scanning a whole file.
    struct ScanResult {
        var frames: [Scanned] = []
        var damage: [Damage] = []
        /// Set when a CRC-valid frame holds a record tag this version does not know.
        var unknownTag: (offset: Int, tag: UInt8)?
        /// End of the last good frame.
        var goodEnd: Int = 0
        /// Number of good frames.
        var frameCount = 0
    }

    enum Check {
        case valid(Scanned)
        case invalid(String)
        case unsupported(offset: Int, tag: UInt8)
    }

    static func hex(_ v: UInt32) -> String {
        let s = String(v, radix: 16)
        return "0x" + String(repeating: "0", count: max(0, 8 - s.count)) + s
    }

    /// Validates the frame starting at `p`.
    static func check(_ buf: UnsafeRawBufferPointer, at p: Int) -> Check {
        let size = buf.count
        guard size - p >= headerSize else {
            return .invalid("incomplete frame header (\(size - p) of \(headerSize) bytes present)")
        }
        guard buf[p] == magic.0, buf[p + 1] == magic.1, buf[p + 2] == magic.2, buf[p + 3] == magic.3 else {
            return .invalid("bad frame magic")
        }
        let length = Int(UInt32(littleEndian: buf.loadUnaligned(fromByteOffset: p + 4, as: UInt32.self)))
        guard length >= payloadPrefixSize, length <= maxPayload else {
            return .invalid("frame length \(length) outside \(payloadPrefixSize)...\(maxPayload)")
        }
        guard size - p - headerSize >= length else {
            return .invalid(
                "frame needs \(length) payload bytes but only \(size - p - headerSize) remain in the file")
        }
        let stored = UInt32(littleEndian: buf.loadUnaligned(fromByteOffset: p + 8, as: UInt32.self))
        let payloadStart = p + headerSize
        let computed = CRC32.update(
            CRC32.update(0, UnsafeRawBufferPointer(rebasing: buf[(p + 4)..<(p + 8)])),
            UnsafeRawBufferPointer(rebasing: buf[payloadStart..<(payloadStart + length)]))
        guard stored == computed else {
            return .invalid("CRC mismatch (stored \(hex(stored)), computed \(hex(computed)))")
        }
        var r = ByteReader(buf, offset: payloadStart, end: payloadStart + length)
        do throws(DecodeError) {
            let stamp = try r.u64()
            let count = Int(try r.u32())
            guard count <= length else { return .invalid("record count \(count) exceeds frame size") }
            let recordsStart = r.offset
            for _ in 0..<count {
                let recordStart = r.offset
                let (tag, known) = try StoreRecord.skip(&r)
                if !known { return .unsupported(offset: recordStart, tag: tag) }
            }
            guard r.offset == r.end else {
                return .invalid("\(r.end - r.offset) unexpected bytes after the last record")
            }
            return .valid(
                Scanned(
                    offset: p, size: headerSize + length, stamp: stamp, recordCount: count,
                    recordsStart: recordsStart, recordsEnd: r.end))
        } catch {
            return .invalid("malformed record at byte \(error.offset): \(error.reason)")
        }
    }

    /// Scans a whole file: good frames in order, damaged regions (resynchronising on the magic),
    /// and the end of the last good frame.
    static func scan(_ buf: UnsafeRawBufferPointer) -> ScanResult {
        var frames: [Scanned] = []
        var result = scan(buf) { frames.append($0) }
        result.frames = frames
        return result
    }

    /// Scans a whole file, handing each good frame to `body` as it is found (`frames` of the
    /// result stays empty: a snapshot of many sessions needs no list of its frames).
    static func scan(_ buf: UnsafeRawBufferPointer, _ body: (Scanned) -> Void) -> ScanResult {
        var result = ScanResult()
        var p = 0
        let size = buf.count
        while p < size {
            switch check(buf, at: p) {
            case .valid(let frame):
                body(frame)
                result.frameCount += 1
                p += frame.size
                result.goodEnd = p
            case .unsupported(let offset, let tag):
                result.unknownTag = (offset, tag)
                return result
            case .invalid(let reason):
                var q = p + 1
                var found = false
                while q + headerSize <= size {
                    if buf[q] == magic.0, buf[q + 1] == magic.1, buf[q + 2] == magic.2, buf[q + 3] == magic.3,
                        case .valid = check(buf, at: q)
                    {
                        found = true
                        break
                    }
                    q += 1
                }
                let end = found ? q : size
                result.damage.append(
                    Damage(start: p, end: end, frameNumber: result.frameCount, reason: reason, reachesEnd: !found))
                p = end
            }
        }
        return result
    }
}

extension StoreFrame {
    /// Appends one frame holding the single record `record` (a key sealed with `storeKey`, if any).
    static func append(
        stamp: UInt64, record: StoreRecord, to out: inout [UInt8], scratch: inout ByteWriter,
        sealingWith storeKey: StoreKey? = nil
    ) {
        scratch.bytes.removeAll(keepingCapacity: true)
        record.encode(into: &scratch, sealingWith: storeKey)
        scratch.bytes.withUnsafeBytes { append(stamp: stamp, recordCount: 1, records: $0, to: &out) }
    }

    /// The only record of `frame`, if it has exactly one and it decodes.
    static func singleRecord(_ buf: UnsafeRawBufferPointer, _ frame: Scanned) -> StoreRecord? {
        guard frame.recordCount == 1, let records = try? records(buf, frame) else { return nil }
        return records.first
    }
}
