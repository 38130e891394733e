/// Up to ``SessionTable/chunkSize`` sessions kept field by field (one array per field), so that
/// a session costs its fields' bytes — 28 bytes plus its key's and label's — instead of a `Session` value
/// (88 bytes, a key of more than 15 bytes on the heap besides). A `Session` is made only where
/// one is handed out (``session(at:endpoints:)``).
///
/// - Key and label sit in one byte buffer per chunk, one record per session: the key as a
///   LEB128 length and its UTF-8 bytes, then the label as a LEB128 of its length plus one (0:
///   no label) and its bytes. A removed or replaced record's bytes are zeroed at once
///   (``clear(_:)``, ``replace(_:with:list:)``) and given back when more than half the buffer is
///   such garbage (``repackIfWasteful()``).
/// - Endpoint lists are numbers (``EndpointLists``): most sessions name the same list.
/// - Last outcome and attempts — set only for sessions an attempt failed to end — sit in a side
///   table.
///
/// Its keys are never printed: the descriptions show the chunk's size, and reflection
/// (`dump`, `Mirror`) sees no fields.
struct SessionChunk: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The fields most sessions do not have.
    struct Extra: Sendable, Equatable {
        var lastOutcome: String?
        var attempts = 0
    }

    /// `keyStarts`' value for a slot whose key is gone.
    private static let noKey = UInt32.max
    /// A garbage byte count below which repacking the keys is not worth it.
    private static let repackThreshold = 4096

    private(set) var ids: [UInt64] = []
    private(set) var registeredAt: [UInt64] = []
    private(set) var owners: [UInt32] = []
    /// Endpoint list numbers.
    private(set) var lists: [UInt32] = []
    /// Where each slot's record (key and label) starts in `keyBytes`, or `noKey`.
    private var keyStarts: [UInt32] = []
    private var keyBytes: [UInt8] = []
    /// Bytes of `keyBytes` no slot refers to any more (all zero).
    private var garbage = 0
    private var extras: [UInt16: Extra] = [:]

    /// An empty chunk with room for `capacity` sessions and `keyCapacity` bytes of keys.
    init(capacity: Int, keyCapacity: Int) {
        ids.reserveCapacity(capacity)
        registeredAt.reserveCapacity(capacity)
        owners.reserveCapacity(capacity)
        lists.reserveCapacity(capacity)
        keyStarts.reserveCapacity(capacity)
        keyBytes.reserveCapacity(keyCapacity)
    }

    /// Slots in use or vacant.
    var count: Int { ids.count }

    /// Bytes the records' buffer holds (live records and garbage).
    var keyBytesUsed: Int { keyBytes.count }

    var description: String { "SessionChunk(\(count) slots, \(keyBytes.count) key bytes)" }
    var debugDescription: String { description }
    /// No children: reflection-based printing shows nothing of the keys.
    var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    /// For tests: whether `bytes` occur anywhere in the keys' buffer (a removed key's must not).
    func keyBufferContains(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty, bytes.count <= keyBytes.count else { return false }
        for start in 0...(keyBytes.count - bytes.count) where keyBytes[start..<start + bytes.count].elementsEqual(bytes)
        {
            return true
        }
        return false
    }

    // MARK: Reading

    func id(at slot: Int) -> SessionID { SessionID(rawValue: ids[slot]) }

    /// The key's UTF-8 bytes, empty once cleared.
    func withKeyBytes<R>(at slot: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try keyBytes.withUnsafeBufferPointer { all in
            let start = keyStarts[slot]
            guard start != Self.noKey else { return try body(UnsafeBufferPointer(rebasing: all[0..<0])) }
            let (length, lengthBytes) = Self.readLength(all, at: Int(start))
            let first = Int(start) + lengthBytes
            return try body(UnsafeBufferPointer(rebasing: all[first..<first + length]))
        }
    }

    /// The label, if the session has one.
    func label(at slot: Int) -> String? {
        let start = keyStarts[slot]
        guard start != Self.noKey else { return nil }
        return keyBytes.withUnsafeBufferPointer { all in
            let (keyLength, keyLengthBytes) = Self.readLength(all, at: Int(start))
            let labelAt = Int(start) + keyLengthBytes + keyLength
            let (tag, tagBytes) = Self.readLength(all, at: labelAt)
            guard tag > 0 else { return nil }
            let first = labelAt + tagBytes
            return String(decoding: UnsafeBufferPointer(rebasing: all[first..<first + tag - 1]), as: UTF8.self)
        }
    }

    func key(at slot: Int) -> SessionKey {
        SessionKey(withKeyBytes(at: slot) { String(decoding: $0, as: UTF8.self) })
    }

    func extra(at slot: Int) -> Extra? { extras[UInt16(slot)] }

    /// The session in `slot`, made from its fields; `endpoints` is its list (by `lists[slot]`).
    func session(at slot: Int, endpoints: [String]) -> Session {
        let extra = extras[UInt16(slot)]
        return Session(
            id: SessionID(rawValue: ids[slot]), key: key(at: slot), endpoints: endpoints, ownerUID: owners[slot],
            label: label(at: slot), registeredAt: registeredAt[slot], attempts: extra?.attempts ?? 0,
            lastOutcome: extra?.lastOutcome)
    }

    // MARK: Writing

    /// Adds `session` in a new slot, with endpoint list number `list`.
    mutating func append(_ session: Session, list: UInt32) {
        ids.append(session.id.rawValue)
        registeredAt.append(session.registeredAt)
        owners.append(session.ownerUID)
        lists.append(list)
        keyStarts.append(appendRecord(session))
        setExtra(of: session, at: ids.count - 1)
    }

    /// Puts `session` in `slot` in place of what was there, whose key is zeroed if still present.
    mutating func replace(_ slot: Int, with session: Session, list: UInt32) {
        ids[slot] = session.id.rawValue
        registeredAt[slot] = session.registeredAt
        owners[slot] = session.ownerUID
        lists[slot] = list
        dropRecord(slot)
        keyStarts[slot] = appendRecord(session)
        setExtra(of: session, at: slot)
    }

    /// Writes what differs between `old` (the session in `slot`) and `new`; the id and owner stay.
    mutating func update(_ slot: Int, from old: Session, to new: Session, list: UInt32) {
        if lists[slot] != list { lists[slot] = list }
        if old.registeredAt != new.registeredAt { registeredAt[slot] = new.registeredAt }
        // Not a secret comparison: both keys are the store's own.
        if old.key.exposedSecret != new.key.exposedSecret || old.label != new.label {
            dropRecord(slot)
            keyStarts[slot] = appendRecord(new)
        }
        if (old.lastOutcome, old.attempts) != (new.lastOutcome, new.attempts) {
            setExtra(of: new, at: slot)
        }
    }

    /// Drops a removed session's key (its bytes zeroed) and extra fields; the slot's other
    /// fields stay as they are until it is filled again.
    mutating func clear(_ slot: Int) {
        dropRecord(slot)
        if !extras.isEmpty { extras[UInt16(slot)] = nil }
    }

    /// Gives back the keys' garbage once it is more than half the buffer: the live keys are
    /// copied to a buffer of their size and the old one zeroed. Only while no frozen copy shares
    /// the chunk (else the copy would be made and the shared buffer left as it is).
    mutating func repackIfWasteful() {
        guard garbage >= Self.repackThreshold, garbage * 2 > keyBytes.count else { return }
        var packed: [UInt8] = []
        packed.reserveCapacity(keyBytes.count - garbage)
        keyBytes.withUnsafeBufferPointer { all in
            for slot in 0..<keyStarts.count where keyStarts[slot] != Self.noKey {
                let start = Int(keyStarts[slot])
                keyStarts[slot] = UInt32(packed.count)
                packed.append(
                    contentsOf: UnsafeBufferPointer(rebasing: all[start..<start + Self.recordLength(all, at: start)]))
            }
        }
        Self.zero(&keyBytes, 0..<keyBytes.count)
        keyBytes = packed
        garbage = 0
    }

    /// Zeroes every key (before the chunk is dropped, its sessions moved elsewhere).
    mutating func zeroKeys() {
        Self.zero(&keyBytes, 0..<keyBytes.count)
    }

    private mutating func setExtra(of session: Session, at slot: Int) {
        if session.lastOutcome == nil && session.attempts == 0 {
            if !extras.isEmpty { extras[UInt16(slot)] = nil }
        } else {
            extras[UInt16(slot)] = Extra(lastOutcome: session.lastOutcome, attempts: session.attempts)
        }
    }

    /// Appends the record of `session`'s key and label; returns where it starts.
    private mutating func appendRecord(_ session: Session) -> UInt32 {
        let start = keyBytes.count
        precondition(start < Int(Self.noKey), "a chunk holds less than 4 GiB of keys and labels")
        var secret = session.key.exposedSecret
        secret.withUTF8 { bytes in
            appendLength(bytes.count)
            keyBytes.append(contentsOf: bytes)
        }
        if var label = session.label {
            label.withUTF8 { bytes in
                appendLength(bytes.count + 1)
                keyBytes.append(contentsOf: bytes)
            }
        } else {
            appendLength(0)
        }
        return UInt32(start)
    }

    private mutating func appendLength(_ value: Int) {
        var length = value
        repeat {
            let low = UInt8(truncatingIfNeeded: length & 0x7F)
            length >>= 7
            keyBytes.append(length == 0 ? low : low | 0x80)
        } while length != 0
    }

    /// Zeroes the slot's record and counts it as garbage.
    private mutating func dropRecord(_ slot: Int) {
        let start = keyStarts[slot]
        guard start != Self.noKey else { return }
        let length = keyBytes.withUnsafeBufferPointer { Self.recordLength($0, at: Int(start)) }
        Self.zero(&keyBytes, Int(start)..<Int(start) + length)
        garbage += length
        keyStarts[slot] = Self.noKey
    }

    /// Bytes of the record at `offset`: key and label with their lengths.
    private static func recordLength(_ bytes: UnsafeBufferPointer<UInt8>, at offset: Int) -> Int {
        let (keyLength, keyLengthBytes) = readLength(bytes, at: offset)
        let (tag, tagBytes) = readLength(bytes, at: offset + keyLengthBytes + keyLength)
        return keyLengthBytes + keyLength + tagBytes + (tag > 0 ? tag - 1 : 0)
    }

    /// A LEB128 length at `offset`: its value and how many bytes it takes.
    private static func readLength(_ bytes: UnsafeBufferPointer<UInt8>, at offset: Int) -> (Int, Int) {
        var value = 0
        var shift = 0
        var i = offset
        while true {
            let byte = bytes[i]
            value |= Int(byte & 0x7F) << shift
            i += 1
            if byte & 0x80 == 0 { return (value, i - offset) }
            shift += 7
        }
    }

    private static func zero(_ bytes: inout [UInt8], _ range: Range<Int>) {
        bytes.withUnsafeMutableBufferPointer { buffer in
            for i in range { buffer[i] = 0 }
        }
    }
}
