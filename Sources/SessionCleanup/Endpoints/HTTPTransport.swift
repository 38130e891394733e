/// Starts and cancels HTTP requests; ``HTTPEngine`` is the real one, tests pass their own.
public protocol HTTPTransport: AnyObject {
    /// Starts `request`; `completion` runs exactly once on the loop's thread.
    func start(_ request: HTTPRequest, completion: @escaping (HTTPResult) -> Void) throws -> TransferID
    /// Cancels a transfer; its completion is delivered with a `.cancelled` failure.
    func cancel(_ id: TransferID)
}

extension HTTPEngine: HTTPTransport {}
