import EventLoop
import Glibc

/// One client of the control socket: its descriptor and credentials, the bytes it sent that
/// are not taken yet, the reply being written, and when the server last began waiting for it.
/// It moves bytes and cuts lines; what they mean, and when to give up on the client, is the
/// ``ControlServer``'s.
final class ControlConnection {
    /// What a read from the socket came to.
    enum ReadEnd {
        /// Nothing more to read now.
        case wouldBlock
        /// The line limit is reached: reading stops until lines are taken.
        case full
        /// End of file: the client sends nothing more.
        case endOfFile
        /// The socket failed (ECONNRESET): nothing more in or out.
        case failed
    }

    /// What the received bytes hold next.
    enum NextLine {
        /// A complete line, newline removed.
        case line([UInt8])
        /// A line (or the start of one) longer than the limit.
        case tooLong
        /// No complete line yet.
        case none
    }

    let id: UInt64
    let fd: Int32
    let peer: PeerCredentials

    /// Received bytes; those before `inputStart` are taken already (compacted once per pump, so a
    /// flood of short lines costs linear time).
    private var input: [UInt8] = []
    private var inputStart = 0
    /// The reply being written, and how much of it is out.
    private var output: [UInt8] = []
    private var outputOffset = 0

    /// End of file read (or reading stopped for good).
    var inputClosed = false
    /// The peer cannot take replies any more (EPIPE, hang-up): they are dropped.
    private(set) var outputDead = false
    /// Close once the reply in `output` is out (after `too-large`).
    var closeWhenFlushed = false
    /// The serial of the request with the handler, if any.
    var awaiting: UInt64?
    var serial: UInt64 = 0
    /// Re-entrancy guard: a reply given synchronously inside `handle` must not recurse.
    var pumping = false
    var watched = true
    var interest = (read: true, write: false)
    /// When the server began waiting for the client's next request: when it connected, or when
    /// its previous request was answered. Bytes that arrive do not move it: a request must be
    /// complete within the limit, however slowly it trickles in.
    var waitingSince: MonotonicInstant
    /// When bytes of a reply last went out: a large reply that is being read still progresses.
    var lastWrite: MonotonicInstant
    var deadlineTimer: EventLoop.TimerID?

    init(id: UInt64, fd: Int32, peer: PeerCredentials, now: MonotonicInstant) {
        self.id = id
        self.fd = fd
        self.peer = peer
        waitingSince = now
        lastWrite = now
    }

    var hasUnsentOutput: Bool { outputOffset < output.count }
    /// Whether a reply is still to be written to a peer that takes them.
    var isWriting: Bool { hasUnsentOutput && !outputDead }
    /// Received bytes not yet taken as lines.
    var pendingInput: Int { input.count - inputStart }
    /// Whether the untaken bytes hold more than whitespace (an unfinished request).
    var hasPartialRequest: Bool { input[inputStart...].contains(where: { !Self.isSpace($0) }) }

    // MARK: Input

    /// Reads what the socket has, up to `maxPending` untaken bytes, through `buffer`.
    func readAvailable(into buffer: inout [UInt8], maxPending: Int) -> ReadEnd {
        while pendingInput <= maxPending {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 {
                input.append(contentsOf: buffer[0..<count])
                continue
            }
            if count == 0 {
                inputClosed = true
                return .endOfFile
            }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            default:
                inputClosed = true
                dropOutput()
                return .failed
            }
        }
        return .full
    }

    /// Takes the next complete line of at most `maxBytes` (a CR before its newline removed).
    func nextLine(maxBytes: Int) -> NextLine {
        if let newline = input[inputStart...].firstIndex(of: UInt8(ascii: "\n")) {
            guard newline - inputStart <= maxBytes else { return .tooLong }
            var line = Array(input[inputStart..<newline])
            inputStart = newline + 1
            if line.last == UInt8(ascii: "\r") { line.removeLast() }
            return .line(line)
        }
        return pendingInput > maxBytes ? .tooLong : .none
    }

    /// At end of input: an unterminated last line is still a request (`printf '%s' …`).
    func takeUnterminatedLine() -> [UInt8]? {
        guard inputClosed, hasPartialRequest else { return nil }
        var line = Array(input[inputStart...])
        discardInput()
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        return line
    }

    /// Forgets what was received and not taken.
    func discardInput() {
        input = []
        inputStart = 0
    }

    /// Drops the bytes already taken.
    func compactInput() {
        guard inputStart > 0 else { return }
        input.removeFirst(inputStart)
        inputStart = 0
    }

    // MARK: Output

    /// Queues `line` behind what is being written, and writes what the socket takes.
    func enqueue(_ line: [UInt8], now: MonotonicInstant) {
        guard !outputDead else { return }
        if hasUnsentOutput {
            output.append(contentsOf: line)
        } else {
            output = line
            outputOffset = 0
        }
        flush(now: now)
    }

    /// Writes what the socket takes without blocking. A peer that is gone (EPIPE, ECONNRESET)
    /// sends nothing more either; the requests it sent are still handled.
    func flush(now: MonotonicInstant) {
        while isWriting {
            let count = output.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return send(
                    fd, base + outputOffset, raw.count - outputOffset, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if count > 0 {
                outputOffset += count
                lastWrite = now
                continue
            }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return }
            inputClosed = true
            dropOutput()
        }
        if !hasUnsentOutput {
            output = []
            outputOffset = 0
        }
    }

    /// Stops writing for good: the peer takes no more replies.
    func dropOutput() {
        outputDead = true
        output = []
        outputOffset = 0
    }

    /// Sends `line` if the socket takes it at once, and nothing otherwise (a last word before closing).
    func sendBestEffort(_ line: [UInt8]) {
        guard !hasUnsentOutput, !outputDead else { return }
        _ = line.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
    }

    static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
}
