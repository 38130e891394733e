/// The bytes a control client sent that are not taken yet, cut into request lines.
struct RequestLineBuffer {
    /// What the received bytes hold next.
    enum NextLine: Equatable {
        /// A complete line, newline (and a CR before it) removed.
        case line([UInt8])
        /// A line (or the start of one) longer than the limit.
        case tooLong
        /// No complete line yet.
        case none
    }

    /// Received bytes; those before `start` are taken already (dropped once per pump by
    /// ``compact()``, so a flood of short lines costs linear time).
    private var bytes: [UInt8] = []
    private var start = 0

    /// Received bytes not yet taken as lines.
    var pendingCount: Int { bytes.count - start }

    /// Whether the untaken bytes hold more than whitespace (an unfinished request).
    var hasPartialRequest: Bool { bytes[start...].contains(where: { !Self.isSpace($0) }) }

    /// Adds bytes received.
    mutating func append(_ received: ArraySlice<UInt8>) {
        bytes.append(contentsOf: received)
    }

    /// Takes the next complete line of at most `maxBytes`.
    mutating func nextLine(maxBytes: Int) -> NextLine {
        if let newline = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) {
            guard newline - start <= maxBytes else { return .tooLong }
            var line = Array(bytes[start..<newline])
            start = newline + 1
            if line.last == UInt8(ascii: "\r") { line.removeLast() }
            return .line(line)
        }
        return pendingCount > maxBytes ? .tooLong : .none
    }

    /// At end of input: an unterminated last line is still a request (`printf '%s' …`). Takes
    /// it if it holds more than whitespace, and forgets the rest.
    mutating func takeUnterminatedLine() -> [UInt8]? {
        guard hasPartialRequest else { return nil }
        var line = Array(bytes[start...])
        discard()
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        return line
    }

    /// Forgets what was received and not taken.
    mutating func discard() {
        bytes = []
        start = 0
    }

    /// Drops the bytes already taken.
    mutating func compact() {
        guard start > 0 else { return }
        bytes.removeFirst(start)
        start = 0
    }

    /// Whether `byte` is a space, a tab, a CR or a newline: a line of only these is no request.
    static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
}
