/// A set of file descriptors as a bitmap: descriptors are small numbers, so membership is a bit
/// test rather than a hash (``CurlMulti`` updates it for every socket libcurl watches).
struct DescriptorSet {
    private var words: [UInt64] = []

    /// Descriptors in the set.
    private(set) var count = 0

    init() {}

    /// Whether `fd` is in the set (never a negative descriptor).
    func contains(_ fd: Int32) -> Bool {
        guard fd >= 0 else { return false }
        let (word, bit) = Self.place(fd)
        return word < words.count && words[word] & bit != 0
    }

    /// Adds `fd`; returns whether it was new. A negative descriptor is never added.
    @discardableResult
    mutating func insert(_ fd: Int32) -> Bool {
        guard fd >= 0 else { return false }
        let (word, bit) = Self.place(fd)
        if word >= words.count { words += [UInt64](repeating: 0, count: word + 1 - words.count) }
        guard words[word] & bit == 0 else { return false }
        words[word] |= bit
        count += 1
        return true
    }

    /// Removes `fd`; returns whether it was in the set.
    @discardableResult
    mutating func remove(_ fd: Int32) -> Bool {
        guard contains(fd) else { return false }
        let (word, bit) = Self.place(fd)
        words[word] &= ~bit
        count -= 1
        return true
    }

    /// The descriptors in the set, in ascending order.
    var members: [Int32] {
        var out: [Int32] = []
        out.reserveCapacity(count)
        for (index, word) in words.enumerated() where word != 0 {
            for bit in 0..<64 where word & (1 << UInt64(bit)) != 0 { out.append(Int32(index * 64 + bit)) }
        }
        return out
    }

    private static func place(_ fd: Int32) -> (word: Int, bit: UInt64) {
        (Int(fd) / 64, 1 << UInt64(Int(fd) % 64))
    }
}
