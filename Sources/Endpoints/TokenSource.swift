/// Where an access token comes from: a token URL, a client and what is asked for. Tokens are
/// cached and shared by this (``ClientCredentialsGrant/source``): every endpoint that names the
/// same token URL, client id, scope and audience uses the same token. Holds no secret.
package struct TokenSource: Hashable, Sendable, CustomStringConvertible {
    /// `TokenURL=`.
    package let url: String
    /// The client's id (not its secret).
    package let clientID: String
    /// `TokenScope=`, or nil.
    package let scope: String?
    /// `TokenAudience=`, or nil.
    package let audience: String?

    /// The source of tokens from `url` for client `clientID` with `scope` and `audience`.
    package init(url: String, clientID: String, scope: String?, audience: String?) {
        self.url = url
        self.clientID = clientID
        self.scope = scope
        self.audience = audience
    }

    /// `scheme://host:port` of the token URL: what messages name.
    package var origin: String { EndSessionCall.origin(of: url) }

    /// `https://idp.example:443 (scope revoke)`: the origin and the scope, for messages.
    package var description: String { origin + (scope.map { " (scope \($0))" } ?? "") }
}
