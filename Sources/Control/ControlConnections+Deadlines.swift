import Basics
import EventLoop
import Journal

extension ControlConnections {
    /// Arms `connection`'s deadline (``ControlConnectionState/deadline(timeout:)``), unless one
    /// is armed or its request is with the handler. One timer per connection at most; it re-arms
    /// itself while the deadline moves (a reply progressing).
    func armDeadline(_ connection: ControlConnection) {
        guard connection.deadlineTimer == nil,
            let deadline = connection.state.deadline(timeout: limits.requestTimeout)
        else { return }
        let id = connection.id
        connection.deadlineTimer = loop.schedule(at: deadline) { [weak self] in self?.deadlinePassed(id) }
    }

    /// Disarms `connection`'s deadline (its request went to the handler, or it closes).
    func cancelDeadline(_ connection: ControlConnection) {
        if let timer = connection.deadlineTimer { loop.cancel(timer) }
        connection.deadlineTimer = nil
    }

    /// Closes a connection whose client did not do its part in time: telling it why if it was
    /// sending a request, and if the socket takes the line at once.
    private func deadlinePassed(_ id: UInt64) {
        guard let connection = open[id] else { return }
        connection.deadlineTimer = nil
        // With the handler: re-armed when it replies.
        guard let deadline = connection.state.deadline(timeout: limits.requestTimeout) else { return }
        guard loop.clock.now() >= deadline else {
            armDeadline(connection)
            return
        }
        let partial = connection.hasPartialRequest
        let writing = connection.state.isSending
        if partial && !writing {
            // Best effort, never blocking: tell a slow client why the connection ends.
            connection.sendBestEffort(
                ControlResponse.failure(
                    .badRequest,
                    "no complete request line within \(limits.requestTimeout.humanReadable); closing the connection"
                ).encodedLine())
        }
        log.record(
            .debug,
            "Control client \(connection.peer): "
                + (writing
                    ? "did not read its reply for \(limits.requestTimeout.humanReadable)"
                    : "no complete request within \(limits.requestTimeout.humanReadable)"
                        + (partial ? " (an incomplete one was being sent)" : ""))
                + "; closing the connection",
            [JournalField(.peerUID, connection.peer.uid)])
        close(connection)
    }
}
