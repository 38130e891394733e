import EventLoop
import Glibc

/// One client of the control socket: its descriptor and credentials, its ``state``, the bytes
/// it sent that are not taken yet, and the reply being written. It moves bytes and reports
/// what its socket did to its state; what the lines mean, and when to give up on the client,
/// is ``ControlConnections``'.
final class ControlConnection {
    /// What the connection holds next for the server.
    enum Next: Equatable {
        /// A request line to decode and handle (newline removed).
        case line([UInt8])
        /// A line longer than the limit.
        case tooLong
        /// Nothing now: wait for the handler, the socket, or more bytes.
        case wait
        /// Nothing ever again: close.
        case close
    }

    /// What the event loop watches the socket for.
    enum Watch: Equatable {
        /// Watched, for these events.
        case watched(readable: Bool, writable: Bool)
        /// No longer watched (after a hang-up or an error, which epoll would keep reporting).
        case unwatched
    }

    /// The server's number for the connection.
    let id: UInt64
    /// The connected socket (non-blocking).
    let fd: Int32
    /// Who connected.
    let peer: PeerCredentials
    /// Where the connection is in its life: the one place its transitions are made.
    var state: ControlConnectionState
    /// What the event loop watches the socket for.
    var watch = Watch.watched(readable: true, writable: false)
    /// The timer closing the connection at its deadline, if one is armed.
    var deadlineTimer: EventLoop.TimerID?
    /// Set while the server takes lines: a reply given synchronously inside the handler must not
    /// start taking lines again from within.
    var isPumping = false
    private var input = RequestLineBuffer()
    private var output = ReplyBuffer()

    /// A connection accepted at `now`.
    init(id: UInt64, fd: Int32, peer: PeerCredentials, now: MonotonicInstant) {
        self.id = id
        self.fd = fd
        self.peer = peer
        state = ControlConnectionState(connectedAt: now)
    }

    /// Received bytes not yet taken as lines.
    var pendingInput: Int { input.pendingCount }
    /// Whether the untaken bytes hold more than whitespace (an unfinished request).
    var hasPartialRequest: Bool { input.hasPartialRequest }

    // MARK: Input

    /// Reads what the socket has, up to `maxPending` untaken bytes, through `buffer`; records end
    /// of file or a failure in ``state``.
    func readAvailable(into buffer: inout [UInt8], maxPending: Int) {
        while input.pendingCount <= maxPending {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 {
                input.append(buffer[0..<count])
                continue
            }
            if count == 0 {
                state.inputEnded()
                return
            }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return
            default:
                peerGone()
                return
            }
        }
    }

    /// What comes next: a line while a request is awaited (lines longer than `maxLineBytes`
    /// refused), and, once the input has ended, the unterminated last one, then the close.
    func next(maxLineBytes: Int) -> Next {
        switch state.next {
        case .wait: return .wait
        case .close: return .close
        case .takeLine:
            switch input.nextLine(maxBytes: maxLineBytes) {
            case .line(let line): return .line(line)
            case .tooLong: return .tooLong
            case .none: break
            }
            if state.readsInput { return .wait }
            if let line = input.takeUnterminatedLine() { return .line(line) }
            return .close
        }
    }

    /// A line over the limit: what was received is dropped and nothing more is read; the
    /// `too-large` reply is the last.
    func refuseTooLong() {
        input.discard()
        state.lineTooLong()
    }

    /// Drops the bytes already taken (once per pump).
    func compactInput() { input.compact() }

    // MARK: Output

    /// Queues `line` behind what is being written, and writes what the socket takes (nothing
    /// once the peer is gone).
    func send(_ line: [UInt8], now: MonotonicInstant) {
        guard state.takesReplies else { return }
        output.append(line)
        state.replyQueued()
        flush(now: now)
    }

    /// Writes what the socket takes without blocking. A peer that is gone (EPIPE, ECONNRESET)
    /// sends nothing more either; the requests it sent are still handled.
    func flush(now: MonotonicInstant) {
        while state.isSending {
            let count = output.withUnsentBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if count > 0 {
                output.written(count)
                state.sent(at: now)
                if output.isEmpty { state.replySent() }
                continue
            }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return }
            peerGone()
        }
    }

    /// Sends `line` if the socket takes it at once, and nothing otherwise (a last word before
    /// closing).
    func sendBestEffort(_ line: [UInt8]) {
        guard state.takesReplies, !state.isSending else { return }
        _ = line.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
    }

    /// The socket failed or hung up: nothing more in or out.
    func peerGone() {
        state.peerGone()
        output.clear()
    }
}
