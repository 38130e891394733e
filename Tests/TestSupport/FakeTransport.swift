import Vocabulary

/// A transport whose transfers finish when the test says, recording what was asked of it.
final class FakeTransport: HTTPTransport {
    struct Pending {
        let id: TransferID
        let request: HTTPRequest
        let completion: (HTTPResult) -> Void
    }

    private(set) var pending: [Pending] = []
    private(set) var started: [HTTPRequest] = []
    private(set) var cancelled: [TransferID] = []
    private(set) var maxInFlight = 0
    private var next: UInt64 = 0
    /// Thrown by the next `start` (once), as an engine that cannot take a transfer would.
    var nextStartError: (any Error)?
    /// What ``requestSent(_:)`` says of every pending transfer: whether its request was written.
    var pendingRequestsSent = false
    /// Transfers whose connection says the server's TCP never acknowledged their request
    /// (``requestUnacknowledged(_:)``).
    var unacknowledged: Set<TransferID> = []

    func start(_ request: HTTPRequest, completion: @escaping (HTTPResult) -> Void) throws -> TransferID {
        if let error = nextStartError {
            nextStartError = nil
            started.append(request)
            throw error
        }
        next += 1
        let id = TransferID(rawValue: next)
        pending.append(Pending(id: id, request: request, completion: completion))
        started.append(request)
        maxInFlight = max(maxInFlight, pending.count)
        return id
    }

    func cancel(_ id: TransferID) {
        guard let index = pending.firstIndex(where: { $0.id == id }) else { return }
        let transfer = pending.remove(at: index)
        cancelled.append(id)
        transfer.completion(Self.failure(.cancelled))
    }

    func requestSent(_ id: TransferID) -> Bool {
        pendingRequestsSent && pending.contains { $0.id == id }
    }

    /// Transfers still waiting for their connection's handshake (``connectPending(_:)``).
    var connecting: Set<TransferID> = []

    /// Every pending transfer waits for its handshake (a server that takes no connection).
    var allConnecting = false

    func connectPending(_ id: TransferID) -> Bool {
        (allConnecting || connecting.contains(id)) && pending.contains { $0.id == id }
    }

    func requestUnacknowledged(_ id: TransferID) -> Bool {
        unacknowledged.contains(id) && pending.contains { $0.id == id }
    }

    /// Completes the oldest pending transfer whose URL contains `marker` (any, if nil).
    @discardableResult
    func complete(matching marker: String? = nil, with result: HTTPResult) -> Bool {
        guard let index = pending.firstIndex(where: { marker == nil || $0.request.url.contains(marker!) }) else {
            return false
        }
        let transfer = pending.remove(at: index)
        transfer.completion(result)
        return true
    }

    static func reply(_ status: Int, _ body: String = "{\"success\": true}", retryAfter: Duration? = nil) -> HTTPResult
    {
        HTTPResult(
            outcome: .response(status: status, body: Array(body.utf8), truncated: false, retryAfter: retryAfter),
            duration: .milliseconds(5), reusedConnection: false)
    }

    /// A failure; `requestSent`: whether the request had been written (``HTTPResult/requestSent``).
    static func failure(_ kind: TransportFailure.Kind, requestSent: Bool = false) -> HTTPResult {
        HTTPResult(
            outcome: .failure(TransportFailure(kind: kind, peer: "127.0.0.1:1", detail: "fake \(kind)")),
            duration: .milliseconds(5), reusedConnection: false, requestSent: requestSent)
    }
}
