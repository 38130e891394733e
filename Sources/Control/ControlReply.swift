/// How a ``ControlRequestHandler`` answers one request: the address of the connection waiting
/// for it (its number, and the request's serial on it), and the one thing the handler may do
/// with it, `reply(response)`. That is the whole way back from the handler to the server.
///
/// Answer once, on the loop thread, now or later. A second answer to the same request is
/// dropped, and so is an answer for a client that has gone away or a server that has closed
/// (the connections are held weakly).
package struct ControlReply {
    private weak var connections: ControlConnections?
    private let connection: UInt64
    private let serial: UInt64

    /// The address of request `serial` on connection `connection` of `connections`.
    init(connections: ControlConnections, connection: UInt64, serial: UInt64) {
        self.connections = connections
        self.connection = connection
        self.serial = serial
    }

    /// Sends `response` as the request's answer (see the type's rules).
    package func callAsFunction(_ response: ControlResponse) {
        connections?.deliver(response, toConnection: connection, serial: serial)
    }
}
