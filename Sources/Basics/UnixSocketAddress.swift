import Glibc

/// A filesystem path as a Unix-domain socket address (`sockaddr_un`), for `bind(2)` and
/// `connect(2)`.
package struct UnixSocketAddress {
    /// The longest path `sun_path` holds, its terminating NUL excluded (107 bytes on Linux).
    package static let maxPathBytes = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// The socket's path.
    package let path: String
    private var address = sockaddr_un()

    /// The address of `path`; nil if the path is empty, longer than ``maxPathBytes`` or holds a NUL.
    package init?(path: String) {
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count <= Self.maxPathBytes, !bytes.contains(0) else { return nil }
        self.path = path
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
    }

    /// `bind(2)`s `fd` to this address: 0, or -1 with `errno` set.
    package func bind(_ fd: Int32) -> Int32 {
        withSocketAddress { Glibc.bind(fd, $0, $1) }
    }

    /// `connect(2)`s `fd` to this address: 0, or -1 with `errno` set.
    package func connect(_ fd: Int32) -> Int32 {
        withSocketAddress { Glibc.connect(fd, $0, $1) }
    }

    private func withSocketAddress<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafePointer(to: address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}
