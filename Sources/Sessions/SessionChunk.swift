/// Up to ``SessionTable/chunkSize`` sessions kept field by field (one array per field), so that
/// a session costs its fields' bytes — 28 bytes plus its key's — instead of a `Session` value
/// (88 bytes, a key of more than 15 bytes on the heap besides). A `Session` is made only where
/// one is handed out (``session(at:endpoints:)``).
///
/// - Keys sit in one byte buffer per chunk, each as a LEB128 length and its UTF-8 bytes; a
///   removed or replaced key's bytes are zeroed at once (``clear(_:)``, ``replace(_:with:list:)``)
///   and given back when more than half the buffer is such garbage (``repackIfWasteful()``).
/// - Endpoint lists are numbers (``EndpointLists``): most sessions name the same list.
/// - Label, last outcome and attempts — none of them set for most sessions — sit in a side table.
///
/// Its keys are never printed: the descriptions show the chunk's size, and reflection
/// (`dump`, `Mirror`) sees no fields.
struct SessionChunk: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The fields most sessions do not have.
    struct Extra: Sendable, Equatable {
        var label: String?
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
    /// Where each slot's key record starts in `keyBytes`, or `noKey`.
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

    /// Bytes the keys' buffer holds (live keys and garbage).
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

    func key(at slot: Int) -> SessionKey {
        SessionKey(withKeyBytes(at: slot) { String(decoding: $0, as: UTF8.self) })
    }

    func extra(at slot: Int) -> Extra? { extras[UInt16(slot)] }

    /// The session in `slot`, made from its fields; `endpoints` is its list (by `lists[slot]`).
    func session(at slot: Int, endpoints: [String]) -> Session {
        let extra = extras[UInt16(slot)]
        return Session(
            id: SessionID(rawValue: ids[slot]), key: key(at: slot), endpoints: endpoints, ownerUID: owners[slot],
            label: extra?.label, registeredAt: registeredAt[slot], attempts: extra?.attempts ?? 0,
            lastOutcome: extra?.lastOutcome)
    }

    // MARK: Writing

    /// Adds `session` in a new slot, with endpoint list number `list`.
    mutating func append(_ session: Session, list: UInt32) {
        ids.append(session.id.rawValue)
        registeredAt.append(session.registeredAt)
        owners.append(session.ownerUID)
        lists.append(list)
        keyStarts.append(appendKey(session.key))
        setExtra(of: session, at: ids.count - 1)
    }

    /// Puts `session` in `slot` in place of what was there, whose key is zeroed if still present.
    mutating func replace(_ slot: Int, with session: Session, list: UInt32) {
        ids[slot] = session.id.rawValue
        registeredAt[slot] = session.registeredAt
        owners[slot] = session.ownerUID
        lists[slot] = list
        dropKey(slot)
        keyStarts[slot] = appendKey(session.key)
        setExtra(of: session, at: slot)
    }

    /// Writes what differs between `old` (the session in `slot`) and `new`; the id and owner stay.
    mutating func update(_ slot: Int, from old: Session, to new: Session, list: UInt32) {
        if lists[slot] != list { lists[slot] = list }
        if old.registeredAt != new.registeredAt { registeredAt[slot] = new.registeredAt }
        // Not a secret comparison: both keys are the store's own.
        if old.key.exposedSecret != new.key.exposedSecret {
            dropKey(slot)
            keyStarts[slot] = appendKey(new.key)
        }
        if (old.label, old.lastOutcome, old.attempts) != (new.label, new.lastOutcome, new.attempts) {
            setExtra(of: new, at: slot)
        }
    }

    /// Drops a removed session's key (its bytes zeroed) and extra fields; the slot's other
    /// fields stay as they are until it is filled again.
    mutating func clear(_ slot: Int) {
        dropKey(slot)
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
                let (length, lengthBytes) = Self.readLength(all, at: start)
                keyStarts[slot] = UInt32(packed.count)
                packed.append(contentsOf: UnsafeBufferPointer(rebasing: all[start..<start + lengthBytes + length]))
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
        if session.label == nil && session.lastOutcome == nil && session.attempts == 0 {
            if !extras.isEmpty { extras[UInt16(slot)] = nil }
        } else {
            extras[UInt16(slot)] = Extra(
                label: session.label, lastOutcome: session.lastOutcome, attempts: session.attempts)
        }
    }

    private mutating func appendKey(_ key: SessionKey) -> UInt32 {
        let start = keyBytes.count
        precondition(start < Int(Self.noKey), "a chunk holds less than 4 GiB of keys")
        var secret = key.exposedSecret
        secret.withUTF8 { bytes in
            var length = bytes.count
            repeat {
                let low = UInt8(truncatingIfNeeded: length & 0x7F)
                length >>= 7
                keyBytes.append(length == 0 ? low : low | 0x80)
            } while length != 0
            keyBytes.append(contentsOf: bytes)
        }
        return UInt32(start)
    }

    /// Zeroes the slot's key record and counts it as garbage.
    private mutating func dropKey(_ slot: Int) {
        let start = keyStarts[slot]
        guard start != Self.noKey else { return }
        let (length, lengthBytes) = keyBytes.withUnsafeBufferPointer { Self.readLength($0, at: Int(start)) }
        Self.zero(&keyBytes, Int(start)..<Int(start) + lengthBytes + length)
        garbage += lengthBytes + length
        keyStarts[slot] = Self.noKey
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
