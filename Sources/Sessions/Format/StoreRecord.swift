/// The first record of a snapshot: which format wrote it and how much it holds.
struct SnapshotHeader: Equatable, Sendable {
    /// 2 for this format; 1 for the first one (which had no commit sequence).
    var formatVersion: UInt32
    /// The sequence number of the last commit the snapshot contains (format 2; 0 in format 1).
    var lastSequence: UInt64
    /// Number of sessions that follow.
    var sessionCount: UInt64
    /// Wall-clock microseconds when it was written (for people).
    var createdAt: UInt64
}

/// The first record of a log (format 2): which snapshot the log continues.
struct LogHeader: Equatable, Sendable {
    /// 2.
    var formatVersion: UInt32
    /// `lastSequence` of the snapshot the log continues; its first commit is this plus one.
    var snapshotSequence: UInt64
    /// Sessions that snapshot holds, so that a lost snapshot is noticed with its size.
    var snapshotSessions: UInt64
    /// Wall-clock microseconds when the log was started (for people).
    var createdAt: UInt64
}

/// One change or marker in the log or the snapshot (docs/store-format.md, "Records").
enum StoreRecord: Equatable, Sendable {
    /// A session was registered (or, in a snapshot, exists), or replaced by a new version.
    case register(Session)
    /// A session was removed.
    case remove(SessionID)
    /// An end attempt finished; carries the resulting absolute values so replay is idempotent.
    case outcome(SessionID, attempts: Int, lastOutcome: String?)
    /// First record of a snapshot.
    case snapshotHeader(SnapshotHeader)
    /// Last record of a snapshot.
    case snapshotEnd(sessionCount: UInt64)
    /// First record of a log.
    case logHeader(LogHeader)

    static let registerTag: UInt8 = 0x01
    static let removeTag: UInt8 = 0x02
    static let outcomeTag: UInt8 = 0x03
    /// Format 1's snapshot header: version u32 | count u64 | createdAt u64.
    static let snapshotHeaderV1Tag: UInt8 = 0x10
    static let snapshotEndTag: UInt8 = 0x11
    /// Format 2's snapshot header: version u32 | lastSequence u64 | count u64 | createdAt u64. A new
    /// tag, so that format 1 readers refuse a format 2 store instead of misreading it.
    static let snapshotHeaderTag: UInt8 = 0x12
    static let logHeaderTag: UInt8 = 0x13

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
        case .snapshotHeader(let h) where h.formatVersion < 2:
            w.u8(Self.snapshotHeaderV1Tag)
            w.u32(h.formatVersion)
            w.u64(h.sessionCount)
            w.u64(h.createdAt)
        case .snapshotHeader(let h):
            w.u8(Self.snapshotHeaderTag)
            w.u32(h.formatVersion)
            w.u64(h.lastSequence)
            w.u64(h.sessionCount)
            w.u64(h.createdAt)
        case .snapshotEnd(let count):
            w.u8(Self.snapshotEndTag)
            w.u64(count)
        case .logHeader(let h):
            w.u8(Self.logHeaderTag)
            w.u32(h.formatVersion)
            w.u64(h.snapshotSequence)
            w.u64(h.snapshotSessions)
            w.u64(h.createdAt)
        }
    }

    /// id u64 | key str | endpointCount varint | endpoints str* | ownerUID u32 | label opt-str |
    /// registeredAt u64 | attempts zigzag | lastOutcome opt-str.
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
        case snapshotHeaderV1Tag:
            _ = try r.u32()
            _ = try r.u64()
            _ = try r.u64()
        case snapshotHeaderTag, logHeaderTag:
            _ = try r.u32()
            _ = try r.u64()
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
        case snapshotHeaderV1Tag:
            let version = try r.u32()
            let count = try r.u64()
            let createdAt = try r.u64()
            return .record(
                .snapshotHeader(
                    SnapshotHeader(formatVersion: version, lastSequence: 0, sessionCount: count, createdAt: createdAt)))
        case snapshotHeaderTag:
            let version = try r.u32()
            let last = try r.u64()
            let count = try r.u64()
            let createdAt = try r.u64()
            return .record(
                .snapshotHeader(
                    SnapshotHeader(
                        formatVersion: version, lastSequence: last, sessionCount: count, createdAt: createdAt)
                ))
        case logHeaderTag:
            let version = try r.u32()
            let sequence = try r.u64()
            let sessions = try r.u64()
            let createdAt = try r.u64()
            return .record(
                .logHeader(
                    LogHeader(
                        formatVersion: version, snapshotSequence: sequence, snapshotSessions: sessions,
                        createdAt: createdAt)))
        case snapshotEndTag: return .record(.snapshotEnd(sessionCount: try r.u64()))
        default: return .unknownTag(tag)
        }
    }
}
