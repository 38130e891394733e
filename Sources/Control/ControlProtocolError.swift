/// A request that could not be decoded (or a reply the client could not read): the code to
/// answer with and a message naming the field at fault. Never contains a key's value.
package struct ControlProtocolError: Error, Equatable, CustomStringConvertible {
    /// The error code to reply with.
    package let code: ControlErrorCode
    /// What is wrong, for people.
    package let message: String

    /// Creates an error.
    package init(_ code: ControlErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The message.
    package var description: String { message }
}
