import Glibc

/// Why a store operation failed. The message names the operation, the file and, where it
/// applies, the byte offset and the `errno` text. It never contains a session key.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// Broad class of failure.
    public enum Kind: Sendable, Equatable {
        /// A system call failed (see `errnoCode`).
        case io
        /// Another process (or another open store in this process) holds the directory lock.
        case locked
        /// A file uses a format or record type this version does not understand.
        case unsupportedFormat
        /// `register` was called with an id that is already present.
        case duplicateSession
        /// A session's encoding exceeds the per-session limit.
        case sessionTooLarge
        /// An earlier `fdatasync`/`fsync` failed; durability is unknown, so the store refuses
        /// further commits. Restart (reopen) to re-read what is really on disk.
        case failed
        /// The store was closed.
        case closed
    }

    /// Broad class of failure.
    public let kind: Kind
    /// Full human-readable message.
    public let message: String
    /// File or directory involved, if any.
    public let path: String?
    /// Byte offset within `path`, if any.
    public let offset: Int?
    /// `errno` from the failed call, if any.
    public let errnoCode: Int32?

    /// Creates an error; `message` must not contain secrets.
    public init(kind: Kind, message: String, path: String? = nil, offset: Int? = nil, errnoCode: Int32? = nil) {
        self.kind = kind
        self.message = message
        self.path = path
        self.offset = offset
        self.errnoCode = errnoCode
    }

    /// A failed system call: "`operation` failed for `path`: <strerror> (errno N)".
    static func io(_ operation: String, path: String, errno code: Int32, offset: Int? = nil) -> StoreError {
        var text = "\(operation) failed for \(path)"
        if let offset { text += " at byte \(offset)" }
        text += ": \(errnoText(code))"
        return StoreError(kind: .io, message: text, path: path, offset: offset, errnoCode: code)
    }

    /// The message.
    public var description: String { message }
}

/// `strerror` text plus the symbolic number, e.g. "Permission denied (errno 13)".
func errnoText(_ code: Int32) -> String {
    let text = strerror(code).map { String(cString: $0) } ?? "unknown error"
    return "\(text) (errno \(code))"
}
