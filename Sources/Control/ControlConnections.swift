import EventLoop
import Glibc
import Journal

/// The clients connected to the control socket, served on the event loop. A connection's
/// readiness moves its bytes (``ControlConnection``); its complete lines go to the handler one
/// at a time (`ControlConnections+Dispatch.swift`); a client that does not do its part in time is
/// closed (`ControlConnections+Deadlines.swift`). Opening a connection asks ``ControlAdmission``.
///
/// Data flows one way: the loop reports readiness, the connection's state says what comes next,
/// this type acts on it. The handler's only way back is the ``ControlReply`` it was given.
final class ControlConnections {
    /// Receives every request; held weakly (its owner owns the server).
    weak var handler: (any ControlRequestHandler)?
    /// The loop the connections are served on.
    let loop: EventLoop
    /// The limits in force.
    let limits: ControlServer.Limits
    /// The socket's path, for the journal.
    let socketPath: String
    /// Where the control socket's events are journaled.
    let log: ControlSocketLog
    /// The open connections, by number.
    private(set) var open: [UInt64: ControlConnection] = [:]
    private var admission: ControlAdmission
    private var lastID: UInt64 = 0
    /// One read buffer for every connection: the loop serves one at a time.
    private var readBuffer = [UInt8](repeating: 0, count: 16 * 1024)

    /// Serves connections on `loop` within `limits`, handing requests to `handler`.
    init(
        loop: EventLoop, limits: ControlServer.Limits, handler: any ControlRequestHandler, socketPath: String,
        log: ControlSocketLog
    ) {
        self.loop = loop
        self.limits = limits
        self.handler = handler
        self.socketPath = socketPath
        self.log = log
        admission = ControlAdmission(limits: limits)
    }

    /// Connections open now.
    var count: Int { open.count }

    // MARK: Opening and closing

    /// Serves `fd`, just accepted from `peer`, if ``ControlAdmission`` lets it in; otherwise it
    /// gets a `limit` error line and is closed at once.
    func open(_ fd: Int32, from peer: PeerCredentials) {
        if let refusal = admission.refusal(for: peer) {
            refuse(fd, peer, refusal)
            return
        }
        lastID += 1
        let connection = ControlConnection(id: lastID, fd: fd, peer: peer, now: loop.clock.now())
        let id = connection.id
        do {
            try loop.watch(fd, readable: true, writable: false) { [weak self] readiness in self?.ready(id, readiness) }
        } catch {
            log.record(.error, "Control socket \(socketPath): cannot watch client \(peer): \(error)")
            Glibc.close(fd)
            return
        }
        open[id] = connection
        admission.admitted(peer)
        armDeadline(connection)
    }

    private func refuse(_ fd: Int32, _ peer: PeerCredentials, _ reason: String) {
        let line = ControlResponse.failure(.limit, reason).encodedLine()
        _ = line.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
        Glibc.close(fd)
        if admission.journalsRefusal(at: loop.clock.now()) {
            log.record(
                .warning, "Control socket \(socketPath): refused \(peer): \(reason)", [JournalField(.peerUID, peer.uid)]
            )
        }
    }

    /// Closes every connection; replies still owed to them are dropped.
    func closeAll() {
        for connection in Array(open.values) { close(connection) }
    }

    /// Closes `connection` (once).
    func close(_ connection: ControlConnection) {
        guard open.removeValue(forKey: connection.id) != nil else { return }
        admission.closed(connection.peer)
        connection.state.close()
        cancelDeadline(connection)
        unwatch(connection)
        Glibc.close(connection.fd)
    }

    // MARK: Readiness

    private func ready(_ id: UInt64, _ readiness: EventLoop.Readiness) {
        guard let connection = open[id] else { return }
        if readiness.writable { connection.flush(now: loop.clock.now()) }
        if readiness.readable && connection.state.readsInput {
            connection.readAvailable(into: &readBuffer, maxPending: limits.maxLineBytes)
        }
        if readiness.failed {
            // Hang-up or error: nothing more will come or go. Stop watching (epoll would keep
            // reporting it), handle what was received, then close.
            connection.peerGone()
            unwatch(connection)
        }
        serve(connection)
    }

    /// Takes complete lines one at a time, each after the previous reply is out, then decides
    /// what to watch for and when to give up on the client.
    func serve(_ connection: ControlConnection) {
        guard !connection.isPumping else { return }
        connection.isPumping = true
        defer { connection.isPumping = false }
        taking: while !connection.state.isClosed {
            switch connection.next(maxLineBytes: limits.maxLineBytes) {
            case .line(let line):
                dispatch(line, from: connection)
            case .tooLong:
                refuseTooLong(connection)
            case .wait:
                break taking
            case .close:
                close(connection)
                return
            }
        }
        guard !connection.state.isClosed else { return }
        connection.compactInput()
        updateWatch(connection)
        armDeadline(connection)
    }

    /// Watches for what the connection can do now: read while its input is open and under the
    /// limit, write while a reply is being sent.
    private func updateWatch(_ connection: ControlConnection) {
        guard case .watched(let readable, let writable) = connection.watch else { return }
        let read = connection.state.readsInput && connection.pendingInput <= limits.maxLineBytes
        let write = connection.state.isSending
        guard read != readable || write != writable else { return }
        do {
            try loop.update(connection.fd, readable: read, writable: write)
            connection.watch = .watched(readable: read, writable: write)
        } catch {
            log.record(.error, "Control client \(connection.peer): \(error); closing the connection")
            close(connection)
        }
    }

    private func unwatch(_ connection: ControlConnection) {
        guard case .watched = connection.watch else { return }
        loop.unwatch(connection.fd)
        connection.watch = .unwatched
    }
}
