/// Identifies a transfer started by ``HTTPEngine/start(_:completion:)``.
package struct TransferID: Hashable, Sendable, CustomStringConvertible {
    /// The engine's number for the transfer; numbers are never reused by one engine.
    package let rawValue: UInt64

    /// The transfer numbered `rawValue`.
    package init(rawValue: UInt64) { self.rawValue = rawValue }

    /// `transfer 12`.
    package var description: String { "transfer \(rawValue)" }
}

/// Starts and cancels HTTP requests; ``HTTPEngine`` is the real one, tests pass their own.
package protocol HTTPTransport: AnyObject {
    /// Starts `request`; `completion` runs exactly once on the loop's thread.
    func start(_ request: HTTPRequest, completion: @escaping (HTTPResult) -> Void) throws -> TransferID
    /// Cancels a transfer; its completion is delivered with a `.cancelled` failure.
    func cancel(_ id: TransferID)
    /// Whether the request of transfer `id`, not yet completed, was written to its connection
    /// (``HTTPResult/requestSent``); false for a transfer unknown or completed.
    func requestSent(_ id: TransferID) -> Bool
    /// Whether the connection of transfer `id`, not yet completed, shows that the server never
    /// received what was written to it: its TCP acknowledged none of the bytes, retransmitted
    /// at least twice (a full accept queue drops them). Such a request is no attempt: sent
    /// again on a new connection, the server gets it once. False whenever it cannot tell.
    func requestUnacknowledged(_ id: TransferID) -> Bool
    /// Whether transfer `id`, not yet completed, still waits for its new TCP connection's
    /// handshake (the server's SYN-ACK). False whenever it cannot tell.
    func connectPending(_ id: TransferID) -> Bool
}

extension HTTPTransport {
    /// A transport that cannot tell says never: its calls are retried as before.
    package func requestSent(_ id: TransferID) -> Bool { false }
    /// A transport that cannot tell says never: its requests wait as long as the run lets them.
    package func requestUnacknowledged(_ id: TransferID) -> Bool { false }
    /// A transport that cannot tell says never: its connections take the kernel's time.
    package func connectPending(_ id: TransferID) -> Bool { false }
}
