import Vocabulary

/// Writes the lines of ``LastStopRunResults`` into space its caller sized for them: a
/// precondition stops a line that would run past it.
struct ResultsLineWriter {
    private let base: UnsafeMutableBufferPointer<UInt8>
    /// Bytes written.
    private(set) var count = 0

    /// A writer filling `base` from its start.
    init(_ base: UnsafeMutableBufferPointer<UInt8>) { self.base = base }

    /// One call's line.
    mutating func line(_ call: RunReport.CallResult) {
        let tab = UInt8(ascii: "\t")
        hex(call.sessionID.rawValue)
        byte(tab)
        decimal(Int64(call.ownerUID))
        byte(tab)
        escaped(call.endpoint)
        byte(tab)
        escaped(call.outcome.word)
        byte(tab)
        if let status = call.outcome.httpStatus {
            decimal(Int64(status))
        } else {
            byte(UInt8(ascii: "-"))
        }
        byte(tab)
        decimal(Int64(call.attempts))
        byte(tab)
        decimal(call.durationMicroseconds)
        byte(tab)
        if !call.outcome.isEnded { escaped(call.outcome.cause ?? "") }
        byte(UInt8(ascii: "\n"))
    }

    /// One byte.
    private mutating func byte(_ value: UInt8) {
        precondition(count < base.count, "results file longer than the space sized for it")
        base[count] = value
        count += 1
    }

    /// 16 lowercase hexadecimal digits, as ``SessionID/description`` spells them.
    @inline(__always) private mutating func hex(_ value: UInt64) {
        for shift in stride(from: 60, through: 0, by: -4) {
            let nibble = UInt8(truncatingIfNeeded: (value >> UInt64(shift)) & 0xF)
            byte(nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &+ (nibble &- 10))
        }
    }

    /// `value` in decimal, with a `-` when negative.
    private mutating func decimal(_ value: Int64) {
        if value < 0 { byte(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        guard magnitude < 10_000_000_000_000_000 else {
            for digit in String(magnitude).utf8 { byte(digit) }
            return
        }
        // Up to 16 digits, 4 bits each, the most significant ending up lowest.
        var packed: UInt64 = 0
        var digitCount = 0
        repeat {
            packed = packed << 4 | magnitude % 10
            digitCount += 1
            magnitude /= 10
        } while magnitude > 0
        for _ in 0..<digitCount {
            byte(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: packed & 0xF))
            packed >>= 4
        }
    }

    /// `text` with backslash, tab and newline escaped (`\\`, `\t`, `\n`).
    private mutating func escaped(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            for value in utf8 {
                switch value {
                case UInt8(ascii: "\\"):
                    byte(value)
                    byte(value)
                case UInt8(ascii: "\t"):
                    byte(UInt8(ascii: "\\"))
                    byte(UInt8(ascii: "t"))
                case UInt8(ascii: "\n"):
                    byte(UInt8(ascii: "\\"))
                    byte(UInt8(ascii: "n"))
                default:
                    byte(value)
                }
            }
        }
    }
}
