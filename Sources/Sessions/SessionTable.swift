/// The sessions in memory: fixed-size chunks of `Session` values plus an id → position index and
/// per-owner counts.
///
/// - Chunks make a frozen copy for the background snapshot writer cost O(chunks): the next
///   change copies the outer array and the one chunk it touches, not every session.
/// - Every chunk is allocated at full capacity and sessions are added one at a time, whether
///   they arrive by registration or from the files at start, so the same sessions take the
///   same memory either way.
/// - Equal endpoint lists share one array (most sessions name the same few endpoints).
///
/// Removal moves the last session into the hole, so the order is arbitrary.
struct SessionTable {
    static let chunkSize = 1024
    /// Distinct endpoint lists shared at most; beyond this, lists are kept as they come.
    static let sharedEndpointListLimit = 4096

    private var chunks: [[Session]] = []
    private var index: [SessionID: Int] = [:]
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
        guard let i = index[id] else { return nil }
        return chunks[i / Self.chunkSize][i % Self.chunkSize]
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
        if let i = index[session.id] {
            let old = chunks[i / Self.chunkSize][i % Self.chunkSize]
            if old.ownerUID != session.ownerUID {
                countOwner(old.ownerUID, -1)
                countOwner(session.ownerUID, 1)
            }
            countUsage(old.endpoints, -1)
            countUsage(session.endpoints, 1)
            chunks[i / Self.chunkSize][i % Self.chunkSize] = session
            return
        }
        let i = index.count
        if i % Self.chunkSize == 0 {
            var chunk: [Session] = []
            chunk.reserveCapacity(Self.chunkSize)
            chunks.append(chunk)
        }
        chunks[chunks.count - 1].append(session)
        index[session.id] = i
        countOwner(session.ownerUID, 1)
        countUsage(session.endpoints, 1)
    }

    /// Removes and returns the session, if present.
    @discardableResult
    mutating func remove(_ id: SessionID) -> Session? {
        guard let i = index[id] else { return nil }
        let removed = chunks[i / Self.chunkSize][i % Self.chunkSize]
        delete(id)
        return removed
    }

    /// Removes the session, if present, without copying it out (a run's ended sessions):
    /// returns whether it was there.
    @discardableResult
    mutating func delete(_ id: SessionID) -> Bool {
        guard let i = index.removeValue(forKey: id) else { return false }
        let (chunk, slot) = (i / Self.chunkSize, i % Self.chunkSize)
        countOwner(chunks[chunk][slot].ownerUID, -1)
        countUsage(chunks[chunk][slot].endpoints, -1)
        let lastChunk = chunks.count - 1
        let last = chunks[lastChunk].removeLast()
        if chunks[lastChunk].isEmpty { chunks.removeLast() }
        if last.id != id {
            chunks[chunk][slot] = last
            index[last.id] = i
        }
        return true
    }

    /// Changes a session's attempts, outcome, label or endpoints in place; returns the updated
    /// value, or nil if absent. The id and the owner stay as they are.
    @discardableResult
    mutating func update(_ id: SessionID, _ change: (inout Session) -> Void) -> Session? {
        guard let i = index[id] else { return nil }
        var session = chunks[i / Self.chunkSize][i % Self.chunkSize]
        let (originalID, originalOwner, originalEndpoints) = (session.id, session.ownerUID, session.endpoints)
        change(&session)
        session.id = originalID
        session.ownerUID = originalOwner
        if session.endpoints != originalEndpoints {
            session.endpoints = shared(session.endpoints)
            countUsage(originalEndpoints, -1)
            countUsage(session.endpoints, 1)
        }
        chunks[i / Self.chunkSize][i % Self.chunkSize] = session
        return session
    }

    /// An immutable copy of every session, for another thread; O(number of chunks).
    var frozen: FrozenSessions { FrozenSessions(chunks: chunks, count: count) }

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
    /// Number of sessions.
    let count: Int

    func makeIterator() -> FlattenSequence<[[Session]]>.Iterator { chunks.joined().makeIterator() }
}
