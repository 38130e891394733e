import CSystemd
import Glibc

/// What the control server hands each decoded request to. The server knows the protocol, not
/// the domain: authorization (by ``PeerCredentials/uid``), limits per user and persistence are
/// the handler's.
public protocol ControlRequestHandler: AnyObject {
    /// Called on the loop thread for every decoded request. Call `reply` exactly once, on the loop
    /// thread, now or later (after a group commit's fsync, after an `end` run); further calls are
    /// ignored, and a reply for a client that has gone away is dropped.
    func handle(_ request: ControlRequest, from peer: PeerCredentials, reply: @escaping (ControlResponse) -> Void)
}

/// A control server that could not start: what failed and on which socket path.
public struct ControlServerError: Error, Equatable, CustomStringConvertible {
    /// What failed, with the path and errno text.
    public let message: String

    /// Creates an error.
    public init(_ message: String) { self.message = message }

    /// The message.
    public var description: String { message }
}

/// The daemon's control socket: a Unix stream socket served on the ``EventLoop``.
///
/// Protocol: one JSON request per line, one JSON response line each (`docs/control-protocol.md`).
/// A connection's requests are handled one at a time, in order: the next line is not decoded
/// until the previous reply has been written out, so replies are always in request order and a
/// client that does not read its replies only ever holds one reply in memory.
///
/// Nothing blocks the loop: the listening and client sockets are non-blocking; a request line
/// longer than ``Limits/maxLineBytes`` gets a `too-large` reply and the connection is closed;
/// malformed JSON gets a `bad-request` reply and the connection stays usable; a client that is
/// idle (sends nothing, or sends half a line, or does not read its reply) for
/// ``Limits/idleTimeout`` is closed, except while its request is with the handler; clients beyond
/// ``Limits/maxClients`` get a `limit` error line and are closed at once. Every complete request
/// line is handled even if its sender hangs up before the reply, which is then dropped.
public final class ControlServer {
    /// Bounds on what clients may cost.
    public struct Limits: Sendable, Equatable {
        /// Longest request line, newline excluded.
        public var maxLineBytes: Int
        /// How long a client may be idle (no bytes either way) while the server waits for it.
        public var idleTimeout: Duration
        /// Connections served at once.
        public var maxClients: Int
        /// Largest reply; a larger one is replaced by an `internal` error.
        public var maxReplyBytes: Int

        /// The daemon's limits: 64 KiB lines, 5 s idle, 512 clients, 32 MiB replies.
        public init(
            maxLineBytes: Int = 64 * 1024, idleTimeout: Duration = .seconds(5), maxClients: Int = 512,
            maxReplyBytes: Int = 32 * 1024 * 1024
        ) {
            self.maxLineBytes = maxLineBytes
            self.idleTimeout = idleTimeout
            self.maxClients = maxClients
            self.maxReplyBytes = maxReplyBytes
        }
    }

    private final class Client {
        let id: UInt64
        let fd: Int32
        let peer: PeerCredentials
        /// Received bytes; those before `inputStart` are taken already (compacted once per pump,
        /// so a flood of short lines costs linear time).
        var input: [UInt8] = []
        var inputStart = 0
        /// The reply being written, and how much of it is out.
        var output: [UInt8] = []
        var outputOffset = 0
        /// End of file read (or reading stopped for good).
        var inputClosed = false
        /// The peer cannot take replies any more (EPIPE, hang-up): they are dropped.
        var outputDead = false
        /// Close once the reply in `output` is out (after `too-large`).
        var closeWhenFlushed = false
        /// The serial of the request with the handler, if any.
        var awaiting: UInt64?
        var serial: UInt64 = 0
        /// Re-entrancy guard: a reply given synchronously inside `handle` must not recurse.
        var pumping = false
        var watched = true
        var interest = (read: true, write: false)
        var lastActivity: MonotonicInstant
        var idleTimer: EventLoop.TimerID?

        init(id: UInt64, fd: Int32, peer: PeerCredentials, now: MonotonicInstant) {
            self.id = id
            self.fd = fd
            self.peer = peer
            lastActivity = now
        }

        var hasUnsentOutput: Bool { outputOffset < output.count }
        /// Received bytes not yet taken as lines.
        var pendingInput: Int { input.count - inputStart }
        var hasPartialRequest: Bool { input[inputStart...].contains(where: { !ControlServer.isSpace($0) }) }
    }

    /// The socket's path.
    public let socketPath: String
    /// The limits in force.
    public let limits: Limits
    /// Receives every request; held weakly (the daemon owns the server and is its handler).
    public weak var handler: (any ControlRequestHandler)?

    private let loop: EventLoop
    private let journal: (any JournalSink)?
    private var listenFD: Int32 = -1
    private var socketIdentity: (device: UInt64, inode: UInt64)?
    private var clients: [UInt64: Client] = [:]
    private var nextClientID: UInt64 = 0
    private var readBuffer = [UInt8](repeating: 0, count: 16 * 1024)
    private var lastLimitLog: MonotonicInstant?
    private var acceptPaused = false

    /// Connections open now.
    public var clientCount: Int { clients.count }
    /// Whether the server still accepts connections (until ``close()``).
    public var isListening: Bool { listenFD >= 0 }

    /// Creates the socket at `socketPath` (replacing a stale one; refusing if another process
    /// listens there) with mode `socketMode` and group `socketGroup` (a name or number; empty:
    /// the daemon's own), and serves it on `loop`. The daemon passes `[Control] SocketMode=` and
    /// `SocketGroup=`.
    public convenience init(
        socketPath: String, socketMode: UInt32 = 0o660, socketGroup: String = "", loop: EventLoop,
        handler: any ControlRequestHandler, limits: Limits = Limits(), journal: (any JournalSink)? = nil
    ) throws(ControlServerError) {
        let (fd, identity) = try Self.listen(path: socketPath, mode: socketMode, group: socketGroup)
        try self.init(
            listening: fd, identity: identity, socketPath: socketPath, loop: loop, handler: handler, limits: limits,
            journal: journal)
    }

    /// Serves `fd`, a non-blocking socket that already listens at `socketPath` — one systemd
    /// passed (socket activation). It belongs to the socket unit: ``close()`` closes this
    /// process's descriptor but never removes the file, and connections queued in it when this
    /// process exits wait for the next one.
    public convenience init(
        adopting fd: Int32, socketPath: String, loop: EventLoop, handler: any ControlRequestHandler,
        limits: Limits = Limits(), journal: (any JournalSink)? = nil
    ) throws(ControlServerError) {
        try self.init(
            listening: fd, identity: nil, socketPath: socketPath, loop: loop, handler: handler, limits: limits,
            journal: journal)
    }

    private init(
        listening fd: Int32, identity: (device: UInt64, inode: UInt64)?, socketPath: String, loop: EventLoop,
        handler: any ControlRequestHandler, limits: Limits, journal: (any JournalSink)?
    ) throws(ControlServerError) {
        self.socketPath = socketPath
        self.limits = limits
        self.loop = loop
        self.handler = handler
        self.journal = journal
        listenFD = fd
        socketIdentity = identity
        do {
            try loop.watch(fd) { [weak self] _ in self?.acceptClients() }
        } catch {
            close()
            throw ControlServerError("cannot serve control socket \(socketPath): \(error)")
        }
    }

    deinit {
        close()
        disconnectAll()
    }

    /// Stops listening and removes the socket file (if it is still the one this server made; an
    /// adopted socket is never removed). Connected clients are still served; ``disconnectAll()``
    /// closes them.
    public func close() {
        guard listenFD >= 0 else { return }
        loop.unwatch(listenFD)
        Glibc.close(listenFD)
        listenFD = -1
        // Only our own socket: a newer daemon may already have replaced it.
        var status = stat()
        if let identity = socketIdentity, lstat(socketPath, &status) == 0,
            UInt64(status.st_dev) == identity.device, UInt64(status.st_ino) == identity.inode
        {
            unlink(socketPath)
        }
        socketIdentity = nil
    }

    /// Closes every client connection; replies still owed to them are dropped.
    public func disconnectAll() {
        for client in Array(clients.values) { closeClient(client) }
    }

    // MARK: Listening socket

    private static func listen(path: String, mode: UInt32, group: String) throws(ControlServerError)
        -> (Int32, (device: UInt64, inode: UInt64))
    {
        guard let address = UnixSocketAddress(path: path) else {
            throw ControlServerError(
                "control socket path \(path) is empty or too long (\(path.utf8.count) bytes, at most "
                    + "\(UnixSocketAddress.maxPathBytes))")
        }
        let gid = try group.isEmpty ? nil : lookUpGroup(group)
        try removeStaleSocket(address)

        let fd = socket(
            AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw failure("socket", path) }
        var bound = false
        func fail(_ operation: String) -> ControlServerError {
            let error = failure(operation, path)
            Glibc.close(fd)
            if bound { unlink(path) }
            return error
        }
        // The socket inode's mode, less the umask, becomes the file's mode at bind(2): the file is
        // never more open than configured, not even between bind and chmod.
        guard fchmod(fd, mode_t(mode)) == 0 else { throw fail("fchmod") }
        guard address.bind(fd) == 0 else { throw fail("bind") }
        bound = true
        if let gid {
            guard chown(path, uid_t.max, gid) == 0 else { throw fail("chown to group \(group) (gid \(gid))") }
        }
        // Exactly the configured mode, whatever the umask took away.
        guard chmod(path, mode_t(mode)) == 0 else { throw fail("chmod \(String(mode, radix: 8))") }
        guard Glibc.listen(fd, SOMAXCONN) == 0 else { throw fail("listen") }
        var status = stat()
        guard lstat(path, &status) == 0 else { throw fail("stat") }
        return (fd, (UInt64(status.st_dev), UInt64(status.st_ino)))
    }

    /// Removes a socket file nobody listens on; refuses to touch anything else.
    private static func removeStaleSocket(_ address: UnixSocketAddress) throws(ControlServerError) {
        let path = address.path
        var status = stat()
        guard lstat(path, &status) == 0 else {
            if errno == ENOENT { return }
            throw failure("stat", path)
        }
        guard status.st_mode & S_IFMT == S_IFSOCK else {
            throw ControlServerError("cannot create control socket \(path): the path exists and is not a socket")
        }
        switch probe(address) {
        case 0:
            throw ControlServerError(
                "cannot create control socket \(path): another process is listening on it (is the daemon already running?)"
            )
        case ECONNREFUSED:
            guard unlink(path) == 0 || errno == ENOENT else { throw failure("unlink stale socket", path) }
        case let error:
            throw ControlServerError(
                "cannot check existing control socket \(path): \(String(cString: strerror(error)))")
        }
    }

    /// Connects to `address` without blocking: 0 if someone listens (or its backlog is full), else errno.
    private static func probe(_ address: UnixSocketAddress) -> Int32 {
        let fd = socket(
            AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return errno }
        defer { Glibc.close(fd) }
        if address.connect(fd) == 0 || errno == EAGAIN { return 0 }
        return errno
    }

    /// The gid of `SocketGroup=`: a group name (`getgrnam_r`) or a number.
    static func lookUpGroup(_ name: String) throws(ControlServerError) -> gid_t {
        var group = Glibc.group()
        var found: UnsafeMutablePointer<Glibc.group>?
        var size = max(1024, Int(sysconf(Int32(_SC_GETGR_R_SIZE_MAX))))
        while true {
            var buffer = [CChar](repeating: 0, count: size)
            let result = getgrnam_r(name, &group, &buffer, buffer.count, &found)
            if result == ERANGE && size < 1 << 20 {
                size *= 2
                continue
            }
            if result == 0, found != nil { return group.gr_gid }
            if let number = UInt32(name) { return gid_t(number) }
            if result == 0 {
                throw ControlServerError("SocketGroup=\(name): no such group")
            }
            throw ControlServerError("SocketGroup=\(name): getgrnam_r: \(String(cString: strerror(result)))")
        }
    }

    private static func failure(_ operation: String, _ path: String) -> ControlServerError {
        let error = errno
        return ControlServerError(
            "control socket \(path): \(operation): \(String(cString: strerror(error))) (errno \(error))")
    }

    // MARK: Accepting

    private func acceptClients() {
        while listenFD >= 0 {
            let fd = csd_accept_nonblocking(listenFD)
            if fd < 0 {
                switch -fd {
                case EAGAIN, EWOULDBLOCK:
                    return
                case EINTR, ECONNABORTED, EPROTO:
                    continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    // The connection stays queued; pause briefly rather than spin on it.
                    log(
                        .error,
                        "Control socket \(socketPath): accept: \(String(cString: strerror(-fd))); pausing 100 ms")
                    pauseAccepting()
                    return
                default:
                    log(.error, "Control socket \(socketPath): accept: \(String(cString: strerror(-fd)))")
                    pauseAccepting()
                    return
                }
            }
            let peer: PeerCredentials
            do {
                peer = try PeerCredentials.of(socket: fd)
            } catch {
                log(.warning, "Control socket \(socketPath): connection refused: \(error)")
                Glibc.close(fd)
                continue
            }
            guard clients.count < limits.maxClients else {
                refuseOverLimit(fd, peer)
                continue
            }
            nextClientID += 1
            let client = Client(id: nextClientID, fd: fd, peer: peer, now: loop.clock.now())
            let id = client.id
            do {
                try loop.watch(fd, readable: true, writable: false) { [weak self] readiness in
                    self?.ready(clientID: id, readiness)
                }
            } catch {
                log(.error, "Control socket \(socketPath): cannot watch client \(peer): \(error)")
                Glibc.close(fd)
                continue
            }
            clients[id] = client
            armIdleTimer(client)
        }
    }

    private func pauseAccepting() {
        guard !acceptPaused, listenFD >= 0 else { return }
        acceptPaused = true
        try? loop.update(listenFD, readable: false, writable: false)
        loop.schedule(after: .milliseconds(100)) { [weak self] in
            guard let self else { return }
            acceptPaused = false
            if listenFD >= 0 { try? loop.update(listenFD, readable: true, writable: false) }
        }
    }

    private func refuseOverLimit(_ fd: Int32, _ peer: PeerCredentials) {
        let line = ControlResponse.failure(
            .limit, "too many control connections (\(limits.maxClients)); try again later"
        ).encodedLine()
        _ = line.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
        Glibc.close(fd)
        let now = loop.clock.now()
        if lastLimitLog.map({ now.duration(since: $0) >= .seconds(10) }) ?? true {
            lastLimitLog = now
            log(
                .warning, "Control socket \(socketPath): refused \(peer): already \(limits.maxClients) connections",
                [JournalField(.peerUID, peer.uid)])
        }
    }

    // MARK: Client I/O

    private func ready(clientID: UInt64, _ readiness: EventLoop.Readiness) {
        guard let client = clients[clientID] else { return }
        if readiness.writable { flush(client) }
        if readiness.readable && !client.inputClosed { readAvailable(client) }
        if readiness.failed && clients[clientID] != nil && Self.isHungUp(client.fd) {
            // Hang-up or error: nothing more will come or go. Stop watching (epoll would keep
            // reporting it), handle what was received, then close.
            client.inputClosed = true
            dropOutput(client)
            if client.watched {
                loop.unwatch(client.fd)
                client.watched = false
            }
        }
        guard clients[clientID] != nil else { return }
        pump(client)
    }

    /// Confirms a hang-up before acting on it: the report may be stale, for a descriptor closed
    /// and reused (by a new client) earlier in the same batch of events.
    private static func isHungUp(_ fd: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 0) == 1 else { return false }
        return entry.revents & Int16(POLLHUP | POLLERR) != 0
    }

    private func readAvailable(_ client: Client) {
        while client.pendingInput <= limits.maxLineBytes {
            let count = readBuffer.withUnsafeMutableBytes {
                recv(client.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
            }
            if count > 0 {
                client.input.append(contentsOf: readBuffer[0..<count])
                client.lastActivity = loop.clock.now()
                continue
            }
            if count == 0 {
                client.inputClosed = true
                return
            }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return
            default:
                client.inputClosed = true
                dropOutput(client)
                return
            }
        }
    }

    /// Takes complete lines one at a time, each after the previous reply is out, then decides
    /// what to watch for and whether to close.
    private func pump(_ client: Client) {
        guard !client.pumping else { return }
        client.pumping = true
        defer { client.pumping = false }
        while clients[client.id] != nil {
            if client.awaiting != nil || (client.hasUnsentOutput && !client.outputDead) { break }
            if client.closeWhenFlushed {
                closeClient(client)
                return
            }
            if let newline = client.input[client.inputStart...].firstIndex(of: UInt8(ascii: "\n")) {
                if newline - client.inputStart > limits.maxLineBytes {
                    refuseTooLarge(client)
                    continue
                }
                let line = Array(client.input[client.inputStart..<newline])
                client.inputStart = newline + 1
                process(line, from: client)
                continue
            }
            if client.pendingInput > limits.maxLineBytes {
                refuseTooLarge(client)
                continue
            }
            if client.inputClosed {
                // End of input: an unterminated last line is still a request (`printf '%s' …`).
                if client.hasPartialRequest {
                    let line = Array(client.input[client.inputStart...])
                    client.input = []
                    client.inputStart = 0
                    process(line, from: client)
                    continue
                }
                closeClient(client)
                return
            }
            break
        }
        guard clients[client.id] != nil else { return }
        if client.inputStart > 0 {
            client.input.removeFirst(client.inputStart)
            client.inputStart = 0
        }
        updateInterest(client)
        armIdleTimer(client)
    }

    private func process(_ line: [UInt8], from client: Client) {
        var line = line[...]
        if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
        guard line.contains(where: { !Self.isSpace($0) }) else { return }  // blank lines are not requests
        let request: ControlRequest
        do {
            request = try ControlRequest.decode(line: line)
        } catch {
            enqueue(.failure(error.code, error.message), to: client)
            return
        }
        guard let handler else {
            enqueue(.failure(.internal, "the daemon is not accepting requests"), to: client)
            return
        }
        client.serial += 1
        let serial = client.serial
        client.awaiting = serial
        if let timer = client.idleTimer {
            loop.cancel(timer)
            client.idleTimer = nil
        }
        let clientID = client.id
        handler.handle(request, from: client.peer) { [weak self] response in
            self?.complete(clientID: clientID, serial: serial, response)
        }
    }

    private func complete(clientID: UInt64, serial: UInt64, _ response: ControlResponse) {
        // Gone, or a second reply to the same request: drop it.
        guard let client = clients[clientID], client.awaiting == serial else { return }
        client.awaiting = nil
        client.lastActivity = loop.clock.now()
        enqueue(response, to: client)
        pump(client)
    }

    private func refuseTooLarge(_ client: Client) {
        client.input = []
        client.inputStart = 0
        client.inputClosed = true
        client.closeWhenFlushed = true
        log(
            .notice,
            "Control client \(client.peer): request line longer than \(limits.maxLineBytes) bytes; closing the connection",
            [JournalField(.peerUID, client.peer.uid)])
        enqueue(
            .failure(.tooLarge, "request line longer than \(limits.maxLineBytes) bytes; closing the connection"),
            to: client)
    }

    private func enqueue(_ response: ControlResponse, to client: Client) {
        guard !client.outputDead else { return }
        var line = response.encodedLine()
        if line.count > limits.maxReplyBytes {
            log(
                .error,
                "Control client \(client.peer): reply of \(line.count) bytes exceeds \(limits.maxReplyBytes); sent an error instead"
            )
            line = ControlResponse.failure(
                .internal, "the reply would be \(line.count) bytes, more than \(limits.maxReplyBytes)"
            )
            .encodedLine()
        }
        if client.hasUnsentOutput {
            client.output.append(contentsOf: line)
        } else {
            client.output = line
            client.outputOffset = 0
        }
        flush(client)
    }

    private func flush(_ client: Client) {
        while client.hasUnsentOutput && !client.outputDead {
            let count = client.output.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return send(
                    client.fd, base + client.outputOffset, raw.count - client.outputOffset,
                    Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if count > 0 {
                client.outputOffset += count
                client.lastActivity = loop.clock.now()
                continue
            }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return }
            // EPIPE, ECONNRESET: the peer is gone. Requests it sent are still handled.
            client.inputClosed = true
            dropOutput(client)
        }
        if !client.hasUnsentOutput {
            client.output = []
            client.outputOffset = 0
        }
    }

    private func dropOutput(_ client: Client) {
        client.outputDead = true
        client.output = []
        client.outputOffset = 0
    }

    private func updateInterest(_ client: Client) {
        guard client.watched else { return }
        let read = !client.inputClosed && client.pendingInput <= limits.maxLineBytes
        let write = client.hasUnsentOutput && !client.outputDead
        guard read != client.interest.read || write != client.interest.write else { return }
        do {
            try loop.update(client.fd, readable: read, writable: write)
            client.interest = (read, write)
        } catch {
            log(.error, "Control client \(client.peer): \(error); closing the connection")
            closeClient(client)
        }
    }

    // MARK: Idle clients

    /// One timer per client at most; it re-arms itself for the rest of the idle period.
    private func armIdleTimer(_ client: Client) {
        guard client.awaiting == nil, client.idleTimer == nil, clients[client.id] != nil else { return }
        let id = client.id
        client.idleTimer = loop.schedule(at: client.lastActivity.advanced(by: limits.idleTimeout)) { [weak self] in
            self?.idleTimerFired(clientID: id)
        }
    }

    private func idleTimerFired(clientID: UInt64) {
        guard let client = clients[clientID] else { return }
        client.idleTimer = nil
        guard client.awaiting == nil else { return }  // with the handler: re-armed when it replies
        let idle = loop.clock.now().duration(since: client.lastActivity)
        guard idle >= limits.idleTimeout else {
            armIdleTimer(client)
            return
        }
        let partial = client.hasPartialRequest
        if partial && !client.hasUnsentOutput && !client.outputDead {
            // Best effort, never blocking: tell a slow typist why the connection ends.
            let line = ControlResponse.failure(
                .badRequest,
                "no complete request line within \(limits.idleTimeout.humanReadable); closing the connection"
            ).encodedLine()
            _ = line.withUnsafeBytes {
                send(client.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
        }
        log(
            .debug,
            "Control client \(client.peer): idle for \(limits.idleTimeout.humanReadable)"
                + (partial ? " with an incomplete request" : client.hasUnsentOutput ? " without reading its reply" : "")
                + "; closing the connection",
            [JournalField(.peerUID, client.peer.uid)])
        closeClient(client)
    }

    // MARK: Closing

    private func closeClient(_ client: Client) {
        guard clients.removeValue(forKey: client.id) != nil else { return }
        if let timer = client.idleTimer { loop.cancel(timer) }
        client.idleTimer = nil
        if client.watched { loop.unwatch(client.fd) }
        client.watched = false
        Glibc.close(client.fd)
    }

    fileprivate static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private func log(_ priority: JournalPriority, _ message: String, _ fields: [JournalField] = []) {
        journal?.record(JournalEntry(priority, message, fields))
    }
}
