import Basics
import FuzzSupport
import Glibc

/// Directories the target writes stores into: one per process under `$TMPDIR` (scripts/fuzz.sh
/// points it at a directory of its own in /dev/shm), one per input below it, removed after use.
enum ScratchDirectory {
    /// This process's directory, made on first use.
    static let root: String = {
        let parent = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        var template = Array("\(parent)/fuzz-store-load.XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else {
            Fuzz.require(false, "mkdtemp in \(parent) failed: errno \(errno)")
            return ""
        }
        let path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        atexit { ScratchDirectory.remove(ScratchDirectory.root) }
        return path
    }()

    nonisolated(unsafe) private static var made = 0

    /// A new, empty directory (mode 0700) below ``root``.
    static func make() -> String {
        made += 1
        let path = "\(root)/\(made)"
        Fuzz.require(mkdir(path, 0o700) == 0, "mkdir \(path) failed: errno \(errno)")
        return path
    }

    /// Writes `bytes` to `directory/name` (mode 0600); nothing when `bytes` is nil (a lost file).
    static func write(_ bytes: [UInt8]?, to name: String, in directory: String) {
        guard let bytes else { return }
        let fd = open("\(directory)/\(name)", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        Fuzz.require(fd >= 0, "creating \(directory)/\(name) failed: errno \(errno)")
        defer { close(fd) }
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        Fuzz.require(written == bytes.count, "writing \(directory)/\(name) failed: errno \(errno)")
    }

    /// The whole file `directory/name`, or nil if there is none.
    static func read(_ name: String, in directory: String) -> [UInt8]? {
        try? FileReading.contents(of: "\(directory)/\(name)", limit: 64 << 20)
    }

    /// Removes `path` and the files in it (the store's directories hold no subdirectories).
    static func remove(_ path: String) {
        for name in (try? FileReading.directoryEntries(path)) ?? nil ?? [] { unlink("\(path)/\(name)") }
        rmdir(path)
    }

    /// How many descriptors this process has open.
    static func openDescriptors() -> Int {
        ((try? FileReading.directoryEntries("/proc/self/fd")) ?? nil)?.count ?? -1
    }
}
