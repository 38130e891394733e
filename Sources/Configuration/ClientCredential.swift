/// An OAuth client's identity as a `ClientCredential=` credential holds it: `client_id:client_secret`
/// on one line (split at the first `:`). Neither part is ever printed: the type has no description
/// that shows them, and errors name the credential, not its contents.
package struct ClientCredential: Sendable, Equatable, CustomStringConvertible {
    /// The client's id (before the first `:`).
    package let id: String
    /// The client's secret (after the first `:`).
    package let secret: String

    /// What a credential must hold, for errors.
    package static let expected = "client_id:client_secret (both non-empty, split at the first ':')"

    /// Parses a credential's text; nil when it has no `:` or an empty id or secret.
    package init?(_ text: String) {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let id = String(text[..<colon])
        let secret = String(text[text.index(after: colon)...])
        guard !id.isEmpty, !secret.isEmpty else { return nil }
        self.id = id
        self.secret = secret
    }

    /// Never the id or the secret.
    package var description: String { "ClientCredential(<redacted>)" }
}
