/// What became of one ``HTTPRequest``: a reply or a transport failure, plus how long it took.
package struct HTTPResult: Sendable {
    /// A reply (any status, including 3xx, 4xx and 5xx) or a failure to get one.
    package enum Outcome: Sendable {
        /// The server answered. `body` holds at most the request's `maxReplyBytes`; when the
        /// body was longer, `truncated` is true and the transfer was stopped at the cap (the
        /// status and headers had arrived in full). `retryAfter` comes from a `Retry-After`
        /// header in seconds or as an HTTP date.
        case response(status: Int, body: [UInt8], truncated: Bool, retryAfter: Duration?)
        /// No usable reply.
        case failure(TransportFailure)
    }

    /// The reply or the failure.
    package var outcome: Outcome
    /// From ``HTTPEngine/start(_:completion:)`` to completion, on the loop's clock.
    package var duration: Duration
    /// True when the transfer used a connection kept alive from an earlier one (no new
    /// connect, so no new TCP or TLS handshake).
    package var reusedConnection: Bool
    /// The HTTP version the reply came in (`1.0`, `1.1` or `2`); nil without a reply.
    package var httpVersion: String?
    /// True when the request was written to the connection: a failure after that (a timeout, a
    /// dropped connection) leaves unknown whether the server acted on it. False when it never
    /// was (refused, unresolved, still waiting for a connection), so the server cannot have.
    package var requestSent: Bool

    /// Creates a result.
    package init(
        outcome: Outcome, duration: Duration, reusedConnection: Bool, httpVersion: String? = nil,
        requestSent: Bool = false
    ) {
        self.outcome = outcome
        self.duration = duration
        self.reusedConnection = reusedConnection
        self.httpVersion = httpVersion
        self.requestSent = requestSent
    }

    /// The HTTP status, when the server answered.
    package var status: Int? {
        if case .response(let status, _, _, _) = outcome { return status }
        return nil
    }

    /// The failure, when there was no usable reply.
    package var failure: TransportFailure? {
        if case .failure(let failure) = outcome { return failure }
        return nil
    }
}

extension HTTPResult: CustomStringConvertible {
    /// `HTTP 200 (412 bytes) in 0.1 s` or the failure's description; never the body.
    package var description: String {
        switch outcome {
        case .response(let status, let body, let truncated, _):
            let size = truncated ? "\(body.count) bytes kept, truncated" : "\(body.count) bytes"
            return "HTTP \(status) (\(size)) in \(duration.humanReadable)"
        case .failure(let failure):
            return "\(failure) after \(duration.humanReadable)"
        }
    }
}

/// Why a request got no usable reply. Its text never contains the URL's path or query, a
/// header or the body: only the host and port, and libcurl's description of the error.
package struct TransportFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The broad cause, stable to match on.
    package enum Kind: String, Sendable, CaseIterable {
        /// The host name did not resolve (DNS).
        case resolve
        /// No TCP connection: refused, unreachable, or no route.
        case connect
        /// The request's timeout (or connect timeout) expired.
        case timeout
        /// TLS failed: the certificate did not verify or the handshake failed.
        case tls
        /// The connection broke while sending or receiving (reset, closed mid-reply, empty reply).
        case sendReceive
        /// The reply's headers exceeded the engine's limit.
        case tooLarge
        /// The transfer was cancelled by ``HTTPEngine/cancel(_:)`` or ``HTTPEngine/cancelAll()``.
        case cancelled
        /// Anything else (a malformed reply, an out-of-memory condition, ...).
        case other
    }

    /// The broad cause.
    package let kind: Kind
    /// `host:port` the request was for (IPv6 hosts in brackets).
    package let peer: String
    /// libcurl's description with anything from the URL but its host removed; safe to log.
    package let detail: String
    /// libcurl's `CURLcode`, when libcurl reported the failure.
    package let curlCode: Int?

    /// Creates a failure. `detail` must already be free of secrets.
    package init(kind: Kind, peer: String, detail: String, curlCode: Int? = nil) {
        self.kind = kind
        self.peer = peer
        self.detail = detail
        self.curlCode = curlCode
    }

    /// `connect failure talking to 127.0.0.1:9: Couldn't connect to server (...)`.
    package var description: String {
        "\(kind.rawValue) failure talking to \(peer): \(detail)"
    }
}
