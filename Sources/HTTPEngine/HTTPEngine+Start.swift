import CCurl
import Vocabulary

/// Starting a transfer: the request is checked, its origin numbered, and the transfer admitted
/// to the queue; a hand-off this turn gives it to libcurl when a slot is free.
extension HTTPEngine {
    /// Starts `request`; `completion` runs exactly once, on the loop's thread, with the reply,
    /// a transport failure, or `.cancelled`. It never runs before this returns.
    ///
    /// - Throws: ``HTTPEngineError`` (naming the request's redacted URL) when the request's
    ///   limits or headers are invalid, or (for a request without an ``HTTPRequest/origin``) its
    ///   URL does not parse or is not `http`/`https`; `completion` is then never called. A
    ///   failure to set the request up in libcurl later is a completion with a failure.
    @discardableResult
    package func start(_ request: HTTPRequest, completion: @escaping (HTTPResult) -> Void) throws -> TransferID {
        try Self.check(request)
        let origin = try request.origin ?? Self.parseOrigin(request)
        let newNumber = queue.originCount
        let number = queue.originNumber(origin, cap: request.maxConnectionsPerHost)
        if number == newNumber, versions.met(origin, version: request.version) { multiplexing.assumeHTTP1(number) }
        let profile = pool.profileNumber(for: request)
        let now = loop.clock.now()
        let tag = transfers.insert { _ in
            ActiveTransfer(
                request: request, completion: completion, started: now, origin: origin, originNumber: number,
                profile: profile)
        }
        queue.admit(tag, origin: number)
        admitted.append(tag)
        scheduleHandOff()
        return TransferID(rawValue: tag)
    }

    /// Throws when `request`'s limits are out of range or a header is not one `Name: value` line.
    private static func check(_ request: HTTPRequest) throws {
        let subject = request.redactedURL
        guard request.maxReplyBytes >= 0 else {
            throw HTTPEngineError("check request", subject, detail: "maxReplyBytes is negative")
        }
        guard request.timeout > .zero else {
            throw HTTPEngineError("check request", subject, detail: "timeout is not positive")
        }
        for (index, line) in request.headers.enumerated()
        where line.utf8.contains(where: { $0 == 13 || $0 == 10 }) || !line.utf8.contains(UInt8(ascii: ":")) {
            // Not the line itself: it may hold a token.
            throw HTTPEngineError(
                "check request", subject, detail: "header \(index + 1) is not one \"Name: value\" line")
        }
    }

    /// The origin of a request's URL, parsed by libcurl's URL API (requests that bring their own
    /// origin skip this).
    private static func parseOrigin(_ request: HTTPRequest) throws -> HTTPOrigin {
        var https: Int32 = 0
        var code: Int32 = 0
        let peer = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 320) { buffer -> String in
            guard let base = buffer.baseAddress else { return "" }
            base[0] = 0
            code = request.url.withCString { ccurl_parse_peer($0, base, buffer.count, &https) }
            return String(cString: base)
        }
        guard code == CURLUE_OK.rawValue else {
            let reason = String(cString: ccurl_url_strerror(CURLUcode(rawValue: UInt32(bitPattern: code))))
            throw HTTPEngineError("parse URL", request.redactedURL, detail: reason)
        }
        guard let colon = peer.lastIndex(of: ":"), let port = Int(peer[peer.index(after: colon)...]) else {
            throw HTTPEngineError("parse URL", request.redactedURL, detail: "no port")
        }
        return HTTPOrigin(isTLS: https != 0, host: String(peer[..<colon]).lowercased(), port: port)
    }
}
