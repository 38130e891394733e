import Foundation
import XCTest

/// The daemon keeps one malloc arena (`MallocArenas`): the store's writer threads allocate in
/// the main heap rather than each in an arena of its own that keeps the pages it once used.
final class MallocArenaTests: XCTestCase {
    func testTheStoresWriterThreadsAllocateInTheMainArena() throws {
        let daemon = try DaemonProcess(config: "[Endpoint]\nName=auth\nURL=http://127.0.0.1:1/{session}\n")
        XCTAssertNotNil(daemon.waitUntilReady())
        // Each registration is a commit the store's log queue writes on a thread of its own.
        for index in 0..<3 {
            let result = try BuiltBinary.run(
                ["register", "--endpoint", "auth", "--socket", daemon.socketPath], stdin: "arena-\(index)\n")
            XCTAssertEqual(result.status, 0, result.err)
        }
        let threads = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.pid)/task").count
        let maps = try String(contentsOfFile: "/proc/\(daemon.pid)/maps", encoding: .utf8)
        XCTAssertGreaterThan(threads, 1, "the store's writer ran on a thread of its own")
        XCTAssertEqual(Self.arenaHeaps(in: maps), [], "malloc arenas besides the main one")
        daemon.signal(SIGTERM)
        // 75: the sessions are kept (nothing listens at their endpoint).
        XCTAssertEqual(daemon.waitForExit(timeout: 30), 75)
    }

    /// The counting itself, on a map with one arena heap (its used part, then the reserved rest).
    func testAnArenaHeapIsRecognisedInAMap() {
        let maps = """
            55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0                          [heap]
            7f6da4000000-7f6da4021000 rw-p 00000000 00:00 0
            7f6da4021000-7f6da8000000 ---p 00000000 00:00 0
            7f6da8000000-7f6da8800000 rw-p 00000000 00:00 0
            7f6daa000000-7f6daa200000 r-xp 00000000 08:01 1234                       /usr/lib/libx.so
            """
        XCTAssertEqual(Self.arenaHeaps(in: maps), ["7f6da4000000"])
    }

    /// glibc's arenas other than the main one live in heaps of 64 MiB aligned to 64 MiB: runs of
    /// anonymous mappings that start at such an address and end 64 MiB later.
    static func arenaHeaps(in maps: String) -> [String] {
        let heapSize: UInt64 = 64 << 20
        let anonymous: [(start: UInt64, end: UInt64)] = maps.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count == 5, fields[4] == "0" else { return nil }
            let range = fields[0].split(separator: "-")
            guard range.count == 2, let start = UInt64(range[0], radix: 16), let end = UInt64(range[1], radix: 16)
            else { return nil }
            return (start, end)
        }
        var heaps: [String] = []
        for (index, mapping) in anonymous.enumerated() where mapping.start % heapSize == 0 {
            var end = mapping.end
            var next = index + 1
            while end < mapping.start + heapSize, next < anonymous.count, anonymous[next].start == end {
                end = anonymous[next].end
                next += 1
            }
            if end == mapping.start + heapSize { heaps.append(String(mapping.start, radix: 16)) }
        }
        return heaps
    }
}
