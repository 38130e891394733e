/// The sessions in memory: fixed-size chunks of `Session` values plus an id → slot index and
/// per-owner counts.
///
/// - Chunks make a frozen copy (``FrozenSessions``, ``SessionList``) cost O(chunks): the next
///   change copies the outer array and the one chunk it writes, not every session.
/// - A removal writes nothing into the chunks while a frozen copy shares them: the slot is
///   marked vacant (one hash of the id, in the index), and its session is cleared once no copy
///   is left. So a stop run that works from a frozen list while the store removes the sessions
///   it ends copies no chunk. Vacant slots are filled by the next sessions added; the table is
///   compacted once more than half its slots are vacant (and no copy shares them).
/// - Every chunk is allocated at full capacity and sessions are added one at a time, whether
///   they arrive by registration or from the files at start, so the same sessions take the
///   same memory either way.
/// - Equal endpoint lists share one array (most sessions name the same few endpoints).
///
/// The order of the sessions is arbitrary.
struct SessionTable {
    static let chunkSize = 1 << chunkShift
    static let chunkShift = 10
    /// Distinct endpoint lists shared at most; beyond this, lists are kept as they come.
    static let sharedEndpointListLimit = 4096

    private var chunks: [[Session]] = []
    /// Slot by id: `chunks[slot >> chunkShift][slot & (chunkSize - 1)]`. 12 bytes a bucket
    /// (UInt32 slots, not Int): at 500,000 sessions the index is 2.6 MB smaller.
    private var index: [SessionID: UInt32] = [:]
    /// Slots whose session was removed, filled again last-first.
    private var vacant: [UInt32] = []
    /// The same slots, for iterating a frozen copy.
    private var vacancies = SlotSet()
    /// Whether some vacant slot's session is still in place: removed while a frozen copy shared the chunks.
    private var hasUncleared = false
    /// Held by every frozen copy: while one is alive, writing a chunk would copy it.
    private var copies = FrozenCopies()
    private var owners: [UInt32: Int] = [:]
    private var endpointLists: [[String]: [String]] = [:]
    /// Sessions per distinct endpoint list, so that questions about endpoints cost O(lists);
    /// without `pendingUsage`.
    private var usage: [[String]: Int] = [:]
    /// A change of `usage` not yet applied: sessions added or removed in a row mostly name the
    /// same (shared) list, and comparing a shared list with itself costs nothing where hashing
    /// it costs a hash of every name — per ended session, at a stop.
    private var pendingUsage: (endpoints: [String], delta: Int)?
    /// The same for `owners`.
    private var pendingOwner: (uid: UInt32, delta: Int)?

    init() {}

    var count: Int { index.count }

    subscript(id: SessionID) -> Session? {
        guard let slot = index[id] else { return nil }
        return self[slot: slot]
    }

    /// The session in `slot` (`index`'s values), read or written in place.
    private subscript(slot slot: UInt32) -> Session {
        _read { yield chunks[Int(slot) >> Self.chunkShift][Int(slot) & (Self.chunkSize - 1)] }
        _modify { yield &chunks[Int(slot) >> Self.chunkShift][Int(slot) & (Self.chunkSize - 1)] }
    }

    func contains(_ id: SessionID) -> Bool { index[id] != nil }

    /// Sessions owned by `uid`.
    func count(ownedBy uid: UInt32) -> Int {
        owners[uid, default: 0] + (pendingOwner.map { $0.uid == uid ? $0.delta : 0 } ?? 0)
    }

    /// Sessions per distinct endpoint list.
    var endpointUsage: [[String]: Int] {
        guard let pendingUsage else { return usage }
        var all = usage
        Self.apply(pendingUsage.delta, to: &all, at: pendingUsage.endpoints)
        return all
    }

    /// Inserts or replaces.
    mutating func upsert(_ session: Session) {
        var session = session
        session.endpoints = shared(session.endpoints)
        if let slot = index[session.id] {
            let old = self[slot: slot]
            if old.ownerUID != session.ownerUID {
                countOwner(old.ownerUID, -1)
                countOwner(session.ownerUID, 1)
            }
            countUsage(old.endpoints, -1)
            countUsage(session.endpoints, 1)
            self[slot: slot] = session
            return
        }
        countOwner(session.ownerUID, 1)
        countUsage(session.endpoints, 1)
        if let slot = vacant.popLast() {
            vacancies.remove(Int(slot))
            self[slot: slot] = session
            index[session.id] = slot
            return
        }
        let i = index.count
        if i & (Self.chunkSize - 1) == 0 {
            var chunk: [Session] = []
            chunk.reserveCapacity(Self.chunkSize)
            chunks.append(chunk)
        }
        chunks[chunks.count - 1].append(session)
        index[session.id] = UInt32(i)
    }

    /// Removes and returns the session, if present.
    @discardableResult
    mutating func remove(_ id: SessionID) -> Session? {
        guard let slot = index[id] else { return nil }
        let removed = self[slot: slot]
        delete(id)
        return removed
    }

    /// Removes the session, if present, without copying it out (a run's ended sessions):
    /// returns whether it was there.
    @discardableResult
    mutating func delete(_ id: SessionID) -> Bool {
        guard let slot = index.removeValue(forKey: id) else { return false }
        countOwner(self[slot: slot].ownerUID, -1)
        countUsage(self[slot: slot].endpoints, -1)
        vacant.append(slot)
        vacancies.insert(Int(slot))
        guard isKnownUniquelyReferenced(&copies) else {
            // A frozen copy shares the chunk: clearing the slot now would copy all of it.
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

    /// Drops a vacant slot's session (its key, label and outcome) in place.
    private mutating func clear(_ slot: UInt32) {
        self[slot: slot] = Self.vacantSlot
    }

    private static let vacantSlot = Session(
        id: SessionID(rawValue: 0), key: SessionKey(""), endpoints: [], ownerUID: 0, registeredAt: 0)

    /// Moves every session to the front, in slot order, and frees the chunks left empty.
    private mutating func compact() {
        var packed: [[Session]] = []
        var current: [Session] = []
        index.removeAll(keepingCapacity: true)
        for chunk in 0..<chunks.count {
            for slot in 0..<chunks[chunk].count where !vacancies.contains(chunk << Self.chunkShift | slot) {
                if current.isEmpty { current.reserveCapacity(Self.chunkSize) }
                index[chunks[chunk][slot].id] = UInt32(packed.count << Self.chunkShift | current.count)
                current.append(chunks[chunk][slot])
                if current.count == Self.chunkSize {
                    packed.append(current)
                    current = []
                }
            }
            chunks[chunk] = []
        }
        if !current.isEmpty { packed.append(current) }
        chunks = packed
        vacant = []
        vacancies = SlotSet()
        hasUncleared = false
    }

    /// Changes a session's attempts, outcome, label or endpoints in place; returns the updated
    /// value, or nil if absent. The id and the owner stay as they are.
    @discardableResult
    mutating func update(_ id: SessionID, _ change: (inout Session) -> Void) -> Session? {
        guard let slot = index[id] else { return nil }
        var session = self[slot: slot]
        let (originalID, originalOwner, originalEndpoints) = (session.id, session.ownerUID, session.endpoints)
        change(&session)
        session.id = originalID
        session.ownerUID = originalOwner
        if session.endpoints != originalEndpoints {
            session.endpoints = shared(session.endpoints)
            countUsage(originalEndpoints, -1)
            countUsage(session.endpoints, 1)
        }
        self[slot: slot] = session
        return session
    }

    /// An immutable copy of every session, for another thread; O(number of chunks).
    var frozen: FrozenSessions {
        FrozenSessions(chunks: chunks, vacancies: vacancies, count: count, copies: copies)
    }

    /// The sessions `isIncluded` picks, ordered by registration (`registeredAt`, then id), as a
    /// list that shares the table's chunks: O(chunks) and 4 bytes per session picked, not a copy.
    func listInRegistrationOrder(where isIncluded: (Session) -> Bool = { _ in true }) -> SessionList {
        // Sorted by keys gathered once (a temporary 24 bytes per session, freed at once), not by
        // looking both sessions up at every comparison.
        var keys: [(registeredAt: UInt64, id: UInt64, slot: UInt32)] = []
        keys.reserveCapacity(count)
        for chunk in 0..<chunks.count {
            for slot in 0..<chunks[chunk].count {
                let i = chunk << Self.chunkShift | slot
                guard !vacancies.contains(i), isIncluded(chunks[chunk][slot]) else { continue }
                keys.append((chunks[chunk][slot].registeredAt, chunks[chunk][slot].id.rawValue, UInt32(i)))
            }
        }
        keys.sort { ($0.registeredAt, $0.id) < ($1.registeredAt, $1.id) }
        return SessionList(chunks: chunks, shift: Self.chunkShift, slots: keys.map(\.slot), copies: copies)
    }

    /// For tests: where each chunk's sessions are stored (a chunk copied on write moves).
    var chunkAddresses: [UnsafeRawPointer?] {
        chunks.map { $0.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) } }
    }

    /// For tests: slots in use or vacant.
    var slotCount: Int { index.count + vacant.count }

    private mutating func countOwner(_ uid: UInt32, _ delta: Int) {
        if let pending = pendingOwner, pending.uid == uid {
            pendingOwner = (uid, pending.delta + delta)
            return
        }
        if let pending = pendingOwner { Self.apply(pending.delta, to: &owners, at: pending.uid) }
        pendingOwner = (uid, delta)
    }

    private mutating func countUsage(_ endpoints: [String], _ delta: Int) {
        // Array's == sees at once that a shared list is itself.
        if let pending = pendingUsage, pending.endpoints == endpoints {
            pendingUsage = (pending.endpoints, pending.delta + delta)
            return
        }
        if let pending = pendingUsage { Self.apply(pending.delta, to: &usage, at: pending.endpoints) }
        pendingUsage = (endpoints, delta)
    }

    /// Adds `delta` to a count, which is dropped once it reaches zero.
    private static func apply<Key: Hashable>(_ delta: Int, to counts: inout [Key: Int], at key: Key) {
        guard delta != 0 else { return }
        let n = counts[key, default: 0] + delta
        counts[key] = n > 0 ? n : nil
    }

    private mutating func shared(_ endpoints: [String]) -> [String] {
        if let existing = endpointLists[endpoints] { return existing }
        guard endpointLists.count < Self.sharedEndpointListLimit else { return endpoints }
        endpointLists[endpoints] = endpoints
        return endpoints
    }
}

/// Every session of a table at one moment, in no particular order; safe to hand to another
/// thread, and cheap to make (the sessions are shared, not copied).
struct FrozenSessions: Sequence, Sendable {
    fileprivate let chunks: [[Session]]
    fileprivate let vacancies: SlotSet
    /// Number of sessions.
    let count: Int
    /// Keeps the table from clearing slots in place while this copy shares its chunks.
    fileprivate let copies: FrozenCopies

    struct Iterator: IteratorProtocol {
        fileprivate let chunks: [[Session]]
        fileprivate let vacancies: SlotSet
        private var chunk = 0
        private var slot = 0

        fileprivate init(chunks: [[Session]], vacancies: SlotSet) {
            self.chunks = chunks
            self.vacancies = vacancies
        }

        mutating func next() -> Session? {
            while chunk < chunks.count {
                if slot == chunks[chunk].count {
                    chunk += 1
                    slot = 0
                    continue
                }
                defer { slot += 1 }
                if !vacancies.contains(chunk << SessionTable.chunkShift | slot) { return chunks[chunk][slot] }
            }
            return nil
        }
    }

    func makeIterator() -> Iterator { Iterator(chunks: chunks, vacancies: vacancies) }
}

/// The token every frozen copy of a ``SessionTable`` holds (see `SessionTable.copies`).
final class FrozenCopies: Sendable {}

/// A set of slot numbers, one bit each.
struct SlotSet: Sendable {
    private var words: [UInt64] = []

    func contains(_ slot: Int) -> Bool {
        let word = slot >> 6
        return word < words.count && words[word] & (1 << UInt64(slot & 63)) != 0
    }

    mutating func insert(_ slot: Int) {
        let word = slot >> 6
        if word >= words.count { words.append(contentsOf: repeatElement(0, count: word - words.count + 1)) }
        words[word] |= 1 << UInt64(slot & 63)
    }

    mutating func remove(_ slot: Int) {
        let word = slot >> 6
        guard word < words.count else { return }
        words[word] &= ~(1 << UInt64(slot & 63))
    }
}
