import Foundation
import XCTest

@testable import Daemon
@testable import EventLoop
@testable import Runs
@testable import Sessions
@testable import TestSupport

/// While stopping, the store commits a stop run's results at most every
/// `StoreCommitter.stopRunCommitDelay`, not once per loop turn, and the end of the stop still
/// makes every one of them durable.
final class StopRunCommitPaceTests: XCTestCase {
    func testAStopRunsResultsAreCommittedTogetherAndAllOfThemAreDurableAtTheEnd() throws {
        let scratch = try ScratchDirectory("commit-pace")
        let directory = scratch.path + "/state"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let loop = try EventLoop()
        let committer = try StoreCommitter(directory: directory, loop: loop, journal: MemoryJournal())
        let sessions = (0..<120).map { i in
            Session(id: .random(), key: SessionKey("key-\(i)"), endpoints: ["auth"], ownerUID: 0, registeredAt: 0)
        }
        for session in sessions {
            try committer.register(session, reply: { _ in }, response: .success)
        }
        try committer.commitNow()
        committer.beginStop()
        let commitsBefore = committer.store.statistics.commits

        // One ended session per loop turn, a millisecond apart: a commit per turn without the pace.
        let began = loop.clock.now()
        for session in sessions {
            committer.apply(
                CleanupRun.SessionResult(
                    id: session.id, ended: true, endedEndpoints: ["auth"], outcome: .ended(status: 200), attempts: 1))
            usleep(1_000)
            try loop.runOnce(maximumWait: .milliseconds(1))
            committer.store.processCompletions()
        }
        let elapsed = loop.clock.now().duration(since: began)
        let commits = committer.store.statistics.commits - commitsBefore
        let allowed = Int(elapsed / StoreCommitter.stopRunCommitDelay) + 2
        XCTAssertGreaterThan(commits, 0, "results were committed while the run went on")
        XCTAssertLessThanOrEqual(commits, allowed, "\(commits) commits in \(elapsed) for \(sessions.count) results")

        let (kept, saved) = committer.settle(timeout: .seconds(10))
        XCTAssertTrue(saved)
        XCTAssertEqual(kept, 0)
        committer.close()
        let reopened = try StoreCommitter(directory: directory, loop: try EventLoop(), journal: MemoryJournal())
        XCTAssertEqual(reopened.store.count, 0, "every ended session's removal is on disk")
        reopened.close()
    }
}
