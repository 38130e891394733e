import Basics
import Configuration
import Sessions
import Vocabulary

/// One session × endpoint call: turns the endpoint's templates and the session's key into an
/// ``HTTPRequest``, and knows the redacted URL that may be shown to people.
///
/// `{session}` is filled percent-encoded in the URL, JSON-escaped in a body that is JSON (it
/// starts with `{` or `[`), percent-encoded in any other body, and as is in a header (keys
/// with control characters are refused at registration).
package struct EndSessionCall: Sendable {
    /// The placeholder the templates use.
    package static let placeholder = "{session}"
    /// What the key is replaced with wherever a URL is shown.
    package static let redaction = "<redacted>"

    /// The session's non-secret id.
    package let sessionID: SessionID
    /// What every call to this endpoint shares, worked out once per run.
    package let template: EndpointTemplate
    private let key: SessionKey

    /// Pairs a session with one of its endpoints.
    package init(session: Session, template: EndpointTemplate) {
        self.init(id: session.id, key: session.key, template: template)
    }

    /// Pairs the session `id`, whose key is `key`, with one of its endpoints (a run reads both
    /// from the store, without making the whole session).
    package init(id: SessionID, key: SessionKey, template: EndpointTemplate) {
        sessionID = id
        self.key = key
        self.template = template
    }

    /// Pairs a session with one of its endpoints.
    package init(session: Session, endpoint: EndpointConfiguration) {
        self.init(session: session, template: EndpointTemplate(endpoint))
    }

    /// The endpoint's configuration.
    package var endpoint: EndpointConfiguration { template.configuration }

    /// The endpoint URL with the key hidden: safe for the journal.
    package var redactedURL: String { template.redactedURL }

    /// `scheme://host:port` of the endpoint: calls to one origin share connections and fate.
    package var origin: String { template.origin }

    /// The request to send, with `timeout` (and `connectTimeout` for its connection, if given),
    /// and `token` as a bearer token if given. What does not depend on the key (method, headers
    /// without `{session}`, the bearer header of the endpoint's own token) comes ready-made from
    /// the template: a call builds only the URL.
    package func request(timeout: Duration, connectTimeout: Duration? = nil, token: String?) -> HTTPRequest {
        let secret = key.exposedSecret
        let endpoint = template.configuration
        let encoded = Self.percentEncoded(secret)
        let url = template.url(with: encoded)
        var headers: [String]
        if template.headersNeedKey {
            headers = template.headers.map { $0.replacingText(Self.placeholder, with: secret) }
            if let token { headers.append(EndpointTemplate.bearer(token)) }
        } else if let token {
            headers =
                token == template.token
                ? template.headersWithToken : template.headers + [EndpointTemplate.bearer(token)]
        } else {
            headers = template.headers
        }
        var body = endpoint.body.map { template -> [UInt8] in
            let isJSON = template.hasPrefix("{") || template.hasPrefix("[")
            let filled = isJSON ? Self.jsonEscaped(secret) : Self.percentEncoded(secret)
            return Array(template.replacingText(Self.placeholder, with: filled).utf8)
        }
        if let fields = template.clientFields {
            body = (body.map { $0.isEmpty ? [] : $0 + [UInt8(ascii: "&")] } ?? []) + fields
        }
        return HTTPRequest(
            url: url, redactedURL: redactedURL, method: template.method, headers: headers, body: body,
            timeout: timeout, connectTimeout: connectTimeout, origin: template.httpOrigin, profile: template.profile,
            maxConnectionsPerHost: endpoint.maxConnectionsPerHost)
    }

    /// `scheme://host:port` of a URL (the default port filled in), lower-cased; the URL itself,
    /// lower-cased, when it has no origin (``HTTPOrigin/init(url:)``).
    package static func origin(of url: String) -> String {
        HTTPOrigin(url: url)?.description ?? url.lowercased()
    }

    /// RFC 3986 percent-encoding of everything but the unreserved characters.
    package static func percentEncoded(_ text: String) -> String {
        func isUnreserved(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                return true
            default:
                return false
            }
        }
        // Keys are mostly tokens that need no encoding: then the text is its own encoding.
        var text = text
        if text.withUTF8({ $0.allSatisfy(isUnreserved) }) { return text }
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count * 3)
        for byte in text.utf8 {
            if isUnreserved(byte) {
                bytes.append(byte)
            } else {
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The text escaped for the inside of a JSON string.
    package static func jsonEscaped(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result
    }
}

/// The parts of an endpoint every call shares, computed once per run rather than per call.
package final class EndpointTemplate: Sendable {
    /// The endpoint's configuration.
    package let configuration: EndpointConfiguration
    /// `scheme://host:port`.
    package let origin: String
    /// The same, parsed: what the engine pools connections by (nil if the URL has no origin).
    package let httpOrigin: HTTPOrigin?
    /// The URL with the key hidden.
    package let redactedURL: String
    /// The URL split at each `{session}`.
    let urlPieces: [String]
    /// Bytes of the URL without its placeholders.
    let urlLength: Int
    /// The HTTP method.
    let method: HTTPRequest.Method
    /// Whether a header holds `{session}` (then each call fills its headers in).
    let headersNeedKey: Bool
    /// The endpoint's headers, with the `Authorization: Basic` of its `ClientCredential=` when
    /// that is how the client authenticates.
    let headers: [String]
    /// `client_id=…&client_secret=…` to add to every body (`ClientAuthentication=post`), or nil.
    let clientFields: [UInt8]?
    /// The endpoint's bearer token (from its `TokenCredential=`), and its headers with it added.
    package let token: String?
    let headersWithToken: [String]
    /// The proxy calls go through (with its credential), or nil.
    let proxy: HTTPProxy?
    /// The CA file, HTTP version and proxy of every call: one object, shared by the requests.
    let profile: TransferProfile
    /// The client-credentials grant whose access token the calls carry (`TokenURL=`), or nil.
    package let grant: ClientCredentialsGrant?
    /// Why no call to this endpoint can be made — a credential it names is missing or
    /// malformed — or nil. Never contains a credential's contents.
    package let unavailable: String?

    /// Prepares `configuration`, with systemd credentials' contents by name (``CredentialReader``):
    /// its `TokenCredential=`, `ClientCredential=`, `ProxyCredential=`,
    /// `ClientCertificateCredential=` and `ClientKeyCredential=` are looked up there.
    package init(_ configuration: EndpointConfiguration, credentials: [String: String] = [:]) {
        self.configuration = configuration
        var unavailable: String?
        if let name = configuration.tokenCredential, credentials[name] == nil {
            unavailable = "credential '\(name)' for endpoint '\(configuration.name)' is unavailable"
        }
        var client: ClientCredential?
        if let name = configuration.clientCredential {
            client = credentials[name].flatMap(ClientCredential.init)
            if client == nil {
                let problem = credentials[name] == nil ? "is unavailable" : "does not hold client_id:client_secret"
                unavailable = "client credential '\(name)' for endpoint '\(configuration.name)' \(problem)"
            }
        }
        // With TokenURL= the client authenticates the grant; the calls carry its access token.
        let callClient = configuration.tokenURL == nil ? client : nil
        switch (callClient, configuration.clientAuthentication) {
        case (let client?, .basic): headers = configuration.headers + [client.basicHeader(encodingParts: true)]
        case (let client?, .basicRaw): headers = configuration.headers + [client.basicHeader(encodingParts: false)]
        default: headers = configuration.headers
        }
        clientFields = configuration.clientAuthentication == .post ? callClient.map { Array($0.formFields.utf8) } : nil
        var credential: HTTPProxy.Credential?
        if let name = configuration.proxyCredential {
            if let text = credentials[name], let colon = text.firstIndex(of: ":"), colon != text.startIndex {
                credential = HTTPProxy.Credential(
                    user: String(text[..<colon]), password: String(text[text.index(after: colon)...]))
            } else {
                let problem = credentials[name] == nil ? "is unavailable" : "does not hold user:password"
                unavailable = "proxy credential '\(name)' for endpoint '\(configuration.name)' \(problem)"
            }
        }
        var clientCertificate: ClientCertificate?
        if let certificate = configuration.clientCertificateCredential, let key = configuration.clientKeyCredential {
            if let pem = credentials[certificate], let keyPEM = credentials[key] {
                clientCertificate = ClientCertificate(certificate: Array(pem.utf8), key: Array(keyPEM.utf8))
            } else {
                let missing = credentials[certificate] == nil ? certificate : key
                unavailable =
                    "client certificate credential '\(missing)' for endpoint '\(configuration.name)' is unavailable"
            }
        }
        self.unavailable = unavailable
        let proxy = configuration.proxy.map {
            HTTPProxy(url: $0, noProxy: configuration.noProxy, credential: credential)
        }
        self.proxy = proxy
        let profile = TransferProfile(
            caFile: configuration.caFile, version: configuration.httpVersion, proxy: proxy,
            clientCertificate: clientCertificate)
        self.profile = profile
        grant = client.flatMap { ClientCredentialsGrant(configuration, client: $0, profile: profile) }
        let parsed = HTTPOrigin(url: configuration.url)
        // A key in the host or port makes every call's origin its own: the engine parses those.
        httpOrigin = parsed.flatMap { $0.host.containsText(EndSessionCall.placeholder) ? nil : $0 }
        origin = parsed?.description ?? configuration.url.lowercased()
        redactedURL = configuration.url.replacingText(EndSessionCall.placeholder, with: EndSessionCall.redaction)
        urlPieces = configuration.url.pieces(separatedBy: EndSessionCall.placeholder)
            .map(String.init)
        urlLength = urlPieces.reduce(0) { $0 + $1.utf8.count }
        method = HTTPRequest.Method(rawValue: configuration.method) ?? .get
        headersNeedKey = headers.contains { $0.containsText(EndSessionCall.placeholder) }
        token = configuration.tokenCredential.flatMap { credentials[$0] }
        headersWithToken = headers + (token.map { [Self.bearer($0)] } ?? [])
    }

    /// The URL with `encodedKey` in every `{session}`, written into one string of its final size.
    func url(with encodedKey: String) -> String {
        var key = encodedKey
        return key.withUTF8 { key in
            String(unsafeUninitializedCapacity: urlLength + key.count * (urlPieces.count - 1)) { out in
                var written = 0
                for (index, piece) in urlPieces.enumerated() {
                    if index > 0 {
                        _ = UnsafeMutableBufferPointer(rebasing: out[written...]).initialize(from: key)
                        written += key.count
                    }
                    var piece = piece
                    piece.withUTF8 { bytes in
                        _ = UnsafeMutableBufferPointer(rebasing: out[written...]).initialize(from: bytes)
                        written += bytes.count
                    }
                }
                return written
            }
        }
    }

    /// What a reply to a call to this endpoint means (``ReplyJudge``).
    package func judge(_ result: HTTPResult) -> ReplyJudge.Verdict { ReplyJudge.judge(result, endpoint: configuration) }

    /// The header that sends `token` as a bearer token.
    static func bearer(_ token: String) -> String { "Authorization: Bearer \(token)" }
}
