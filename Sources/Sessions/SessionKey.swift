/// The secret a client hands over so that the daemon can end its remote session later.
///
/// Never printed: `description`, `debugDescription`, string interpolation, `dump` and
/// `Mirror` all show `<redacted>`. Read the secret only where it is sent to the remote end,
/// through ``exposedSecret``. Deliberately not `Codable`: the store and the control protocol read
/// and write the secret explicitly, so no generic encoder can put it anywhere by accident.
package struct SessionKey: Sendable, Hashable, CustomStringConvertible,
    CustomDebugStringConvertible, CustomReflectable
{
    /// The raw secret. Named loudly so every read stands out in review.
    package let exposedSecret: String

    /// Wraps a secret string.
    package init(_ secret: String) { self.exposedSecret = secret }

    /// Always `<redacted>`.
    package var description: String { "<redacted>" }
    /// Always `<redacted>`.
    package var debugDescription: String { "<redacted>" }
    /// A mirror with no children, so reflection-based printing shows nothing of the secret.
    package var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    /// Length of the secret in UTF-8 bytes (not secret itself; handy for limits).
    package var utf8Count: Int { exposedSecret.utf8.count }

    /// Compares in time that depends only on the lengths, not on where the secrets differ.
    package static func == (lhs: SessionKey, rhs: SessionKey) -> Bool {
        let a = Array(lhs.exposedSecret.utf8)
        let b = Array(rhs.exposedSecret.utf8)
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<a.count { diff |= a[i] ^ b[i] }
        return diff == 0
    }

    /// Hashes the secret (for use as a dictionary key inside the process only).
    package func hash(into hasher: inout Hasher) { hasher.combine(exposedSecret) }
}
