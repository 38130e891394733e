/// A fuzz input read as a stream of bytes (zeros once it runs out), for targets that let the
/// input describe what to build rather than be it.
package struct FuzzBytes {
    private let input: [UInt8]
    private var position = 0

    package init(_ input: [UInt8]) { self.input = input }

    /// Whether every byte has been read.
    package var isEmpty: Bool { position >= input.count }

    /// The next byte, or 0.
    package mutating func next() -> UInt8 {
        guard position < input.count else { return 0 }
        defer { position += 1 }
        return input[position]
    }

    /// The next two bytes as a little-endian number.
    package mutating func u16() -> Int { Int(next()) | Int(next()) << 8 }

    /// `prefix` followed by up to 23 lower-case letters.
    package mutating func text(_ prefix: String) -> String {
        let n = Int(next() % 24)
        return prefix + String((0..<n).map { _ in Character(Unicode.Scalar(0x61 + next() % 26)) })
    }
}
