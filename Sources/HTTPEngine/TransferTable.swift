/// The engine's transfers under way, by tag, in an array of slots: a tag names its slot (the low
/// ``slotBits`` bits) and a sequence number (the bits above), so finding a transfer is an index
/// and a comparison rather than a hash, and a slot freed by one transfer is taken by the next.
///
/// Tags are unique for 2⁴⁰ insertions, and sorting tags sorts them by insertion order.
struct TransferTable<Element: AnyObject> {
    /// Bits of a tag that name its slot: up to 16 million transfers under way at once.
    static var slotBits: Int { 24 }

    private static var slotMask: UInt64 { (1 << UInt64(slotBits)) - 1 }
    private static var sequenceMask: UInt64 { (1 << UInt64(64 - slotBits)) - 1 }

    private var slots: [(tag: UInt64, element: Element)?] = []
    private var freeSlots: [Int] = []
    private var sequence: UInt64 = 0

    /// Elements in the table.
    private(set) var count = 0

    init() {}

    /// Whether the table is empty.
    var isEmpty: Bool { count == 0 }

    /// Makes room for `capacity` elements without growing.
    mutating func reserve(_ capacity: Int) {
        slots.reserveCapacity(capacity)
        freeSlots.reserveCapacity(capacity)
    }

    /// Adds the element `make` builds for its new tag; returns the tag.
    mutating func insert(_ make: (UInt64) -> Element) -> UInt64 {
        sequence = (sequence &+ 1) & Self.sequenceMask
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
        } else {
            slot = slots.count
            precondition(UInt64(slot) <= Self.slotMask, "more than 2^\(Self.slotBits) transfers under way")
            slots.append(nil)
        }
        let tag = sequence << UInt64(Self.slotBits) | UInt64(slot)
        slots[slot] = (tag, make(tag))
        count += 1
        return tag
    }

    /// The element with `tag`, or nil if it is not (or no longer) in the table.
    subscript(tag: UInt64) -> Element? {
        let slot = Int(truncatingIfNeeded: tag & Self.slotMask)
        guard slot < slots.count, let entry = slots[slot], entry.tag == tag else { return nil }
        return entry.element
    }

    /// Removes and returns the element with `tag`, if it is in the table.
    mutating func remove(_ tag: UInt64) -> Element? {
        let slot = Int(truncatingIfNeeded: tag & Self.slotMask)
        guard slot < slots.count, let entry = slots[slot], entry.tag == tag else { return nil }
        slots[slot] = nil
        freeSlots.append(slot)
        count -= 1
        return entry.element
    }

    /// The tags in the table, in no particular order.
    var tags: [UInt64] { slots.compactMap { $0?.tag } }

    /// Whether an element satisfies `predicate`.
    func contains(where predicate: (Element) -> Bool) -> Bool {
        slots.contains { $0.map { predicate($0.element) } ?? false }
    }
}
