import Configuration
import Vocabulary

/// The request of an OAuth 2.0 client-credentials grant (RFC 6749 §4.4) for an endpoint with
/// `TokenURL=`: a form POST of `grant_type=client_credentials` (with `scope` and `audience` when
/// configured) to the token URL, the client authenticated as `ClientAuthentication=` says. It goes
/// out with the endpoint's CA file, HTTP version and proxy. The reply is read by ``TokenReply``.
package struct ClientCredentialsGrant: Sendable {
    /// What the token is cached by.
    package let source: TokenSource
    private let headers: [String]
    private let body: [UInt8]
    private let profile: TransferProfile
    private let origin: HTTPOrigin?

    /// The grant of `configuration` (which has a `TokenURL=`) for `client`; nil without `TokenURL=`.
    package init?(_ configuration: EndpointConfiguration, client: ClientCredential, profile: TransferProfile) {
        guard let url = configuration.tokenURL else { return nil }
        source = TokenSource(
            url: url, clientID: client.id, scope: configuration.tokenScope, audience: configuration.tokenAudience)
        var fields = "grant_type=client_credentials"
        if let scope = configuration.tokenScope { fields += "&scope=" + ClientCredential.formEncoded(scope) }
        if let audience = configuration.tokenAudience {
            fields += "&audience=" + ClientCredential.formEncoded(audience)
        }
        var headers = ["Content-Type: application/x-www-form-urlencoded", "Accept: application/json"]
        switch configuration.clientAuthentication {
        case .basic: headers.append(client.basicHeader(encodingParts: true))
        case .basicRaw: headers.append(client.basicHeader(encodingParts: false))
        case .post: fields += "&" + client.formFields
        }
        self.headers = headers
        body = Array(fields.utf8)
        self.profile = profile
        origin = HTTPOrigin(url: url)
    }

    /// The grant's request, with `timeout`. Its URL is the configured token URL (no secret: the
    /// file that names it is world-readable); the client's secret is in a header or the body.
    package func request(timeout: Duration) -> HTTPRequest {
        HTTPRequest(
            url: source.url, redactedURL: source.url, method: .post, headers: headers, body: body, timeout: timeout,
            maxReplyBytes: TokenReply.maxBytes, origin: origin, profile: profile, maxConnectionsPerHost: nil)
    }
}
