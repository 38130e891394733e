import Basics
import Glibc

/// Why a store operation failed. The message names the operation, the file and, where it
/// applies, the byte offset and the `errno` text. It never contains a session key.
package struct StoreError: Error, Sendable, CustomStringConvertible {
    /// Broad class of failure.
    package enum Kind: Sendable, Equatable {
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
        /// An earlier write or sync failed, so the store is rewriting itself from memory into
        /// new files; commits are refused until that has succeeded.
        case recovering
        /// The state directory (or the log in it) was deleted or moved while the store was open.
        case directoryGone
        /// An fsync or fdatasync failed after the data was handed to the kernel: whether it is on
        /// disk is not known, and the file must not be trusted again.
        case syncFailed
        /// The store was closed.
        case closed
        /// The files hold sealed session keys and no store key was given.
        case storeKeyMissing
        /// The files hold sealed session keys and none opens under the store key given.
        case storeKeyRejected
        /// The store was opened read-only (its directory cannot be written): it holds what is
        /// stored and accepts nothing new.
        case readOnly
    }

    /// Broad class of failure.
    package let kind: Kind
    /// Full human-readable message.
    package let message: String
    /// File or directory involved, if any.
    package let path: String?
    /// Byte offset within `path`, if any.
    package let offset: Int?
    /// `errno` from the failed call, if any.
    package let errnoCode: Int32?

    /// Creates an error; `message` must not contain secrets.
    package init(kind: Kind, message: String, path: String? = nil, offset: Int? = nil, errnoCode: Int32? = nil) {
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
        text += ": \(Errno(code))"
        return StoreError(kind: .io, message: text, path: path, offset: offset, errnoCode: code)
    }

    /// The message.
    package var description: String { message }
}
