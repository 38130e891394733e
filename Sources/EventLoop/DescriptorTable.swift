/// Values by file descriptor, in an array indexed by the descriptor: descriptors are small
/// numbers the kernel hands out lowest first, so finding one is an index, not a hash. Grows to
/// the highest descriptor stored; a negative descriptor has no value.
struct DescriptorTable<Value> {
    private var values: [Value?] = []

    init() {}

    /// The value for `fd`, or nil. Setting nil removes it.
    subscript(fd: Int32) -> Value? {
        get {
            guard fd >= 0, Int(fd) < values.count else { return nil }
            return values[Int(fd)]
        }
        set {
            precondition(fd >= 0, "negative descriptor \(fd)")
            let index = Int(fd)
            if index >= values.count {
                guard newValue != nil else { return }
                values.append(contentsOf: repeatElement(nil, count: index + 1 - values.count))
            }
            values[index] = newValue
        }
    }

    /// Removes and returns the value for `fd`, if it has one.
    mutating func removeValue(for fd: Int32) -> Value? {
        guard let value = self[fd] else { return nil }
        self[fd] = nil
        return value
    }
}
