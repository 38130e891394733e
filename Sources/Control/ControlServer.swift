import EventLoop
import Journal

/// The daemon's control socket: a Unix stream socket served on the ``EventLoop``. This type puts
/// the parts together and takes the connections the listener accepts to the connections served:
/// ``ControlListener`` accepts (backing off when it cannot); ``ControlConnections`` admits each
/// one (``ControlAdmission``), serves it on the loop and hands its requests to the handler;
/// ``ControlConnection`` moves one client's bytes, ``ControlConnectionState`` says where it is;
/// ``ControlSocketFile`` makes the socket when systemd does not.
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
    /// The socket's path.
    package var socketPath: String { listener.socketPath }
    /// The limits in force.
    package var limits: Limits { connections.limits }

    private let listener: ControlListener
    private let connections: ControlConnections

    /// Connections open now.
    package var clientCount: Int { connections.count }
    /// Whether the server still accepts connections (until ``close()``).
    package var isListening: Bool { listener.isListening }

    /// Creates the socket at `socketPath` (replacing a stale one; refusing if another process
    /// listens there) with mode `socketMode` and group `socketGroup` (a name or number; empty:
    /// the daemon's own), and serves it on `loop`. The daemon passes `[Control] SocketMode=` and
    /// `SocketGroup=`. The server holds `handler` weakly.
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
        let log = ControlSocketLog(journal)
        listener = ControlListener(fd: fd, identity: identity, socketPath: socketPath, loop: loop, log: log)
        connections = ControlConnections(
            loop: loop, limits: limits, handler: handler, socketPath: socketPath, log: log)
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
    package func close() { listener.close() }

    /// Closes every client connection; replies still owed to them are dropped.
    package func disconnectAll() { connections.closeAll() }

    private func acceptClients() {
        while let (fd, peer) = listener.accept() { connections.open(fd, from: peer) }
    }
}
