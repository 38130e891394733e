import Journal

extension ControlConnections {
    /// Decodes `line` and gives the request to the handler with a ``ControlReply`` addressed to
    /// this request; a blank line is no request, and one that does not decode is answered with
    /// its error here (the connection stays usable).
    func dispatch(_ line: [UInt8], from connection: ControlConnection) {
        guard line.contains(where: { !RequestLineBuffer.isSpace($0) }) else { return }
        let request: ControlRequest
        do {
            request = try ControlRequest.decode(line: line)
        } catch {
            send(.failure(error.code, error.message), to: connection)
            return
        }
        guard let handler else {
            send(.failure(.internal, "the daemon is not accepting requests"), to: connection)
            return
        }
        let serial = connection.state.requestTaken()
        cancelDeadline(connection)
        handler.handle(
            request, from: connection.peer,
            reply: ControlReply(connections: self, connection: connection.id, serial: serial))
    }

    /// The handler's answer to request `serial` on connection `id`: written, then the next line
    /// is taken. Dropped if the connection has closed or the request was answered already.
    func deliver(_ response: ControlResponse, toConnection id: UInt64, serial: UInt64) {
        guard let connection = open[id], connection.state.replyGiven(serial: serial, at: loop.clock.now()) else {
            return
        }
        send(response, to: connection)
        serve(connection)
    }

    /// A line over ``ControlServer/Limits/maxLineBytes``: answered with `too-large`, then the
    /// connection closes.
    func refuseTooLong(_ connection: ControlConnection) {
        connection.refuseTooLong()
        log.record(
            .notice,
            "Control client \(connection.peer): request line longer than \(limits.maxLineBytes) bytes; closing the connection",
            [JournalField(.peerUID, connection.peer.uid)])
        send(
            .failure(.tooLarge, "request line longer than \(limits.maxLineBytes) bytes; closing the connection"),
            to: connection)
    }

    /// Writes `response`; one over ``ControlServer/Limits/maxReplyBytes`` becomes an `internal`
    /// error.
    func send(_ response: ControlResponse, to connection: ControlConnection) {
        var line = response.encodedLine()
        if line.count > limits.maxReplyBytes {
            log.record(
                .error,
                "Control client \(connection.peer): reply of \(line.count) bytes exceeds \(limits.maxReplyBytes); sent an error instead"
            )
            line = ControlResponse.failure(
                .internal, "the reply would be \(line.count) bytes, more than \(limits.maxReplyBytes)"
            )
            .encodedLine()
        }
        connection.send(line, now: loop.clock.now())
    }
}
