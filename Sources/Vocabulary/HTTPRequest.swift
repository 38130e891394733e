/// One HTTP call for ``HTTPEngine`` to make.
///
/// The URL, the headers and the body may carry secrets (a session key in the path, a bearer
/// token in a header), so none of them is ever shown: `description`, `dump` and every error the
/// engine produces use ``redactedURL`` instead.
package struct HTTPRequest: Sendable {
    /// The HTTP methods an endpoint may use.
    package enum Method: String, Sendable {
        /// `GET`; a body, if given, is not sent.
        case get = "GET"
        /// `POST`, with the body (or an empty one).
        case post = "POST"
        /// `PUT`, with the body (or an empty one).
        case put = "PUT"
        /// `DELETE`, with the body if one is given.
        case delete = "DELETE"
    }

    /// Which HTTP version a request may use.
    package enum Version: String, Sendable, CaseIterable {
        /// HTTP/2 where an `https` server offers it by ALPN, else HTTP/1.1 (plain `http` is
        /// HTTP/1.1). The default.
        case automatic = "auto"
        /// HTTP/1.1 only.
        case http1_1 = "1.1"
        /// HTTP/2: without negotiation over plain `http` (prior knowledge, h2c); over `https`
        /// offered first by ALPN (libcurl always offers http/1.1 as well, so a server without
        /// HTTP/2 still gets an HTTP/1.1 request).
        case http2 = "2"
    }

    /// The request's fields.
    private struct Fields: Sendable {
        var url: String
        var origin: HTTPOrigin?
        var redactedURL: String
        var method: Method
        var headers: [String]
        var body: [UInt8]?
        var timeout: Duration
        var connectTimeout: Duration?
        var maxReplyBytes: Int
        /// `caFile`, `version` and `proxy`, shared by the requests of one endpoint.
        var profile: TransferProfile
        var maxConnectionsPerHost: Int?
    }

    /// The fields, shared by copies: a request is copied several times on its way through the
    /// engine, and a copy then costs one reference count instead of one per string and array it
    /// holds. Immutable (a change makes new storage), so reading needs no exclusivity check.
    private final class Storage: Sendable {
        let fields: Fields

        init(_ fields: Fields) { self.fields = fields }
    }

    private var storage: Storage

    private mutating func change(_ update: (inout Fields) -> Void) {
        var fields = storage.fields
        update(&fields)
        storage = Storage(fields)
    }

    /// The full URL, `http` or `https` only. Secret-bearing: never logged.
    package var url: String {
        get { storage.fields.url }
        set { change { $0.url = newValue } }
    }
    /// The URL's origin, when the caller has already worked it out (``EndSessionCall`` does, once
    /// per endpoint); nil: the engine parses the URL itself.
    package var origin: HTTPOrigin? {
        get { storage.fields.origin }
        set { change { $0.origin = newValue } }
    }
    /// What messages say instead of ``url``, e.g. `https://auth.example/user/…/endsession`.
    package var redactedURL: String {
        get { storage.fields.redactedURL }
        set { change { $0.redactedURL = newValue } }
    }
    /// The method. Default `GET`.
    package var method: Method {
        get { storage.fields.method }
        set { change { $0.method = newValue } }
    }
    /// Extra header lines, each `"Name: value"` without CR or LF (libcurl's conventions apply:
    /// `"Name:"` removes a header libcurl would send, `"Name;"` sends it empty). Secret-bearing:
    /// never logged. Default none.
    package var headers: [String] {
        get { storage.fields.headers }
        set { change { $0.headers = newValue } }
    }
    /// The request body. Secret-bearing: never logged. Default none.
    package var body: [UInt8]? {
        get { storage.fields.body }
        set { change { $0.body = newValue } }
    }
    /// The whole transfer's time limit, from start to the last byte, in millisecond precision.
    /// Default 20 s.
    package var timeout: Duration {
        get { storage.fields.timeout }
        set { change { $0.timeout = newValue } }
    }
    /// The limit for resolving and connecting (TCP and TLS), capped at ``timeout``.
    /// Default nil: the same as ``timeout``.
    package var connectTimeout: Duration? {
        get { storage.fields.connectTimeout }
        set { change { $0.connectTimeout = newValue } }
    }
    /// A PEM file of CA certificates to trust instead of the system store. Peer and host name
    /// verification are always on either way. Default nil: the system store.
    package var caFile: String? {
        get { storage.fields.profile.caFile }
        set {
            change {
                $0.profile = TransferProfile(
                    caFile: newValue, version: $0.profile.version, proxy: $0.profile.proxy,
                    clientCertificate: $0.profile.clientCertificate)
            }
        }
    }
    /// How much of the reply body to keep. A longer body is cut at this size and the transfer
    /// stops there (see ``HTTPResult/Outcome/response(status:body:truncated:retryAfter:)``).
    /// Default 64 KiB.
    package var maxReplyBytes: Int {
        get { storage.fields.maxReplyBytes }
        set { change { $0.maxReplyBytes = newValue } }
    }
    /// The HTTP version to use. Default ``Version/automatic``.
    package var version: Version {
        get { storage.fields.profile.version }
        set {
            change {
                $0.profile = TransferProfile(
                    caFile: $0.profile.caFile, version: newValue, proxy: $0.profile.proxy,
                    clientCertificate: $0.profile.clientCertificate)
            }
        }
    }
    /// The proxy to go through. Default nil: none, whatever the environment says.
    package var proxy: HTTPProxy? {
        get { storage.fields.profile.proxy }
        set {
            change {
                $0.profile = TransferProfile(
                    caFile: $0.profile.caFile, version: $0.profile.version, proxy: newValue,
                    clientCertificate: $0.profile.clientCertificate)
            }
        }
    }
    /// ``caFile``, ``version`` and ``proxy`` together: what a pooled easy handle is configured for.
    package var profile: TransferProfile { storage.fields.profile }
    /// At most this many of the engine's transfers to this request's origin run at once (and so
    /// at most this many connections are open to it); the smallest value any request for the
    /// origin gave applies. Default nil: only the engine's own limits.
    package var maxConnectionsPerHost: Int? {
        get { storage.fields.maxConnectionsPerHost }
        set { change { $0.maxConnectionsPerHost = newValue } }
    }

    /// The default reply cap: 64 KiB.
    package static let defaultMaxReplyBytes = 64 * 1024

    /// Creates a request; everything but the URL and its redacted form has a default.
    package init(
        url: String,
        redactedURL: String,
        method: Method = .get,
        headers: [String] = [],
        body: [UInt8]? = nil,
        timeout: Duration = .seconds(20),
        connectTimeout: Duration? = nil,
        caFile: String? = nil,
        maxReplyBytes: Int = HTTPRequest.defaultMaxReplyBytes,
        origin: HTTPOrigin? = nil,
        version: Version = .automatic,
        proxy: HTTPProxy? = nil,
        maxConnectionsPerHost: Int? = nil
    ) {
        self.init(
            url: url, redactedURL: redactedURL, method: method, headers: headers, body: body, timeout: timeout,
            connectTimeout: connectTimeout, maxReplyBytes: maxReplyBytes, origin: origin,
            profile: TransferProfile(caFile: caFile, version: version, proxy: proxy),
            maxConnectionsPerHost: maxConnectionsPerHost)
    }

    /// Creates a request with a `profile` made beforehand (an endpoint's, shared by its requests).
    package init(
        url: String, redactedURL: String, method: Method, headers: [String], body: [UInt8]?, timeout: Duration,
        connectTimeout: Duration? = nil, maxReplyBytes: Int = HTTPRequest.defaultMaxReplyBytes, origin: HTTPOrigin?,
        profile: TransferProfile, maxConnectionsPerHost: Int?
    ) {
        storage = Storage(
            Fields(
                url: url, origin: origin, redactedURL: redactedURL, method: method, headers: headers, body: body,
                timeout: timeout, connectTimeout: connectTimeout, maxReplyBytes: maxReplyBytes, profile: profile,
                maxConnectionsPerHost: maxConnectionsPerHost))
    }
}

extension HTTPRequest: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `POST https://auth.example/user/…/endsession`: the redacted URL only.
    package var description: String { "\(method.rawValue) \(redactedURL)" }

    /// The same as ``description``: debugging output must not leak secrets either.
    package var debugDescription: String { description }

    /// Shows only what is safe, so `dump(request)` cannot print the URL, headers or body.
    package var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "method": method.rawValue,
                "redactedURL": redactedURL,
                "headerCount": headers.count,
                "bodyBytes": body?.count ?? 0,
                "timeout": timeout,
                "version": version.rawValue,
                "proxy": proxy?.description as Any,
            ],
            displayStyle: .struct)
    }
}
