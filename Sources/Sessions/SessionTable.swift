/// The sessions in memory: fixed-size chunks of sessions kept field by field
/// (``SessionChunk``), an id → slot index of 4-byte buckets (``SlotIndex``), endpoint lists by
/// number (``EndpointLists``) and per-owner counts. ~38 bytes a session plus key and label
/// (issue 10: 155 bytes before); a `Session` value is made only where one is handed out.
///
/// - Chunks make a frozen copy (``FrozenSessions``, ``SessionList``) cost O(chunks): the next
///   change copies the outer array and the one field array it writes, not every session.
/// - A removal writes nothing into the chunks while a frozen copy shares them: the slot is
///   marked vacant (one hash of the id, in the index), and its key is zeroed once no copy is
///   left. So a stop run that works from a frozen list while the store removes the sessions it
///   ends copies no chunk. Vacant slots are filled by the next sessions added; the table is
///   compacted once more than half its slots are vacant (and no copy shares them).
/// - Every chunk's fields are allocated at full capacity and sessions are added one at a time,
///   whether they arrive by registration or from the files at start, so the same sessions take
///   the same memory either way.
///
/// The order of the sessions is arbitrary.
struct SessionTable {
    static let chunkSize = 1 << chunkShift
    static let chunkShift = 10

    private var chunks: [SessionChunk] = []
    private var lists = EndpointLists()
    private var index = SlotIndex()
    /// Slots whose session was removed, filled again last-first.
    private var vacant: [UInt32] = []
    /// The same slots, for iterating a frozen copy.
    private var vacancies = SlotSet()
    /// Whether some vacant slot's key is still in place: removed while a frozen copy shared the chunks.
    private var hasUncleared = false
    /// Held by every frozen copy: while one is alive, writing a chunk would copy it.
    private var copies = FrozenCopies()
    private var owners: [UInt32: Int] = [:]
    /// A change of `owners` not yet applied: sessions added or removed in a row mostly have the
    /// same owner (a hash per ended session saved, at a stop).
    private var pendingOwner: (uid: UInt32, delta: Int)?

    init() {}

    var count: Int { index.count }

    subscript(id: SessionID) -> Session? {
        guard let slot = find(id) else { return nil }
        return session(at: slot)
    }

    func contains(_ id: SessionID) -> Bool { find(id) != nil }

    /// Sessions owned by `uid`.
    func count(ownedBy uid: UInt32) -> Int {
        owners[uid, default: 0] + (pendingOwner.map { $0.uid == uid ? $0.delta : 0 } ?? 0)
    }

    /// Sessions per distinct endpoint list.
    var endpointUsage: [[String]: Int] { lists.usage }

    /// Inserts or replaces.
    mutating func upsert(_ session: Session) {
        let list = lists.retain(session.endpoints)
        if let slot = find(session.id) {
            let (c, s) = Self.split(slot)
            let oldOwner = chunks[c].owners[s]
            if oldOwner != session.ownerUID {
                countOwner(oldOwner, -1)
                countOwner(session.ownerUID, 1)
            }
            lists.release(chunks[c].lists[s])
            chunks[c].replace(s, with: session, list: list)
            repackIfUnshared(c)
            return
        }
        countOwner(session.ownerUID, 1)
        if let slot = vacant.popLast() {
            vacancies.remove(Int(slot))
            let (c, s) = Self.split(slot)
            chunks[c].replace(s, with: session, list: list)
            insertIntoIndex(session.id, slot)
            repackIfUnshared(c)
            return
        }
        let i = index.count
        if i & (Self.chunkSize - 1) == 0 {
            // Room for as many key bytes as the last full chunk held, and an eighth more.
            let keyCapacity = chunks.last.map { $0.keyBytesUsed + $0.keyBytesUsed / 8 } ?? 0
            chunks.append(SessionChunk(capacity: Self.chunkSize, keyCapacity: keyCapacity))
        }
        chunks[chunks.count - 1].append(session, list: list)
        insertIntoIndex(session.id, UInt32(i))
    }

    /// Removes and returns the session, if present.
    @discardableResult
    mutating func remove(_ id: SessionID) -> Session? {
        guard let slot = find(id) else { return nil }
        let removed = session(at: slot)
        delete(id)
        return removed
    }

    /// Removes the session, if present, without making it (a run's ended sessions): returns
    /// whether it was there.
    @discardableResult
    mutating func delete(_ id: SessionID) -> Bool {
        guard let slot = index.remove(id, in: chunks) else { return false }
        let (c, s) = Self.split(slot)
        countOwner(chunks[c].owners[s], -1)
        lists.release(chunks[c].lists[s])
        vacant.append(slot)
        vacancies.insert(Int(slot))
        guard isKnownUniquelyReferenced(&copies) else {
            // A frozen copy shares the chunk: clearing the slot now would copy its keys.
            hasUncleared = true
            return true
        }
        clear(slot)
        if hasUncleared {
            for slot in vacant { clear(slot) }
            hasUncleared = false
        }
        if vacant.count >= Self.chunkSize, vacant.count > index.count { compact() }
        return true
    }

    /// Changes a session's attempts, outcome, label or endpoints in place; returns the updated
    /// value, or nil if absent. The id and the owner stay as they are.
    @discardableResult
    mutating func update(_ id: SessionID, _ change: (inout Session) -> Void) -> Session? {
        guard let slot = find(id) else { return nil }
        let old = session(at: slot)
        var session = old
        change(&session)
        session.id = old.id
        session.ownerUID = old.ownerUID
        let (c, s) = Self.split(slot)
        var list = chunks[c].lists[s]
        if session.endpoints != old.endpoints {
            list = lists.retain(session.endpoints)
            lists.release(chunks[c].lists[s])
            session.endpoints = lists[list]
        }
        chunks[c].update(s, from: old, to: session, list: list)
        repackIfUnshared(c)
        return session
    }

    /// An immutable copy of every session, for another thread; O(number of chunks).
    var frozen: FrozenSessions {
        FrozenSessions(chunks: chunks, lists: lists.lists, vacancies: vacancies, count: count, copies: copies)
    }

    /// The sessions `isIncluded` picks (all when nil), ordered by registration (`registeredAt`,
    /// then id), as a list that shares the table's chunks: O(chunks) and 4 bytes per session
    /// picked, not a copy.
    func listInRegistrationOrder(where isIncluded: ((Session) -> Bool)? = nil) -> SessionList {
        var slots: [UInt32] = []
        slots.reserveCapacity(count)
        for chunk in 0..<chunks.count {
            for slot in 0..<chunks[chunk].count {
                let i = chunk << Self.chunkShift | slot
                guard !vacancies.contains(i) else { continue }
                if let isIncluded, !isIncluded(session(at: UInt32(i))) { continue }
                slots.append(UInt32(i))
            }
        }
        // The slots themselves sorted, reading the fields at each comparison, rather than sort
        // keys gathered first (24 bytes a session more, at the stop's peak): slots are mostly
        // in registration order already, and the sort then makes one pass.
        let chunks = self.chunks
        slots.sort { a, b in
            let (ca, sa) = Self.split(a)
            let (cb, sb) = Self.split(b)
            let (ra, rb) = (chunks[ca].registeredAt[sa], chunks[cb].registeredAt[sb])
            return ra != rb ? ra < rb : chunks[ca].ids[sa] < chunks[cb].ids[sb]
        }
        return SessionList(chunks: chunks, lists: lists.lists, shift: Self.chunkShift, slots: slots, copies: copies)
    }

    /// For tests: where each chunk's ids are stored (a chunk copied on write moves).
    var chunkAddresses: [UnsafeRawPointer?] {
        chunks.map { $0.ids.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) } }
    }

    /// For tests: slots in use or vacant.
    var slotCount: Int { index.count + vacant.count }

    /// For tests: the index's buckets.
    var indexCapacity: Int { index.capacity }

    /// For tests: the key bytes (live and zeroed garbage) of every chunk.
    var keyBytesUsed: Int { chunks.reduce(0) { $0 + $1.keyBytesUsed } }

    /// For tests: reads the key bytes of the slot `id` has (empty once cleared), with or without
    /// its session present.
    func withKeyBytes<R>(ofSlot slot: UInt32, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        let (c, s) = Self.split(slot)
        return chunks[c].withKeyBytes(at: s, body)
    }

    /// For tests: whether `bytes` occur in any chunk's keys' buffer.
    func keyBuffersContain(_ bytes: [UInt8]) -> Bool { chunks.contains { $0.keyBufferContains(bytes) } }

    /// For tests: the slot of `id`.
    func slot(of id: SessionID) -> UInt32? { find(id) }

    // MARK: Slots

    private static func split(_ slot: UInt32) -> (chunk: Int, slot: Int) {
        (Int(slot) >> chunkShift, Int(slot) & (chunkSize - 1))
    }

    private func find(_ id: SessionID) -> UInt32? {
        index.find(id, in: chunks)
    }

    private mutating func insertIntoIndex(_ id: SessionID, _ slot: UInt32) {
        index.insert(id, slot: slot, in: chunks)
    }

    private func session(at slot: UInt32) -> Session {
        let (c, s) = Self.split(slot)
        return chunks[c].session(at: s, endpoints: lists[chunks[c].lists[s]])
    }

    /// Zeroes a vacant slot's key and drops its other fields' values.
    private mutating func clear(_ slot: UInt32) {
        let (c, s) = Self.split(slot)
        chunks[c].clear(s)
        chunks[c].repackIfWasteful()
    }

    private mutating func repackIfUnshared(_ chunk: Int) {
        if isKnownUniquelyReferenced(&copies) { chunks[chunk].repackIfWasteful() }
    }

    /// Moves every session to the front, in slot order, and frees the chunks left empty (their
    /// keys zeroed).
    private mutating func compact() {
        var packed: [SessionChunk] = []
        for chunk in 0..<chunks.count {
            for slot in 0..<chunks[chunk].count where !vacancies.contains(chunk << Self.chunkShift | slot) {
                if packed.isEmpty || packed[packed.count - 1].count == Self.chunkSize {
                    packed.append(SessionChunk(capacity: Self.chunkSize, keyCapacity: chunks[chunk].keyBytesUsed))
                }
                packed[packed.count - 1].append(
                    chunks[chunk].session(at: slot, endpoints: []), list: chunks[chunk].lists[slot])
            }
            chunks[chunk].zeroKeys()
            chunks[chunk] = SessionChunk(capacity: 0, keyCapacity: 0)
        }
        chunks = packed
        index.removeAll()
        for chunk in 0..<chunks.count {
            for slot in 0..<chunks[chunk].count {
                index.insert(chunks[chunk].id(at: slot), slot: UInt32(chunk << Self.chunkShift | slot), in: chunks)
            }
        }
        vacant = []
        vacancies = SlotSet()
        hasUncleared = false
    }

    private mutating func countOwner(_ uid: UInt32, _ delta: Int) {
        if let pending = pendingOwner, pending.uid == uid {
            pendingOwner = (uid, pending.delta + delta)
            return
        }
        if let pending = pendingOwner, pending.delta != 0 {
            let n = owners[pending.uid, default: 0] + pending.delta
            owners[pending.uid] = n > 0 ? n : nil
        }
        pendingOwner = (uid, delta)
    }
}
