import Vocabulary

/// What an engine knows of its HTTPS origins' HTTP versions: what an earlier run or daemon
/// learned (``knownHTTP1``, applied as an origin is met), and what this engine's replies told
/// (``seen``, for the daemon to remember). Pure bookkeeping: origins are the engine's numbers
/// (``TransferQueue/originNumber(_:cap:)``), given in order.
struct OriginVersions {
    /// HTTPS origins known to answer in HTTP/1.1 (``HTTPEngine/knownHTTP1Origins``).
    var knownHTTP1: Set<HTTPOrigin> = []
    /// The HTTPS origins whose replies to `auto` requests told their HTTP version, with the
    /// latest one: true for HTTP/2 (``HTTPEngine/versionsSeen``).
    private(set) var seen: [HTTPOrigin: Bool] = [:]
    /// By origin number: whether its last reply that told was in HTTP/2 (nil: none yet), so that
    /// ``seen`` is written only when an origin's version changes, not at every reply.
    private var told: [Bool?] = []

    /// `origin` got the next number, for a request asking for `version`: returns whether its
    /// transfers should go as HTTP/1.1's do, without the probe (an `auto` request over TLS to an
    /// origin in ``knownHTTP1``).
    mutating func met(_ origin: HTTPOrigin, version: HTTPRequest.Version) -> Bool {
        told.append(nil)
        return version == .automatic && origin.isTLS && knownHTTP1.contains(origin)
    }

    /// `request`'s reply, from the origin numbered `number`, came in `httpVersion` (`1.0`, `1.1`
    /// or `2`). Only the replies to `auto` requests over TLS that name their origin tell
    /// (``HTTPRequest/origin``: one parsed out of a URL may have a key in its host).
    mutating func replied(_ httpVersion: String, to request: HTTPRequest, origin: HTTPOrigin, number: Int) {
        guard origin.isTLS, request.version == .automatic, request.origin != nil else { return }
        let http2 = httpVersion == "2"
        guard told[number] != http2 else { return }
        told[number] = http2
        seen[origin] = http2
    }
}
