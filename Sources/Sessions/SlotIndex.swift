/// Session id → slot, as an open-addressing hash table of 4-byte buckets (linear probing,
/// tombstones) that keeps no ids of its own: it reads them in the table's chunks. A
/// `[SessionID: UInt32]` takes 12 bytes a bucket; at 50,000 sessions (131,072 buckets either
/// way) this is 1 MB less.
///
/// Ids are hashed with the standard library's seeded hasher, so ids read from files cannot be
/// chosen to collide.
struct SlotIndex: Sendable {
    private static let empty: UInt32 = 0
    private static let tombstone = UInt32.max

    /// 0: empty; `tombstone`: removed; otherwise the slot plus one.
    private var buckets: [UInt32] = []
    /// Ids indexed.
    private(set) var count = 0
    /// Buckets that are not empty (ids and tombstones).
    private var used = 0

    init() {}

    /// The slot of `id`.
    func find(_ id: SessionID, in chunks: [SessionChunk]) -> UInt32? {
        bucket(of: id, in: chunks).map { buckets[$0] - 1 }
    }

    /// Indexes `slot` for `id`, which is not indexed yet.
    mutating func insert(_ id: SessionID, slot: UInt32, in chunks: [SessionChunk]) {
        precondition(slot < Self.tombstone - 1, "a table holds fewer than 2^32 - 2 slots")
        // At most 3/4 of the buckets used, counting tombstones.
        if (used + 1) * 4 > buckets.count * 3 { rehash(for: count + 1, in: chunks) }
        let mask = buckets.count - 1
        var i = Self.hash(id) & mask
        while buckets[i] != Self.empty && buckets[i] != Self.tombstone { i = (i + 1) & mask }
        if buckets[i] == Self.empty { used += 1 }
        buckets[i] = slot + 1
        count += 1
    }

    /// Removes `id` and returns its slot, or nil if it was not indexed.
    mutating func remove(_ id: SessionID, in chunks: [SessionChunk]) -> UInt32? {
        guard let i = bucket(of: id, in: chunks) else { return nil }
        let slot = buckets[i] - 1
        // A bucket before an empty one is not on any other id's path: it can be empty too.
        if buckets[(i + 1) & (buckets.count - 1)] == Self.empty {
            buckets[i] = Self.empty
            used -= 1
        } else {
            buckets[i] = Self.tombstone
        }
        count -= 1
        return slot
    }

    /// Forgets every id, keeping the buckets' memory.
    mutating func removeAll() {
        for i in buckets.indices { buckets[i] = Self.empty }
        count = 0
        used = 0
    }

    /// The bucket holding `id`'s slot, if indexed.
    private func bucket(of id: SessionID, in chunks: [SessionChunk]) -> Int? {
        guard count > 0 else { return nil }
        let mask = buckets.count - 1
        var i = Self.hash(id) & mask
        while true {
            let bucket = buckets[i]
            if bucket == Self.empty { return nil }
            if bucket != Self.tombstone, Self.id(in: chunks, at: bucket - 1) == id.rawValue { return i }
            i = (i + 1) & mask
        }
    }

    /// For tests: the number of buckets.
    var capacity: Int { buckets.count }

    /// A table of the least power-of-two size that holds `needed` ids within 3/4, all of them
    /// re-inserted (tombstones dropped).
    private mutating func rehash(for needed: Int, in chunks: [SessionChunk]) {
        var size = 16
        while needed * 4 > size * 3 { size *= 2 }
        let old = buckets
        buckets = Array(repeating: Self.empty, count: size)
        let mask = size - 1
        for bucket in old where bucket != Self.empty && bucket != Self.tombstone {
            var i = Self.hash(SessionID(rawValue: Self.id(in: chunks, at: bucket - 1))) & mask
            while buckets[i] != Self.empty { i = (i + 1) & mask }
            buckets[i] = bucket
        }
        used = count
    }

    private static func id(in chunks: [SessionChunk], at slot: UInt32) -> UInt64 {
        chunks[Int(slot) >> SessionTable.chunkShift].ids[Int(slot) & (SessionTable.chunkSize - 1)]
    }

    private static func hash(_ id: SessionID) -> Int {
        var hasher = Hasher()
        hasher.combine(id.rawValue)
        return hasher.finalize()
    }
}
