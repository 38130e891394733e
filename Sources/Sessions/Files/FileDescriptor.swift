import Glibc

/// An open file descriptor that closes itself when it goes out of scope. Not copyable, so there
/// is exactly one owner and no error path can forget to close it.
struct FileDescriptor: ~Copyable, Sendable {
    /// The descriptor number.
    let raw: Int32

    /// Takes ownership of `raw`.
    init(_ raw: Int32) { self.raw = raw }

    deinit { _ = Glibc.close(raw) }
}
