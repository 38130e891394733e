import Foundation
import Glibc

/// A tmpfs of a few megabytes, mounted for one test (root only: the tests run as root in CI), so
/// that a full disk can be made and unmade on purpose. Unmounted when released.
final class SmallFilesystem {
    let path: String
    private var fillers: [String] = []

    init(megabytes: Int) throws {
        var template = Array("/tmp/sc-tmpfs-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw TestSetupError("mkdtemp: \(String(cString: strerror(errno)))")
        }
        path = String(cString: made)
        let status = try Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m,mode=0700", "tmpfs", path])
        guard status == 0 else {
            rmdir(path)
            throw TestSetupError("mounting a \(megabytes) MiB tmpfs on \(path) failed (status \(status)); run as root")
        }
    }

    deinit {
        _ = try? Self.run("/bin/umount", [path])
        rmdir(path)
    }

    /// Bytes still free.
    var freeBytes: Int {
        var st = statvfs()
        guard statvfs(path, &st) == 0 else { return -1 }
        return Int(st.f_bavail) * Int(st.f_frsize)
    }

    /// Fills the filesystem until at most `leaving` bytes are free (0: completely full).
    func fill(leaving: Int = 0) throws {
        let name = path + "/filler-\(fillers.count)"
        let fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw TestSetupError("open \(name): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        fillers.append(name)
        let chunk = [UInt8](repeating: 0xAB, count: 4096)
        while freeBytes > leaving {
            let want = min(chunk.count, max(1, freeBytes - leaving))
            if write(fd, chunk, want) < 0 { break }
        }
    }

    /// Remounts the file system read-only (`true`) or read-write again (no file may be open for
    /// writing on it to go read-only).
    func remount(readOnly: Bool) throws {
        let status = try Self.run("/bin/mount", ["-o", "remount," + (readOnly ? "ro" : "rw"), path])
        guard status == 0 else { throw TestSetupError("remounting \(path) (read-only: \(readOnly)) failed: \(status)") }
    }

    /// Removes what `fill` wrote.
    func makeRoom() {
        for f in fillers { unlink(f) }
        fillers = []
    }

    private static func run(_ tool: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}
