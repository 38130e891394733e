import Glibc

/// A failed system call, naming the operation, what it was applied to, and the errno text.
package struct SystemCallError: Error, CustomStringConvertible, Equatable {
    /// The call that failed, e.g. `"open"` or `"sd_notify"`.
    package let operation: String
    /// What the call was applied to: a path, a socket address, a descriptor; may be empty.
    package let subject: String
    /// The errno value (positive).
    package let errno: Int32

    /// Creates an error for `operation` on `subject` with the positive `errno`.
    package init(_ operation: String, _ subject: String = "", errno: Int32) {
        self.operation = operation
        self.subject = subject
        self.errno = errno
    }

    /// Creates an error from a negative-errno return value (libsystemd's convention).
    package init(_ operation: String, _ subject: String = "", negativeErrno: Int32) {
        self.init(operation, subject, errno: -negativeErrno)
    }

    /// Creates an error from the thread's current `errno`.
    package static func current(_ operation: String, _ subject: String = "") -> SystemCallError {
        SystemCallError(operation, subject, errno: Glibc.errno)
    }

    /// `open /var/lib/x: Permission denied (errno 13)`.
    package var description: String {
        let target = subject.isEmpty ? "" : " \(subject)"
        return "\(operation)\(target): \(Errno(errno))"
    }
}
