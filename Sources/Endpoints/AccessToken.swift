/// An access token a client-credentials grant gave (``TokenReply``): sent as
/// `Authorization: Bearer` on an endpoint's calls, kept in memory only, never shown — the type
/// has no description that shows it.
package struct AccessToken: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The token itself: printable ASCII without spaces (checked by ``TokenReply``).
    package let value: String
    /// How long the provider said it is valid (`expires_in`); nil when it did not say.
    package let lifetime: Duration?

    /// A token of `value`, valid for `lifetime` if known.
    package init(value: String, lifetime: Duration?) {
        self.value = value
        self.lifetime = lifetime
    }

    /// Never the token.
    package var description: String { "AccessToken(<redacted>)" }

    /// The same as ``description``: debugging output must not show the token either.
    package var debugDescription: String { description }

    /// Only the lifetime, so `dump(token)` cannot print the token.
    package var customMirror: Mirror {
        Mirror(self, children: ["lifetime": lifetime as Any], displayStyle: .struct)
    }
}
