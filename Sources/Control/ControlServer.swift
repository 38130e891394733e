import CSystemd
import EventLoop
import Glibc
import Journal

/// What the control server hands each decoded request to. The server knows the protocol, not
/// the domain: authorization (by ``PeerCredentials/uid``), limits per user and persistence are
/// the handler's.
package protocol ControlRequestHandler: AnyObject {
    /// Called on the loop thread for every decoded request. Call `reply` exactly once, on the loop
    /// thread, now or later (after a group commit's fsync, after an `end` run); further calls are
    /// ignored, and a reply for a client that has gone away is dropped.
    func handle(_ request: ControlRequest, from peer: PeerCredentials, reply: @escaping (ControlResponse) -> Void)
}

/// A control server that could not start: what failed and on which socket path.
package struct ControlServerError: Error, Equatable, CustomStringConvertible {
    /// What failed, with the path and errno text.
    package let message: String

    /// Creates an error.
    package init(_ message: String) { self.message = message }

    /// The message.
    package var description: String { message }
}

/// The daemon's control socket: a Unix stream socket served on the ``EventLoop``. This type
/// accepts connections, holds them to their limits and hands each request line to the
/// handler; a ``ControlConnection`` moves each client's bytes; ``ControlSocketFile`` makes the
/// socket when systemd does not.
///
/// Protocol: one JSON request per line, one JSON response line each (`docs/control-protocol.md`).
/// A connection's requests are handled one at a time, in order: the next line is not decoded
/// until the previous reply has been written out, so replies are always in request order and a
/// client that does not read its replies only ever holds one reply in memory.
///
/// Nothing blocks the loop: the listening and client sockets are non-blocking; a request line
/// longer than ``Limits/maxLineBytes`` gets a `too-large` reply and the connection is closed;
/// malformed JSON gets a `bad-request` reply and the connection stays usable. A client must
/// send a complete request line within ``Limits/requestTimeout`` of connecting or of its
/// previous reply, however it trickles the bytes in (one byte a second does not keep a
/// connection), and a reply it does not read for that long closes it too; while its request is
/// with the handler, no clock runs. Connections beyond ``Limits/maxClients`` in all, or beyond
/// ``Limits/maxClientsPerUser`` for one non-root uid, get a `limit` error line and are closed at
/// once; the last ``Limits/reservedForRoot`` connections are root's. Every complete request
/// line is handled even if its sender hangs up before the reply, which is then dropped.
package final class ControlServer {
    /// Bounds on what clients may cost.
    package struct Limits: Sendable, Equatable {
        /// Longest request line, newline excluded.
        package var maxLineBytes: Int
        /// Time for a complete request line (from connecting, or from the previous reply), and
        /// for a reply to make progress while it is written.
        package var requestTimeout: Duration
        /// Connections served at once, in all.
        package var maxClients: Int
        /// Connections one uid other than root may hold at once.
        package var maxClientsPerUser: Int
        /// Of ``maxClients``, how many only root may use (so other users cannot lock root out).
        package var reservedForRoot: Int
        /// Largest reply; a larger one is replaced by an `internal` error.
        package var maxReplyBytes: Int

        /// The daemon's limits: 64 KiB lines, 5 s per request, 512 clients of which 16 are
        /// root's, 32 per other user, 32 MiB replies.
        package init(
            maxLineBytes: Int = 64 * 1024, requestTimeout: Duration = .seconds(5), maxClients: Int = 512,
            maxClientsPerUser: Int = 32, reservedForRoot: Int = 16, maxReplyBytes: Int = 32 * 1024 * 1024
        ) {
            self.maxLineBytes = maxLineBytes
            self.requestTimeout = requestTimeout
            self.maxClients = maxClients
            self.maxClientsPerUser = maxClientsPerUser
            self.reservedForRoot = reservedForRoot
            self.maxReplyBytes = maxReplyBytes
        }
    }

    /// The socket's path.
    package let socketPath: String
    /// The limits in force.
    package let limits: Limits
    /// Receives every request; held weakly (the daemon owns the server and is its handler).
    package weak var handler: (any ControlRequestHandler)?

    private let loop: EventLoop
    private let journal: (any JournalSink)?
    private var listenFD: Int32 = -1
    private var socketIdentity: (device: UInt64, inode: UInt64)?
    private var clients: [UInt64: ControlConnection] = [:]
    /// Connections per peer uid, for ``Limits/maxClientsPerUser``.
    private var clientsByUID: [UInt32: Int] = [:]
    private var nextClientID: UInt64 = 0
    private var readBuffer = [UInt8](repeating: 0, count: 16 * 1024)
    private var lastLimitLog: MonotonicInstant?
    private var acceptPaused = false

    /// Connections open now.
    package var clientCount: Int { clients.count }
    /// Whether the server still accepts connections (until ``close()``).
    package var isListening: Bool { listenFD >= 0 }

    /// Creates the socket at `socketPath` (replacing a stale one; refusing if another process
    /// listens there) with mode `socketMode` and group `socketGroup` (a name or number; empty:
    /// the daemon's own), and serves it on `loop`. The daemon passes `[Control] SocketMode=` and
    /// `SocketGroup=`.
    package convenience init(
        socketPath: String, socketMode: UInt32 = 0o660, socketGroup: String = "", loop: EventLoop,
        handler: any ControlRequestHandler, limits: Limits = Limits(), journal: (any JournalSink)? = nil
    ) throws(ControlServerError) {
        let (fd, identity) = try ControlSocketFile.listen(path: socketPath, mode: socketMode, group: socketGroup)
        try self.init(
            listening: fd, identity: identity, socketPath: socketPath, loop: loop, handler: handler, limits: limits,
            journal: journal)
    }

    /// Serves `fd`, a non-blocking socket that already listens at `socketPath` — one systemd
    /// passed (socket activation). It belongs to the socket unit: ``close()`` closes this
    /// process's descriptor but never removes the file, and connections queued in it when this
    /// process exits wait for the next one.
    package convenience init(
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
    package func close() {
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
    package func disconnectAll() {
        for client in Array(clients.values) { closeClient(client) }
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
            if let refusal = refusal(for: peer) {
                refuse(fd, peer, refusal)
                continue
            }
            nextClientID += 1
            let client = ControlConnection(id: nextClientID, fd: fd, peer: peer, now: loop.clock.now())
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
            clientsByUID[peer.uid, default: 0] += 1
            armDeadline(client)
        }
    }

    /// Why `peer` may not have another connection now, or nil.
    private func refusal(for peer: PeerCredentials) -> String? {
        if clients.count >= limits.maxClients {
            return "too many control connections (\(limits.maxClients)); try again later"
        }
        guard peer.uid != 0 else { return nil }
        if clients.count >= limits.maxClients - limits.reservedForRoot {
            return "too many control connections (\(limits.maxClients - limits.reservedForRoot) for users "
                + "other than root); try again later"
        }
        if clientsByUID[peer.uid, default: 0] >= limits.maxClientsPerUser {
            return "too many control connections from uid \(peer.uid) (\(limits.maxClientsPerUser)); try again later"
        }
        return nil
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

    private func refuse(_ fd: Int32, _ peer: PeerCredentials, _ reason: String) {
        let line = ControlResponse.failure(.limit, reason).encodedLine()
        _ = line.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
        Glibc.close(fd)
        let now = loop.clock.now()
        if lastLimitLog.map({ now.duration(since: $0) >= .seconds(10) }) ?? true {
            lastLimitLog = now
            log(
                .warning, "Control socket \(socketPath): refused \(peer): \(reason)", [JournalField(.peerUID, peer.uid)]
            )
        }
    }

    // MARK: Client I/O

    private func ready(clientID: UInt64, _ readiness: EventLoop.Readiness) {
        guard let client = clients[clientID] else { return }
        if readiness.writable { client.flush(now: loop.clock.now()) }
        if readiness.readable && !client.inputClosed {
            _ = client.readAvailable(into: &readBuffer, maxPending: limits.maxLineBytes)
        }
        if readiness.failed && clients[clientID] != nil {
            // Hang-up or error: nothing more will come or go. Stop watching (epoll would keep
            // reporting it), handle what was received, then close.
            client.inputClosed = true
            client.dropOutput()
            if client.watched {
                loop.unwatch(client.fd)
                client.watched = false
            }
        }
        guard clients[clientID] != nil else { return }
        pump(client)
    }

    /// Takes complete lines one at a time, each after the previous reply is out, then decides
    /// what to watch for and whether to close.
    private func pump(_ client: ControlConnection) {
        guard !client.pumping else { return }
        client.pumping = true
        defer { client.pumping = false }
        while clients[client.id] != nil {
            if client.awaiting != nil || client.isWriting { break }
            if client.closeWhenFlushed {
                closeClient(client)
                return
            }
            switch client.nextLine(maxBytes: limits.maxLineBytes) {
            case .line(let line):
                process(line, from: client)
                continue
            case .tooLong:
                refuseTooLarge(client)
                continue
            case .none:
                break
            }
            if client.inputClosed {
                if let line = client.takeUnterminatedLine() {
                    process(line, from: client)
                    continue
                }
                closeClient(client)
                return
            }
            break
        }
        guard clients[client.id] != nil else { return }
        client.compactInput()
        updateInterest(client)
        armDeadline(client)
    }

    private func process(_ line: [UInt8], from client: ControlConnection) {
        guard line.contains(where: { !ControlConnection.isSpace($0) }) else { return }  // blank lines are not requests
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
        cancelDeadline(client)
        let clientID = client.id
        handler.handle(request, from: client.peer) { [weak self] response in
            self?.complete(clientID: clientID, serial: serial, response)
        }
    }

    private func complete(clientID: UInt64, serial: UInt64, _ response: ControlResponse) {
        // Gone, or a second reply to the same request: drop it.
        guard let client = clients[clientID], client.awaiting == serial else { return }
        client.awaiting = nil
        // The wait for the next request, and the reply's progress, are timed from now.
        client.waitingSince = loop.clock.now()
        client.lastWrite = client.waitingSince
        enqueue(response, to: client)
        pump(client)
    }

    private func refuseTooLarge(_ client: ControlConnection) {
        client.discardInput()
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

    private func enqueue(_ response: ControlResponse, to client: ControlConnection) {
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
        client.enqueue(line, now: loop.clock.now())
    }

    private func updateInterest(_ client: ControlConnection) {
        guard client.watched else { return }
        let read = !client.inputClosed && client.pendingInput <= limits.maxLineBytes
        let write = client.isWriting
        guard read != client.interest.read || write != client.interest.write else { return }
        do {
            try loop.update(client.fd, readable: read, writable: write)
            client.interest = (read, write)
        } catch {
            log(.error, "Control client \(client.peer): \(error); closing the connection")
            closeClient(client)
        }
    }

    // MARK: Deadlines

    /// When the client must have done its part: sent a complete request within the limit of
    /// the wait's start, or, while its reply is written, taken some of it within the limit.
    private func deadline(of client: ControlConnection) -> MonotonicInstant {
        (client.isWriting ? client.lastWrite : client.waitingSince).advanced(by: limits.requestTimeout)
    }

    /// One timer per client at most; it re-arms itself while the deadline moves (a reply progressing).
    private func armDeadline(_ client: ControlConnection) {
        guard client.awaiting == nil, client.deadlineTimer == nil, clients[client.id] != nil else { return }
        let id = client.id
        client.deadlineTimer = loop.schedule(at: deadline(of: client)) { [weak self] in
            self?.deadlinePassed(clientID: id)
        }
    }

    private func cancelDeadline(_ client: ControlConnection) {
        if let timer = client.deadlineTimer { loop.cancel(timer) }
        client.deadlineTimer = nil
    }

    private func deadlinePassed(clientID: UInt64) {
        guard let client = clients[clientID] else { return }
        client.deadlineTimer = nil
        guard client.awaiting == nil else { return }  // with the handler: re-armed when it replies
        guard loop.clock.now() >= deadline(of: client) else {
            armDeadline(client)
            return
        }
        let partial = client.hasPartialRequest
        let writing = client.isWriting
        if partial && !writing {
            // Best effort, never blocking: tell a slow client why the connection ends.
            client.sendBestEffort(
                ControlResponse.failure(
                    .badRequest,
                    "no complete request line within \(limits.requestTimeout.humanReadable); closing the connection"
                ).encodedLine())
        }
        log(
            .debug,
            "Control client \(client.peer): "
                + (writing
                    ? "did not read its reply for \(limits.requestTimeout.humanReadable)"
                    : "no complete request within \(limits.requestTimeout.humanReadable)"
                        + (partial ? " (an incomplete one was being sent)" : ""))
                + "; closing the connection",
            [JournalField(.peerUID, client.peer.uid)])
        closeClient(client)
    }

    // MARK: Closing

    private func closeClient(_ client: ControlConnection) {
        guard clients.removeValue(forKey: client.id) != nil else { return }
        let count = clientsByUID[client.peer.uid, default: 1] - 1
        clientsByUID[client.peer.uid] = count > 0 ? count : nil
        cancelDeadline(client)
        if client.watched { loop.unwatch(client.fd) }
        client.watched = false
        Glibc.close(client.fd)
    }

    private func log(
        _ priority: JournalPriority, _ message: String, _ fields: [JournalField] = [], fileID: String = #fileID,
        line: UInt = #line, function: String = #function
    ) {
        journal?.record(
            JournalEntry(
                .controlSocket, message, fields, priority: priority, fileID: fileID, line: line, function: function))
    }
}
