/// A control server that could not start: what failed and on which socket path.
package struct ControlServerError: Error, Equatable, CustomStringConvertible {
    /// What failed, with the path and errno text.
    package let message: String

    /// Creates an error.
    package init(_ message: String) { self.message = message }

    /// The message.
    package var description: String { message }
}
