/// The reply bytes a control connection has still to write, and how much of them is out.
struct ReplyBuffer {
    private var bytes: [UInt8] = []
    private var offset = 0

    /// Whether every byte queued is out.
    var isEmpty: Bool { offset >= bytes.count }

    /// Queues `line` behind what is being written.
    mutating func append(_ line: [UInt8]) {
        if isEmpty {
            bytes = line
            offset = 0
        } else {
            bytes.append(contentsOf: line)
        }
    }

    /// Calls `body` with the bytes not yet written (never empty while ``isEmpty`` is false).
    func withUnsentBytes<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        bytes.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
    }

    /// Marks `count` more bytes as written; the buffer is released once everything is.
    mutating func written(_ count: Int) {
        offset += count
        if isEmpty { clear() }
    }

    /// Drops everything queued.
    mutating func clear() {
        bytes = []
        offset = 0
    }
}
