/// Encoded entries waiting for the journal, bounded in bytes, in two lanes: *bulk* entries
/// (per-call outcomes, registrations) and *essential* ones (lifecycle and summaries). The
/// essential lane is sent first and has room of its own, so a flood of per-call entries can
/// never crowd out `stop-begun`, `run-finished` or `stopped`. First in, first out within a lane.
package struct JournalQueue {
    /// How many bytes each lane may hold.
    package struct Limits: Sendable {
        /// Bulk entries: 100,000 per-call entries of ~900 bytes, all finished in one go (an origin
        /// given up on), with room to spare; journald takes ~30,000 a second.
        package var bulkBytes = 128 << 20
        /// Essential entries: room for thousands, even behind a stalled journal.
        package var essentialBytes = 4 << 20

        /// The default limits.
        package init() {}

        /// Custom limits (tests).
        package init(bulkBytes: Int, essentialBytes: Int) {
            self.bulkBytes = bulkBytes
            self.essentialBytes = essentialBytes
        }
    }

    private struct Lane {
        var entries: [[UInt8]] = []
        var head = 0
        var bytes = 0
        let limit: Int

        var isEmpty: Bool { head == entries.count }
        var count: Int { entries.count - head }

        mutating func push(_ entry: [UInt8]) -> Bool {
            guard bytes + entry.count <= limit else { return false }
            entries.append(entry)
            bytes += entry.count
            return true
        }

        mutating func pop() {
            bytes -= entries[head].count
            entries[head] = []
            head += 1
            // Reclaim the consumed prefix now and then; amortised O(1).
            if head == entries.count {
                entries.removeAll(keepingCapacity: entries.count < 4096)
                head = 0
            } else if head >= 4096 && head * 2 >= entries.count {
                entries.removeFirst(head)
                head = 0
            }
        }
    }

    private var essential: Lane
    private var bulk: Lane
    /// The lane of the entry being written, once a stream write has sent part of it.
    private var lockedToBulk: Bool?

    /// An empty queue with `limits`.
    init(limits: Limits = Limits()) {
        essential = Lane(limit: limits.essentialBytes)
        bulk = Lane(limit: limits.bulkBytes)
    }

    /// Appends an entry; false (and nothing kept) when its lane is full.
    mutating func push(_ entry: [UInt8], essential isEssential: Bool) -> Bool {
        isEssential ? essential.push(entry) : bulk.push(entry)
    }

    /// Whether nothing waits.
    var isEmpty: Bool { essential.isEmpty && bulk.isEmpty }

    /// Entries waiting.
    var count: Int { essential.count + bulk.count }

    /// The next entry to send: essential first, unless a bulk entry is half written.
    var next: [UInt8]? {
        if lockedToBulk == true || (essential.isEmpty && lockedToBulk == nil) {
            return bulk.isEmpty ? nil : bulk.entries[bulk.head]
        }
        return essential.isEmpty ? nil : essential.entries[essential.head]
    }

    /// Keeps sending the current entry before any other (a stream write sent part of it).
    mutating func holdNext() {
        guard lockedToBulk == nil else { return }
        lockedToBulk = essential.isEmpty
    }

    /// Removes the entry ``next`` returned.
    mutating func removeNext() {
        let fromBulk = lockedToBulk ?? essential.isEmpty
        lockedToBulk = nil
        if fromBulk { bulk.pop() } else { essential.pop() }
    }

    /// Drops everything; returns how many entries that was.
    mutating func removeAll() -> Int {
        let dropped = count
        essential = Lane(limit: essential.limit)
        bulk = Lane(limit: bulk.limit)
        lockedToBulk = nil
        return dropped
    }
}
