/// Calls under way that are ready to go again — due to retry, or released by the
/// ``OriginGate`` — by slot, first in first out: the run serves them before the line.
struct ReadyCalls {
    private var slots: [Int] = []
    private var head = 0

    /// Whether no call is ready.
    var isEmpty: Bool { head == slots.count }

    /// Appends `slot`.
    mutating func append(_ slot: Int) { slots.append(slot) }

    /// The call ``next()`` would give, left in place; nil when none is ready.
    var first: Int? { head < slots.count ? slots[head] : nil }

    /// The call ready longest, taken out; nil when none is.
    mutating func next() -> Int? {
        guard head < slots.count else { return nil }
        let slot = slots[head]
        head += 1
        if head == slots.count {
            slots.removeAll(keepingCapacity: true)
            head = 0
        }
        return slot
    }
}
