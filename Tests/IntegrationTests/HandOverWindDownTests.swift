import Foundation
import XCTest

@testable import Control
@testable import Daemon
@testable import Sessions

/// A restart during `end --all`: the hand-over lets the calls under way finish (bounded) and
/// records them, so the restarted daemon does not call those sessions again (issue 26: 256 of
/// them were called twice).
final class HandOverWindDownTests: XCTestCase {
    func testTheCallsUnderWayFinishAndAreRecordedBeforeTheHandOverAndNoOtherStarts() throws {
        let server = try EndSessionServer()
        let scratch = try ScratchDirectory("handover-wind-down")
        let text =
            "[Stop]\nMaxConcurrentRequests=4\n[Start]\nLeftoverBudgetSec=60s\n"
            + "[Endpoint]\nName=auth\nURL=\(server.endSessionURL)\nTimeoutSec=30s\n"
        let fixture = try CoordinatorFixture(scratch: scratch, config: text, name: "handover-wind-down")
        defer { fixture.committer.close() }
        let (loop, runs, store) = (fixture.loop, fixture.runs, fixture.committer.store)
        let keys = (0..<20).map { "slow400-handover-\($0)" }
        let sessions = keys.map { key in
            Session(id: .random(), key: SessionKey(key), endpoints: ["auth"], ownerUID: 0, registeredAt: 0)
        }
        for session in sessions { try store.register(session) { XCTAssertNil($0) } }
        XCTAssertTrue(store.flush())
        var reply: ControlResponse?
        runs.endInBackground(sessions, kind: .onDemand) { reply = $0 }
        // The first four calls reach the server and wait there (400 ms each).
        let clock = loop.clock
        let settle = clock.now().advanced(by: .milliseconds(150))
        while clock.now() < settle { try loop.runOnce(maximumWait: .milliseconds(10)) }

        var handedOver = false
        let began = clock.now()
        runs.windDownForHandOver(within: .seconds(2)) {
            runs.stopForHandOver()
            handedOver = true
        }
        let deadline = began.advanced(by: .seconds(5))
        while !handedOver, clock.now() < deadline { try loop.runOnce(maximumWait: .milliseconds(10)) }
        let took = clock.now().duration(since: began)
        XCTAssertTrue(handedOver)
        XCTAssertLessThan(took, .seconds(2), "waited for the calls under way only: \(took)")
        XCTAssertTrue(store.flush())

        var called = 0
        for (session, key) in zip(sessions, keys) {
            let calls = try server.calls(for: key)
            called += calls.calls
            if calls.calls > 0 {
                XCTAssertNil(
                    store.session(id: session.id), "called, so ended and recorded: the next process would call it again"
                )
            } else {
                XCTAssertNotNil(store.session(id: session.id), "not called: kept for the next process")
            }
        }
        XCTAssertEqual(called, 4, "the calls under way, and no other started during the wind-down")
        XCTAssertEqual(reply?.code, .stopping, "the end request is told the daemon is restarting")
    }
}
