/// Binary encoding of store records (little-endian, LEB128 varints for lengths).
///
/// Session encoding: id u64 | key str | endpointCount varint | endpoints str* | ownerUID u32 |
/// label opt-str | registeredAt u64 | attempts zigzag-varint | lastOutcome opt-str.
/// `str` = varint byte length + UTF-8 bytes; `opt-str` = u8 flag (0 absent, 1 present) + str.

/// A failure to decode bytes; `offset` is relative to the start of the buffer being decoded.
struct DecodeError: Error, Sendable {
    /// Byte offset within the decoded buffer.
    var offset: Int
    /// What was wrong (static text, never contains data).
    var reason: StaticString
}

/// Appends encoded values to a byte array.
struct ByteWriter {
    var bytes: [UInt8] = []

    init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u32(_ v: UInt32) {
        withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) }
    }
    mutating func u64(_ v: UInt64) {
        withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) }
    }
    mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }
    mutating func zigzag(_ v: Int64) { varint(UInt64(bitPattern: (v << 1) ^ (v >> 63))) }
    mutating func string(_ s: String) {
        let utf8 = s.utf8
        varint(UInt64(utf8.count))
        bytes.append(contentsOf: utf8)
    }
    mutating func optionalString(_ s: String?) {
        if let s {
            u8(1)
            string(s)
        } else {
            u8(0)
        }
    }
}

/// Reads encoded values from a raw buffer, bounds-checked; throws `DecodeError` with the offset.
struct ByteReader {
    let buffer: UnsafeRawBufferPointer
    var offset: Int
    let end: Int

    init(_ buffer: UnsafeRawBufferPointer, offset: Int = 0, end: Int? = nil) {
        self.buffer = buffer
        self.offset = offset
        self.end = end ?? buffer.count
    }

    var remaining: Int { end - offset }

    mutating func u8() throws(DecodeError) -> UInt8 {
        guard offset < end else { throw DecodeError(offset: offset, reason: "unexpected end of record") }
        defer { offset += 1 }
        return buffer[offset]
    }
    mutating func u32() throws(DecodeError) -> UInt32 {
        guard end - offset >= 4 else { throw DecodeError(offset: offset, reason: "unexpected end of record") }
        defer { offset += 4 }
        return UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }
    mutating func u64() throws(DecodeError) -> UInt64 {
        guard end - offset >= 8 else { throw DecodeError(offset: offset, reason: "unexpected end of record") }
        defer { offset += 8 }
        return UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }
    mutating func varint() throws(DecodeError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let start = offset
            let b = try u8()
            if shift == 63 && b > 1 { throw DecodeError(offset: start, reason: "varint overflows 64 bits") }
            result |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 { return result }
            shift += 7
            if shift > 63 { throw DecodeError(offset: start, reason: "varint overflows 64 bits") }
        }
    }
    mutating func zigzag() throws(DecodeError) -> Int64 {
        let u = try varint()
        return Int64(bitPattern: (u >> 1) ^ (0 &- (u & 1)))
    }
    mutating func length() throws(DecodeError) -> Int {
        let start = offset
        let n = try varint()
        guard n <= UInt64(remaining) else { throw DecodeError(offset: start, reason: "length exceeds record") }
        return Int(n)
    }
    mutating func string() throws(DecodeError) -> String {
        let n = try length()
        let s = String(decoding: UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + n]), as: UTF8.self)
        offset += n
        return s
    }
    mutating func optionalString() throws(DecodeError) -> String? {
        let start = offset
        switch try u8() {
        case 0: return nil
        case 1: return try string()
        default: throw DecodeError(offset: start, reason: "bad optional-string flag")
        }
    }
}

/// One change or marker in the log or snapshot.
enum StoreRecord: Equatable, Sendable {
    /// A session was registered (or, in a snapshot, exists).
    case register(Session)
    /// A session was removed.
    case remove(SessionID)
    /// An end attempt finished; carries the resulting absolute values so replay is idempotent.
    case outcome(SessionID, attempts: Int, lastOutcome: String?)
    /// First record of a snapshot.
    case snapshotHeader(formatVersion: UInt32, sessionCount: UInt64, createdAt: UInt64)
    /// Last record of a snapshot.
    case snapshotEnd(sessionCount: UInt64)

    static let registerTag: UInt8 = 1
    static let removeTag: UInt8 = 2
    static let outcomeTag: UInt8 = 3
    static let snapshotHeaderTag: UInt8 = 0x10
    static let snapshotEndTag: UInt8 = 0x11

    func encode(into w: inout ByteWriter) {
        switch self {
        case .register(let s):
            w.u8(Self.registerTag)
            Self.encodeSession(s, into: &w)
        case .remove(let id):
            w.u8(Self.removeTag)
            w.u64(id.rawValue)
        case .outcome(let id, let attempts, let lastOutcome):
            w.u8(Self.outcomeTag)
            w.u64(id.rawValue)
            w.zigzag(Int64(attempts))
            w.optionalString(lastOutcome)
        case .snapshotHeader(let version, let count, let createdAt):
            w.u8(Self.snapshotHeaderTag)
            w.u32(version)
            w.u64(count)
            w.u64(createdAt)
        case .snapshotEnd(let count):
            w.u8(Self.snapshotEndTag)
            w.u64(count)
        }
    }

    static func encodeSession(_ s: Session, into w: inout ByteWriter) {
        w.u64(s.id.rawValue)
        w.string(s.key.exposedSecret)
        w.varint(UInt64(s.endpoints.count))
        for e in s.endpoints { w.string(e) }
        w.u32(s.ownerUID)
        w.optionalString(s.label)
        w.u64(s.registeredAt)
        w.zigzag(Int64(s.attempts))
        w.optionalString(s.lastOutcome)
    }

    static func decodeSession(_ r: inout ByteReader) throws(DecodeError) -> Session {
        let id = SessionID(rawValue: try r.u64())
        let key = SessionKey(try r.string())
        let countOffset = r.offset
        let count = try r.varint()
        // Each endpoint takes at least one byte, so a larger count is corrupt.
        guard count <= UInt64(r.remaining) else {
            throw DecodeError(offset: countOffset, reason: "endpoint count exceeds record")
        }
        var endpoints: [String] = []
        endpoints.reserveCapacity(Int(count))
        for _ in 0..<count { endpoints.append(try r.string()) }
        let uid = try r.u32()
        let label = try r.optionalString()
        let registeredAt = try r.u64()
        let attempts = Int(try r.zigzag())
        let lastOutcome = try r.optionalString()
        return Session(
            id: id, key: key, endpoints: endpoints, ownerUID: uid, label: label,
            registeredAt: registeredAt, attempts: attempts, lastOutcome: lastOutcome)
    }

    /// Result of decoding one record: a record, or an unknown tag (format from a newer version).
    enum Decoded {
        case record(StoreRecord)
        case unknownTag(UInt8)
    }

    /// Walks over one encoded record without allocating, checking every length against the
    /// buffer. Returns the tag; `known` is false for a tag this version does not understand.
    static func skip(_ r: inout ByteReader) throws(DecodeError) -> (tag: UInt8, known: Bool) {
        func skipString(_ r: inout ByteReader) throws(DecodeError) { r.offset += try r.length() }
        func skipOptionalString(_ r: inout ByteReader) throws(DecodeError) {
            let start = r.offset
            switch try r.u8() {
            case 0: return
            case 1: try skipString(&r)
            default: throw DecodeError(offset: start, reason: "bad optional-string flag")
            }
        }
        let tag = try r.u8()
        switch tag {
        case registerTag:
            _ = try r.u64()
            try skipString(&r)
            let countOffset = r.offset
            let count = try r.varint()
            guard count <= UInt64(r.remaining) else {
                throw DecodeError(offset: countOffset, reason: "endpoint count exceeds record")
            }
            for _ in 0..<count { try skipString(&r) }
            _ = try r.u32()
            try skipOptionalString(&r)
            _ = try r.u64()
            _ = try r.zigzag()
            try skipOptionalString(&r)
        case removeTag: _ = try r.u64()
        case outcomeTag:
            _ = try r.u64()
            _ = try r.zigzag()
            try skipOptionalString(&r)
        case snapshotHeaderTag:
            _ = try r.u32()
            _ = try r.u64()
            _ = try r.u64()
        case snapshotEndTag: _ = try r.u64()
        default: return (tag, false)
        }
        return (tag, true)
    }

    static func decode(_ r: inout ByteReader) throws(DecodeError) -> Decoded {
        let tag = try r.u8()
        switch tag {
        case registerTag: return .record(.register(try decodeSession(&r)))
        case removeTag: return .record(.remove(SessionID(rawValue: try r.u64())))
        case outcomeTag:
            let id = SessionID(rawValue: try r.u64())
            let attempts = Int(try r.zigzag())
            let last = try r.optionalString()
            return .record(.outcome(id, attempts: attempts, lastOutcome: last))
        case snapshotHeaderTag:
            let v = try r.u32()
            let c = try r.u64()
            let t = try r.u64()
            return .record(.snapshotHeader(formatVersion: v, sessionCount: c, createdAt: t))
        case snapshotEndTag: return .record(.snapshotEnd(sessionCount: try r.u64()))
        default: return .unknownTag(tag)
        }
    }
}
