import Basics
import CSystemd
import Glibc

/// What one non-blocking write came to.
enum JournalWrite: Equatable {
    /// This many bytes went out (a datagram transport always writes the whole entry).
    case wrote(Int)
    /// The receiver is not keeping up: wait until the descriptor is writable.
    case wouldBlock
    /// The destination is unusable (the errno).
    case failed(Int32)
}

/// Where encoded entries go, written without ever blocking the event loop.
protocol JournalTransport: AnyObject {
    /// The descriptor to wait on for writability; nil when writes never block (a regular file).
    var pollDescriptor: Int32? { get }
    /// True for a byte stream (a write may be partial); false for datagrams (whole entries).
    var isStream: Bool { get }
    /// Writes `bytes` (or, for a stream, a prefix of them).
    func write(_ bytes: UnsafeRawBufferPointer) -> JournalWrite
    /// After `ECONNREFUSED` (the receiver was restarted): opens a new connection, perhaps on
    /// another descriptor. False when that is not possible.
    func reconnect() -> Bool
}

/// journald's native socket, connected and non-blocking: writable only when journald has room.
final class NativeJournalTransport: JournalTransport {
    private let path: String?
    private var fd: Int32

    /// Connects to `path` (nil: `/run/systemd/journal/socket`).
    init(path: String? = nil) throws {
        self.path = path
        let fd = csd_journal_connect(path)
        guard fd >= 0 else {
            throw SystemCallError("connect", path ?? "/run/systemd/journal/socket", negativeErrno: fd)
        }
        self.fd = fd
    }

    deinit { Glibc.close(fd) }

    var pollDescriptor: Int32? { fd }
    var isStream: Bool { false }

    func write(_ bytes: UnsafeRawBufferPointer) -> JournalWrite {
        switch csd_journal_send(fd, bytes.baseAddress, bytes.count) {
        case 0: return .wrote(bytes.count)
        case -EAGAIN: return .wouldBlock
        case let result: return .failed(-result)
        }
    }

    func reconnect() -> Bool {
        let fresh = csd_journal_connect(path)
        guard fresh >= 0 else { return false }
        Glibc.close(fd)
        fd = fresh
        return true
    }
}

/// Standard error, written without blocking: a socket (journald's stream) with `MSG_DONTWAIT`;
/// a pipe, FIFO or terminal through a descriptor of its own opened `O_NONBLOCK` (never changing
/// the flags of the descriptor the daemon shares with its parent); a regular file as it is
/// (writes to it do not wait for a reader).
final class StandardErrorTransport: JournalTransport {
    private enum Mode {
        case socket
        case own(Int32)
        case plain
    }

    private let mode: Mode

    /// Looks at what fd 2 is and picks the way to write it.
    init() {
        var info = stat()
        guard fstat(STDERR_FILENO, &info) == 0 else {
            mode = .plain
            return
        }
        switch info.st_mode & S_IFMT {
        case S_IFSOCK:
            mode = .socket
        case S_IFREG:
            mode = .plain
        default:
            let own = open("/proc/self/fd/2", O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | O_APPEND)
            // Without /proc, writes block as they always did; nothing better is possible.
            mode = own >= 0 ? .own(own) : .plain
        }
    }

    deinit { if case .own(let fd) = mode { Glibc.close(fd) } }

    var pollDescriptor: Int32? {
        switch mode {
        case .socket: return STDERR_FILENO
        case .own(let fd): return fd
        case .plain: return nil
        }
    }

    var isStream: Bool { true }

    func write(_ bytes: UnsafeRawBufferPointer) -> JournalWrite {
        while true {
            let written: Int
            switch mode {
            case .socket:
                written = send(STDERR_FILENO, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
            case .own(let fd):
                written = Glibc.write(fd, bytes.baseAddress, bytes.count)
            case .plain:
                written = Glibc.write(STDERR_FILENO, bytes.baseAddress, bytes.count)
            }
            if written >= 0 { return .wrote(written) }
            let error = errno
            if error == EINTR { continue }
            if error == EAGAIN || error == EWOULDBLOCK { return .wouldBlock }
            return .failed(error)
        }
    }

    func reconnect() -> Bool { false }
}
