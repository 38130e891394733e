import Foundation
import Sessions
import XCTest

@testable import SessionCleanup

/// The remembered HTTP versions in a real state directory: written only when a run told
/// something new, read back by the next daemon, and a failed write journaled, losing nothing else.
final class HTTPVersionMemoryTests: XCTestCase {
    private let h1 = HTTPOrigin(isTLS: true, host: "auth.example.com", port: 443)
    private let h2 = HTTPOrigin(isTLS: true, host: "sso.example.com", port: 8443)

    func testWrittenOnlyWhenSomethingIsNewAndReadBackAfterARestart() throws {
        let scratch = try ScratchDirectory("versions-memory")
        let file = scratch.path + "/" + HTTPVersionDocument.name
        let (store, _) = try SessionStore.open(directory: scratch.path)
        let journal = MemoryJournal()
        let memory = HTTPVersionMemory(store: store, journal: journal)
        XCTAssertEqual(memory.http1Origins, [], "no record yet")
        memory.remember([h1: false, h2: true])
        XCTAssertEqual(memory.http1Origins, [h1])
        XCTAssertTrue(FileManager.default.fileExists(atPath: file))
        // Told again what it holds: no write (the file removed meanwhile stays away).
        try FileManager.default.removeItem(atPath: file)
        memory.remember([h1: false])
        XCTAssertFalse(FileManager.default.fileExists(atPath: file))
        // A version that changed is written, with what it held.
        memory.remember([h1: true])
        store.close()
        let (reopened, _) = try SessionStore.open(directory: scratch.path)
        let restarted = HTTPVersionMemory(store: reopened, journal: journal)
        XCTAssertEqual(restarted.http1Origins, [], "h1 turned to HTTP/2")
        XCTAssertEqual(
            try String(contentsOfFile: file, encoding: .utf8),
            "session-cleanup-http-versions 1\nhttps://auth.example.com:443 2\nhttps://sso.example.com:8443 2\n")
        XCTAssertEqual(journal.entries.count, 0)
    }

    func testAFailedWriteIsJournaledAndTriedAgainAtTheNextRunsEnd() throws {
        let scratch = try ScratchDirectory("versions-memory-fail")
        let (store, _) = try SessionStore.open(directory: scratch.path)
        let journal = MemoryJournal()
        let memory = HTTPVersionMemory(store: store, journal: journal)
        store.close()  // every write now fails
        memory.remember([h1: false])
        memory.remember([h1: false])
        let failures = journal.entries(event: "store-write-failed")
        XCTAssertEqual(failures.count, 2, "not held after a failed write: the next end tries again")
        XCTAssertTrue(failures.first?.message.contains("HTTP versions learned were not saved") ?? false)
        XCTAssertEqual(memory.http1Origins, [], "what was not written is not taken as held")
    }
}
