import Basics
import Glibc

/// The metrics file in node_exporter's textfile directory, replaced whole each time: written to
/// a temporary name in the same directory (one the collector ignores: it reads `*.prom` only),
/// mode 0644 so that node_exporter's own user can read it, then renamed over the old one — the
/// collector never sees half a file.
package struct MetricsTextfile: Sendable, Equatable {
    /// The file's name: node_exporter reads every `*.prom` in its directory.
    package static let name = "session_cleanup.prom"

    /// The directory (`[Metrics] TextfileDirectory=`).
    package let directory: String

    /// The file at `directory`.
    package init(directory: String) { self.directory = directory }

    /// The file's path.
    package var path: String { directory + "/" + Self.name }

    /// Replaces the file with `text`. Throws the failed step, naming the path.
    package func replace(with text: String) throws(SystemCallError) {
        let temporary = directory + "/." + Self.name + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { throw SystemCallError.current("open", temporary) }
        var failure: SystemCallError?
        // The unit's UMask= must not hide the file from node_exporter's user.
        if fchmod(fd, 0o644) != 0 { failure = SystemCallError.current("fchmod", temporary) }
        if failure == nil {
            let bytes = Array(text.utf8)
            var written = 0
            while written < bytes.count {
                let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress.map { $0 + written }, $0.count - written) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else {
                    failure = SystemCallError.current("write", temporary)
                    break
                }
                written += count
            }
        }
        close(fd)
        if failure == nil, rename(temporary, path) != 0 { failure = SystemCallError.current("rename", path) }
        if let failure {
            unlink(temporary)
            throw failure
        }
    }
}
