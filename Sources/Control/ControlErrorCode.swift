/// The `code` of an error response: what kind of "no" it is, for programs to branch on.
/// An open set: a newer daemon may send codes this build does not name.
package struct ControlErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The code's text on the wire.
    package let rawValue: String

    /// Wraps a code's text.
    package init(rawValue: String) { self.rawValue = rawValue }

    /// The request is not valid JSON, not an object, or has unknown, missing or wrong fields.
    package static let badRequest = ControlErrorCode(rawValue: "bad-request")
    /// The request line is longer than the server accepts (64 KiB); the connection is closed.
    package static let tooLarge = ControlErrorCode(rawValue: "too-large")
    /// No session with that id (that the caller may see).
    package static let notFound = ControlErrorCode(rawValue: "not-found")
    /// The caller's uid may not do this (another user's session, say).
    package static let forbidden = ControlErrorCode(rawValue: "forbidden")
    /// A limit was reached: sessions per user, concurrent clients.
    package static let limit = ControlErrorCode(rawValue: "limit")
    /// The daemon is stopping and takes no new registrations.
    package static let stopping = ControlErrorCode(rawValue: "stopping")
    /// Something failed inside the daemon (its journal says what).
    package static let `internal` = ControlErrorCode(rawValue: "internal")
    /// `reload`: the configuration on disk is invalid; the daemon keeps the one in force.
    package static let invalidConfiguration = ControlErrorCode(rawValue: "invalid-configuration")

    /// The code's text.
    package var description: String { rawValue }
}
