import Basics
import EventLoop
import Glibc

/// Why a control request got no answer: the socket could not be reached, the daemon did not
/// reply in time, or the reply was not the protocol. (A daemon that answers "no" is not an
/// error here: that is a ``ControlResponse`` with `ok == false`.)
package struct ControlClientError: Error, Equatable, CustomStringConvertible {
    /// The kinds of failure.
    package enum Kind: Sendable, Equatable {
        /// No daemon at the path (missing socket, nobody listening).
        case unreachable
        /// The socket's mode or group does not let this user in.
        case permissionDenied
        /// No complete reply within the timeout.
        case timedOut
        /// The connection broke, or the reply was not a protocol response.
        case failed
    }

    /// The kind of failure.
    package let kind: Kind
    /// What failed, naming the socket path (and errno text where there is one).
    package let message: String

    /// Creates an error.
    package init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// The message.
    package var description: String { message }
}

/// A blocking client for the control socket, for the command line: one connection per request.
package struct ControlClient: Sendable {
    /// The socket's path.
    package let socketPath: String
    /// How long to wait, in all, for the connection and the reply.
    package let timeout: Duration
    /// Largest reply accepted.
    package let maxReplyBytes: Int

    /// The socket the CLI uses unless told otherwise.
    package static let defaultSocketPath = "/run/session-cleanup/control.sock"

    /// A client of the daemon at `socketPath`.
    package init(socketPath: String, timeout: Duration = .seconds(30), maxReplyBytes: Int = 64 * 1024 * 1024) {
        self.socketPath = socketPath
        self.timeout = timeout
        self.maxReplyBytes = maxReplyBytes
    }

    /// Sends `request` and returns the daemon's response.
    package func send(_ request: ControlRequest) throws(ControlClientError) -> ControlResponse {
        let line = request.encodedLine()
        let deadline = SystemMonotonicClock().now().advanced(by: timeout)
        let fd = try connect(deadline: deadline)
        defer { close(fd) }
        try write(line, to: fd, deadline: deadline)
        let reply = try readLine(from: fd, deadline: deadline)
        do {
            return try ControlResponse.decode(line: reply)
        } catch {
            throw ControlClientError(.failed, "the reply on \(socketPath) is not a control-protocol response")
        }
    }

    private func connect(deadline: MonotonicInstant) throws(ControlClientError) -> Int32 {
        guard let address = UnixSocketAddress(path: socketPath) else {
            throw ControlClientError(.unreachable, "cannot connect to \(socketPath): the path is empty or too long")
        }
        let fd = socket(
            AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw failure("socket") }
        while true {
            if address.connect(fd) == 0 { return fd }
            let error = errno
            switch error {
            case EINTR:
                continue
            case EAGAIN:
                // The daemon's listen backlog is full: it is busy, not gone. Try again shortly.
                guard SystemMonotonicClock().now() < deadline else {
                    close(fd)
                    throw timedOut("accept the connection")
                }
                usleep(10_000)
            case ENOENT, ECONNREFUSED:
                close(fd)
                throw ControlClientError(
                    .unreachable,
                    "cannot connect to \(socketPath): \(Errno(error).text) (is the daemon running?)")
            case EACCES, EPERM:
                close(fd)
                throw ControlClientError(
                    .permissionDenied,
                    "cannot connect to \(socketPath): \(Errno(error).text) (uid \(getuid()) may not use the "
                        + "control socket: \(Self.accessAdvice(socketPath)))")
            default:
                close(fd)
                throw ControlClientError(.unreachable, "cannot connect to \(socketPath): \(Errno(error).text)")
            }
        }
    }

    private func write(_ bytes: [UInt8], to fd: Int32, deadline: MonotonicInstant) throws(ControlClientError) {
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return Glibc.send(fd, base + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
            }
            if count > 0 {
                offset += count
                continue
            }
            let error = errno
            if count < 0 && error == EINTR { continue }
            if count < 0 && (error == EAGAIN || error == EWOULDBLOCK) {
                try wait(fd, for: Int16(POLLOUT), deadline: deadline, doing: "take the request")
                continue
            }
            throw ControlClientError(.failed, "sending the request to \(socketPath) failed: \(Errno(error).text)")
        }
    }

    private func readLine(from fd: Int32, deadline: MonotonicInstant) throws(ControlClientError) -> [UInt8] {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var scanned = 0
        while true {
            if let newline = received[scanned...].firstIndex(of: UInt8(ascii: "\n")) {
                return Array(received[..<newline])
            }
            scanned = received.count
            guard received.count <= maxReplyBytes else {
                throw ControlClientError(.failed, "the reply on \(socketPath) is longer than \(maxReplyBytes) bytes")
            }
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received.append(contentsOf: chunk[0..<count])
                continue
            }
            if count == 0 {
                throw ControlClientError(
                    .failed, "the daemon closed the connection on \(socketPath) without a complete reply")
            }
            let error = errno
            if error == EINTR { continue }
            if error == EAGAIN || error == EWOULDBLOCK {
                try wait(fd, for: Int16(POLLIN), deadline: deadline, doing: "reply")
                continue
            }
            throw ControlClientError(.failed, "reading the reply on \(socketPath) failed: \(Errno(error).text)")
        }
    }

    private func wait(_ fd: Int32, for events: Int16, deadline: MonotonicInstant, doing what: String)
        throws(ControlClientError)
    {
        while true {
            let left = deadline.duration(since: SystemMonotonicClock().now())
            guard left > .zero else { throw timedOut(what) }
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let result = poll(&entry, 1, Int32(clamping: left.millisecondsRoundedUp))
            if result > 0 { return }
            if result < 0 && errno != EINTR {
                throw ControlClientError(.failed, "poll on \(socketPath) failed: \(Errno(errno).text)")
            }
        }
    }

    private func timedOut(_ what: String) -> ControlClientError {
        ControlClientError(.timedOut, "the daemon on \(socketPath) did not \(what) within \(timeout.humanReadable)")
    }

    private func failure(_ operation: String) -> ControlClientError {
        ControlClientError(.failed, "cannot connect to \(socketPath): \(operation): \(Errno(errno).text)")
    }

    /// Who may connect, from the socket's group: `join the group session-cleanup (usermod -aG
    /// session-cleanup alice, then log in again), or use root`.
    static func accessAdvice(_ socketPath: String) -> String {
        var status = stat()
        guard stat(socketPath, &status) == 0, status.st_gid != 0 else {
            return "it takes write access, given by the socket's group (SocketGroup=) or root"
        }
        let group = AccountLookup.groupName(status.st_gid) ?? String(status.st_gid)
        let user = AccountLookup.userName(getuid()) ?? "$USER"
        return "join the group \(group) (usermod -aG \(group) \(user), then log in again), or use root"
    }
}
