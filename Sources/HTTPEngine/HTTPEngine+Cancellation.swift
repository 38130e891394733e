import CCurl
import Vocabulary

/// Cancelling transfers: each ends at once with a `.cancelled` failure, wherever it is.
extension HTTPEngine {
    /// Cancels a transfer: its completion runs with a `.cancelled` failure before this returns.
    /// Unknown or already completed transfers are ignored.
    package func cancel(_ id: TransferID) {
        guard let entry = transfers[id.rawValue] else { return }
        let failure = TransportFailure(
            kind: .cancelled, peer: entry.origin.peer, detail: "cancelled before it completed")
        finish(id.rawValue, .failure(failure))
    }

    /// Whether the request of transfer `id` was written to its connection (libcurl's
    /// `CURLINFO_REQUEST_SIZE`, see `ccurl_transfer_request_sent`): false while it waits for a
    /// connection, and for a transfer unknown or completed.
    package func requestSent(_ id: TransferID) -> Bool {
        guard let handle = transfers[id.rawValue]?.handle else { return false }
        return ccurl_transfer_request_sent(handle) != 0
    }

    /// Whether the connection of transfer `id` shows its request never reached the server's TCP
    /// (`ccurl_transfer_request_unacknowledged`: established, none of its bytes acknowledged after
    /// two retransmissions); false for a transfer unknown or completed, or when it cannot tell.
    package func requestUnacknowledged(_ id: TransferID) -> Bool {
        guard let handle = transfers[id.rawValue]?.handle else { return false }
        return ccurl_transfer_request_unacknowledged(handle) != 0
    }

    /// Whether transfer `id` still waits for its new connection's handshake
    /// (`ccurl_transfer_connect_pending`: SYN_SENT); false for a transfer unknown or completed.
    package func connectPending(_ id: TransferID) -> Bool {
        guard let handle = transfers[id.rawValue]?.handle else { return false }
        return ccurl_transfer_connect_pending(handle) != 0
    }

    /// Cancels every active transfer, in the order they were started; each completion runs with
    /// `.cancelled` before this returns. Transfers that those completions start are not cancelled.
    package func cancelAll() {
        for tag in transfers.tags.sorted() { cancel(TransferID(rawValue: tag)) }
    }
}
