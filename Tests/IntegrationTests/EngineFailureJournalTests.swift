import Foundation
import Glibc
import XCTest

@testable import Control
@testable import Daemon
@testable import Sessions

/// The daemon's run coordinator with a real store, engine and server: an engine-internal failure
/// (a libcurl callback that failed) is journaled as `engine-error` — it once went to a property
/// nobody read — and the run it hit still finishes.
final class EngineFailureJournalTests: XCTestCase {
    func testAnEngineInternalFailureIsJournaledAndTheRunStillFinishes() throws {
        let server = try EndSessionServer()
        let scratch = try ScratchDirectory("engine-error")
        let text =
            "[Stop]\nMaxAttempts=1\n[Start]\nLeftoverBudgetSec=60s\n[Endpoint]\nName=auth\nURL=\(server.endSessionURL)\nTimeoutSec=30s\n"
        let fixture = try CoordinatorFixture(scratch: scratch, config: text, name: "engine-error")
        defer { fixture.committer.close() }
        let (loop, journal, runs) = (fixture.loop, fixture.journal, fixture.runs)
        // The store is watched already; from here on the loop can watch nothing new — libcurl's
        // socket callback fails for the call's socket, as at the kernel's max_user_watches.
        loop.refusesRegistrations = ENOSPC
        let session = Session(
            id: .random(), key: SessionKey("ok-engine-error"), endpoints: ["auth"], ownerUID: 0, registeredAt: 0)
        var reply: ControlResponse?
        let started = loop.clock.now()
        runs.endInBackground([session], kind: .onDemand) { reply = $0 }
        let deadline = started.advanced(by: .seconds(10))
        while reply == nil, loop.clock.now() < deadline { try loop.runOnce(maximumWait: .milliseconds(50)) }
        loop.refusesRegistrations = nil

        XCTAssertNotNil(reply, "the run finished long before its budget (its call ended by the failure)")
        let errors = journal.entries(event: "engine-error")
        XCTAssertFalse(errors.isEmpty, "journaled: \(journal.entries.map(\.event.name))")
        let error = try XCTUnwrap(errors.first)
        XCTAssertEqual(error.priority, .warning)
        let field = error.fields.first { $0.name == .error }?.value ?? ""
        XCTAssertTrue(field.contains("watch socket") && field.contains("epoll_ctl"), "ERROR=\(field)")
        XCTAssertTrue(error.message.contains("HTTP engine failure"), error.message)
        for entry in errors {
            XCTAssertFalse("\(entry.message) \(entry.fields)".contains("ok-engine-error"), "no key in \(entry)")
        }
        XCTAssertEqual(try server.calls(for: "ok-engine-error").successes, 0, "no reply on an unwatched socket")
        print("engine-error journaled: \(error.message) (\(errors.count) entries)")
    }
}
