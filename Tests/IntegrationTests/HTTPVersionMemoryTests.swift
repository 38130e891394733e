import Foundation
import XCTest

@testable import Control
@testable import Daemon
@testable import Sessions
@testable import TestSupport
@testable import Vocabulary

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

    func testAnOversizedRecordIsReadOnlyToItsLimitIgnoredAndReplaced() throws {
        let scratch = try ScratchDirectory("versions-memory-large")
        let file = scratch.path + "/" + HTTPVersionDocument.name
        let (store, _) = try SessionStore.open(directory: scratch.path)
        defer { store.close() }
        // A record far larger than any daemon writes: only its first bytes are read.
        let valid = "session-cleanup-http-versions 1\nhttps://auth.example.com:443 1.1\n"
        XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: Data(valid.utf8)))
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: file))
        try handle.truncate(atOffset: UInt64(64 << 20))  // 64 MiB, sparse
        try handle.close()
        let journal = MemoryJournal()
        let memory = HTTPVersionMemory(store: store, journal: journal)
        XCTAssertEqual(memory.http1Origins, [], "ignored")
        let ignored = journal.entries(event: "http-versions-ignored")
        XCTAssertEqual(ignored.count, 1)
        XCTAssertTrue(
            ignored.first?.message.contains("line 3: beyond the first \(HTTPVersionDocument.maximumBytes) bytes")
                ?? false, "\(ignored)")
        memory.remember([h2: true])
        XCTAssertEqual(
            try String(contentsOfFile: file, encoding: .utf8),
            "session-cleanup-http-versions 1\nhttps://sso.example.com:8443 2\n")
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

    /// A restart hand-over abandons the background runs; what their replies told is saved for
    /// the daemon taking over (it is otherwise written only when a run finishes).
    func testAHandOverSavesWhatTheAbandonedRunsLearned() throws {
        let ca = try TestCertificateAuthority()
        let server = try EndSessionServer(certificate: ca.server)
        let scratch = try ScratchDirectory("versions-handover")
        let text =
            "[Stop]\nMaxAttempts=1\n[Start]\nLeftoverBudgetSec=60s\n"
            + "[Endpoint]\nName=auth\nURL=\(server.endSessionURL)\nCAFile=\(ca.caFile)\nTimeoutSec=30s\n"
        let fixture = try CoordinatorFixture(scratch: scratch, config: text, name: "versions-handover")
        defer { fixture.committer.close() }
        let (loop, journal, committer, runs) = (fixture.loop, fixture.journal, fixture.committer, fixture.runs)
        let file = fixture.state + "/" + HTTPVersionDocument.name
        let sessions = ["ok-handover", "hang-handover"].map {
            Session(id: .random(), key: SessionKey($0), endpoints: ["auth"], ownerUID: 0, registeredAt: 0)
        }
        var reply: ControlResponse?
        runs.endInBackground(sessions, kind: .onDemand) { reply = $0 }
        // The first call's reply tells the version; the other call hangs, so the run goes on.
        let deadline = loop.clock.now().advanced(by: .seconds(10))
        while try server.calls(for: "ok-handover").successes == 0 || runs.backgroundRuns.isEmpty,
            loop.clock.now() < deadline
        {
            try loop.runOnce(maximumWait: .milliseconds(20))
        }
        for _ in 0..<20 { try loop.runOnce(maximumWait: .milliseconds(5)) }  // the reply reaches the engine
        XCTAssertEqual(try server.calls(for: "ok-handover").successes, 1)
        XCTAssertEqual(runs.backgroundRuns.count, 1, "the run still waits for its hanging call")
        XCTAssertFalse(FileManager.default.fileExists(atPath: file), "nothing written while the run goes on")

        runs.stopForHandOver()
        XCTAssertEqual(runs.backgroundRuns.count, 0)
        XCTAssertEqual(
            try String(contentsOfFile: file, encoding: .utf8),
            "session-cleanup-http-versions 1\nhttps://127.0.0.1:\(server.port) 1.1\n")
        XCTAssertNotNil(reply, "the end request was answered")
        let restarted = HTTPVersionMemory(store: committer.store, journal: journal)
        XCTAssertEqual(restarted.http1Origins, [HTTPOrigin(isTLS: true, host: "127.0.0.1", port: server.port)])
    }
}
