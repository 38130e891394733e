/// A set of slot numbers, one bit each.
struct SlotSet: Sendable {
    private var words: [UInt64] = []

    /// Whether `slot` is in the set.
    func contains(_ slot: Int) -> Bool {
        let word = slot >> 6
        return word < words.count && words[word] & (1 << UInt64(slot & 63)) != 0
    }

    /// Adds `slot`.
    mutating func insert(_ slot: Int) {
        let word = slot >> 6
        if word >= words.count { words.append(contentsOf: repeatElement(0, count: word - words.count + 1)) }
        words[word] |= 1 << UInt64(slot & 63)
    }

    /// Removes `slot`.
    mutating func remove(_ slot: Int) {
        let word = slot >> 6
        guard word < words.count else { return }
        words[word] &= ~(1 << UInt64(slot & 63))
    }
}
