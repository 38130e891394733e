/// The public, non-secret identifier of a registered session: 16 lowercase hexadecimal characters
/// (64 random bits). Safe to log, to show to clients, and to use in error messages.
package struct SessionID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The 64-bit value the hexadecimal text spells, most significant nibble first.
    package let rawValue: UInt64

    /// Wraps a raw 64-bit value (used by the store's binary codec).
    package init(rawValue: UInt64) { self.rawValue = rawValue }

    /// A fresh identifier from the system's cryptographic random source (`getrandom(2)`).
    package static func random() -> SessionID {
        var generator = SystemRandomNumberGenerator()
        return SessionID(rawValue: generator.next())
    }

    /// Parses exactly 16 lowercase hexadecimal characters; returns `nil` for anything else
    /// (uppercase, wrong length, other characters).
    package init?(validating text: String) {
        var value: UInt64 = 0
        var count = 0
        for byte in text.utf8 {
            let nibble: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte &- UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte &- UInt8(ascii: "a") &+ 10
            default: return nil
            }
            count += 1
            if count > 16 { return nil }
            value = (value << 4) | UInt64(nibble)
        }
        guard count == 16 else { return nil }
        self.rawValue = value
    }

    /// The 16 lowercase hexadecimal characters.
    package var description: String {
        // Written straight into the string's storage: the store and the run's report ask for it
        // once per call.
        String(unsafeUninitializedCapacity: 16) { buffer in
            writeHex(into: buffer)
            return 16
        }
    }

    /// Appends the 16 lowercase hexadecimal characters of ``description`` to `bytes`, without
    /// a String (the journal writes one per ended session).
    package func appendHex(to bytes: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) { buffer in
            writeHex(into: buffer)
            bytes.append(contentsOf: buffer)
        }
    }

    private func writeHex(into buffer: UnsafeMutableBufferPointer<UInt8>) {
        var v = rawValue
        for i in stride(from: 15, through: 0, by: -1) {
            let nibble = UInt8(truncatingIfNeeded: v & 0xF)
            buffer[i] = nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &+ (nibble &- 10)
            v >>= 4
        }
    }

    /// Orders by raw value.
    package static func < (lhs: SessionID, rhs: SessionID) -> Bool { lhs.rawValue < rhs.rawValue }
}
