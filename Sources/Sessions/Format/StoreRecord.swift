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
    /// A register record whose key is sealed (docs/store-format.md, "Sealed keys"): written
    /// instead of ``registerTag`` when the store has a ``StoreKey``.
    static let sealedRegisterTag: UInt8 = 0x04
    static let removeTag: UInt8 = 0x02
    static let outcomeTag: UInt8 = 0x03
    /// Format 1's snapshot header: version u32 | count u64 | createdAt u64.
    static let snapshotHeaderV1Tag: UInt8 = 0x10
    static let snapshotEndTag: UInt8 = 0x11
    /// Format 2's snapshot header: version u32 | lastSequence u64 | count u64 | createdAt u64. A new
    /// tag, so that format 1 readers refuse a format 2 store instead of misreading it.
    static let snapshotHeaderTag: UInt8 = 0x12
    static let logHeaderTag: UInt8 = 0x13

    /// Appends the record; a register record's key is sealed with `storeKey` when there is one.
    func encode(into w: inout ByteWriter, sealingWith storeKey: StoreKey? = nil) {
        switch self {
        case .register(let s):
            w.u8(storeKey == nil ? Self.registerTag : Self.sealedRegisterTag)
            Self.encodeSession(s, into: &w, sealingWith: storeKey)
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
    /// registeredAt u64 | attempts zigzag | lastOutcome opt-str. With `storeKey`, the key's
    /// bytes are sealed (nonce ‖ ciphertext ‖ tag, behind the same varint length).
    static func encodeSession(_ s: Session, into w: inout ByteWriter, sealingWith storeKey: StoreKey? = nil) {
        w.u64(s.id.rawValue)
        if let storeKey {
            guard let sealed = SealedSessionKey.seal(s.key, id: s.id, tag: sealedRegisterTag, with: storeKey) else {
                // getrandom(2) does not fail once the pool is initialised, nor AES-GCM in memory: a
                // broken libcrypto. Never fall back to writing the key in clear.
                fatalError("sealing session \(s.id)'s key failed (getrandom or libcrypto): not writing it in clear")
            }
            w.varint(UInt64(sealed.count))
            w.bytes.append(contentsOf: sealed)
        } else {
            w.string(s.key.exposedSecret)
        }
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
        return try decodeSessionFields(&r, id: id, key: key)
    }

    /// A register record (`tag`: clear or sealed) after its type byte; nil for a sealed key that
    /// does not open under `storeKey` (or with none), which `tally` notes with `recordOffset`.
    static func decodeSession(
        _ r: inout ByteReader, tag: UInt8, opening storeKey: StoreKey?, tally: inout KeyTally, recordOffset: Int
    ) throws(DecodeError) -> Session? {
        let id = SessionID(rawValue: try r.u64())
        guard tag == sealedRegisterTag else {
            tally.clear += 1
            return try decodeSessionFields(&r, id: id, key: SessionKey(try r.string()))
        }
        let length = try r.length()
        let sealed = UnsafeRawBufferPointer(rebasing: r.buffer[r.offset..<r.offset + length])
        r.offset += length
        let key = storeKey.flatMap { SealedSessionKey.open(sealed, id: id, tag: tag, with: $0) }
        // The rest is read either way, so that the next record is found.
        let session = try decodeSessionFields(&r, id: id, key: key ?? SessionKey(""))
        guard key != nil else {
            tally.unopenable.append((recordOffset, id))
            tally.readWithoutKey = storeKey == nil
            return nil
        }
        tally.opened += 1
        return session
    }

    /// What follows the key: endpoints, owner, label, registration time, attempts, outcome.
    private static func decodeSessionFields(_ r: inout ByteReader, id: SessionID, key: SessionKey)
        throws(DecodeError) -> Session
    {
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
        /// A sealed register record whose key did not open (see ``KeyTally``).
        case unopenable(SessionID)
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
        case registerTag, sealedRegisterTag:
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

    /// Decodes a record without a store key (a sealed key is ``Decoded/unopenable(_:)``).
    static func decode(_ r: inout ByteReader) throws(DecodeError) -> Decoded {
        var tally = KeyTally()
        return try decode(&r, opening: nil, tally: &tally)
    }

    /// Decodes a record whose key, if sealed, is opened with `storeKey`; `tally` counts keys.
    static func decode(_ r: inout ByteReader, opening storeKey: StoreKey?, tally: inout KeyTally)
        throws(DecodeError) -> Decoded
    {
        let start = r.offset
        let tag = try r.u8()
        switch tag {
        case registerTag, sealedRegisterTag:
            let session = try decodeSession(
                &r, tag: tag, opening: storeKey, tally: &tally, recordOffset: start)
            guard let session else { return .unopenable(tally.unopenable[tally.unopenable.count - 1].id) }
            return .record(.register(session))
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
