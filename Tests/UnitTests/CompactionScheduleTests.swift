import XCTest

@testable import Sessions

/// When the store compacts: what the policy asks, one at a time, never while recovering, and
/// none started once stopping.
final class CompactionScheduleTests: XCTestCase {
    private let policy = CompactionPolicy(
        minimumLogBytes: 1_000, snapshotRatio: 2, maximumLogBytes: 100_000, retryDelaySeconds: 10)
    private let bare = CompactionSchedule.emptyLogBytes

    private func due(
        _ schedule: CompactionSchedule, sessions: Int = 5, log: Int, snapshot: Int = 0, healthy: Bool = true,
        now: UInt64 = 0
    ) -> Bool {
        schedule.isDue(sessions: sessions, logBytes: log, snapshotBytes: snapshot, healthy: healthy, now: now)
    }

    func testTheLogIsCompactedWhenThePolicySays() {
        let schedule = CompactionSchedule(policy: policy)
        XCTAssertFalse(due(schedule, log: 999, snapshot: 0), "below the minimum")
        XCTAssertTrue(due(schedule, log: 2_001, snapshot: 1_000), "more than twice the snapshot")
        XCTAssertFalse(due(schedule, log: 2_000, snapshot: 1_000))
        XCTAssertTrue(due(schedule, log: 100_001, snapshot: 90_000), "more than the maximum")
    }

    func testAnEmptyStoreWithMoreThanAHeaderInItsLogIsCompactedAtOnce() {
        let schedule = CompactionSchedule(policy: policy)
        XCTAssertTrue(due(schedule, sessions: 0, log: bare + 1), "the log holds ended sessions' keys")
        XCTAssertFalse(due(schedule, sessions: 0, log: bare))
    }

    func testNoneStartsWhileOneRunsWhileRecoveringOrOnceStopping() {
        var schedule = CompactionSchedule(policy: policy)
        XCTAssertFalse(due(schedule, log: 50_000, healthy: false))
        schedule.started()
        XCTAssertFalse(schedule.isIdle)
        XCTAssertFalse(due(schedule, log: 50_000))
        schedule.finished()
        XCTAssertTrue(due(schedule, log: 50_000))
        schedule.beginShutdown()
        XCTAssertFalse(due(schedule, log: 50_000))
        XCTAssertFalse(due(schedule, sessions: 0, log: 50_000))
    }

    func testAFailedCompactionIsTriedAgainAfterThePolicysDelay() {
        var schedule = CompactionSchedule(policy: policy)
        schedule.started()
        schedule.failed(now: 1_000_000)
        XCTAssertTrue(schedule.isIdle)
        XCTAssertFalse(due(schedule, log: 50_000, now: 10_999_999))
        XCTAssertTrue(due(schedule, log: 50_000, now: 11_000_000))
    }

    func testTheLogIsSwitchedAfterTheSnapshotUnlessRecoveringOrStoppingWithSessionsLeft() {
        var schedule = CompactionSchedule(policy: policy)
        schedule.started()
        XCTAssertTrue(schedule.snapshotWritten(sessions: 5, healthy: true))
        XCTAssertEqual(schedule.phase, .switchingLog)
        schedule.finished()

        schedule.started()
        XCTAssertFalse(schedule.snapshotWritten(sessions: 5, healthy: false), "recovery replaces both files anyway")
        XCTAssertTrue(schedule.isIdle)

        schedule.started()
        schedule.beginShutdown()
        XCTAssertFalse(schedule.snapshotWritten(sessions: 5, healthy: true), "the next open switches logs")
        XCTAssertTrue(schedule.isIdle)
        schedule.started()
        XCTAssertTrue(schedule.snapshotWritten(sessions: 0, healthy: true), "an empty store's keys must go")
    }
}
