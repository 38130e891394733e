import XCTest

@testable import Daemon

/// The sleep lock's decisions: when it is taken, when a sleep run begins and within what budget,
/// when the descriptor is released, and what happens at resume, reload and stop.
final class SleepLockStateTests: XCTestCase {
    private func held(fd: Int32 = 7, delayMax: Duration? = nil) -> SleepLockState {
        var state = SleepLockState()
        state.delayMax = delayMax
        XCTAssertEqual(state.setEnabled(true), [.take])
        XCTAssertEqual(state.lockTaken(fd: fd), [])
        XCTAssertEqual(state.phase, .held(fd: fd))
        return state
    }

    func testOffByDefaultAndEnablingTakesTheLockOnce() {
        var state = SleepLockState()
        XCTAssertEqual(state.phase, .off)
        XCTAssertEqual(state.setEnabled(false), [])
        XCTAssertEqual(state.setEnabled(true), [.take])
        XCTAssertEqual(state.phase, .taking)
        XCTAssertEqual(state.setEnabled(true), [], "a reload that keeps the key asks for no second lock")
    }

    func testBudgetIsLogindsDelayLessAMargin() {
        XCTAssertEqual(SleepLockState.budget(delayMax: nil), .seconds(4), "logind's default 5 s less 1 s")
        XCTAssertEqual(SleepLockState.budget(delayMax: .seconds(5)), .seconds(4))
        XCTAssertEqual(SleepLockState.budget(delayMax: .seconds(30)), .seconds(29))
        XCTAssertEqual(SleepLockState.budget(delayMax: .seconds(2)), .milliseconds(1500), "a quarter of a short delay")
        XCTAssertEqual(SleepLockState.budget(delayMax: .zero), .zero)
    }

    func testSleepRunsWithTheDelayBudgetThenReleasesTheLock() {
        var state = held(fd: 9, delayMax: .seconds(10))
        XCTAssertEqual(state.prepareForSleep(true), [.beginSleepRun(budget: .seconds(9))])
        XCTAssertEqual(state.phase, .ending(fd: 9))
        XCTAssertEqual(state.prepareForSleep(true), [], "a repeated signal begins no second run")
        XCTAssertEqual(state.sleepRunFinished(), [.release(fd: 9)])
        XCTAssertEqual(state.phase, .asleep)
        XCTAssertEqual(state.sleepRunFinished(), [], "released once")
    }

    func testResumeTakesTheLockAgainAndRetriesLeftovers() {
        var state = held()
        _ = state.prepareForSleep(true)
        _ = state.sleepRunFinished()
        XCTAssertEqual(state.prepareForSleep(false), [.take, .retryLeftovers])
        XCTAssertEqual(state.phase, .taking)
        XCTAssertEqual(state.lockTaken(fd: 11), [])
        XCTAssertEqual(state.phase, .held(fd: 11))
    }

    func testResumeBeforeTheRunFinishedKeepsTheLock() {
        var state = held(fd: 5)
        _ = state.prepareForSleep(true)
        XCTAssertEqual(state.prepareForSleep(false), [.retryLeftovers], "awake again: the lock is still wanted")
        XCTAssertEqual(state.phase, .held(fd: 5))
        XCTAssertEqual(state.sleepRunFinished(), [], "the run's end does not release the awake lock")
    }

    func testNoLockMeansNoSleepRun() {
        var state = SleepLockState()
        XCTAssertEqual(state.prepareForSleep(true), [])
        _ = state.setEnabled(true)
        XCTAssertEqual(state.prepareForSleep(true), [], "Inhibit not answered yet: nothing delays the sleep")
        XCTAssertEqual(state.lockUnavailable(), [.disconnect])
        XCTAssertEqual(state.phase, .unavailable)
        XCTAssertEqual(state.prepareForSleep(false), [.take, .retryLeftovers], "tried again at resume")
    }

    func testALockGrantedAfterItWasDroppedIsReleasedAtOnce() {
        var state = SleepLockState()
        _ = state.setEnabled(true)
        XCTAssertEqual(state.setEnabled(false), [.disconnect])
        XCTAssertEqual(state.lockTaken(fd: 4), [.release(fd: 4)])
        XCTAssertEqual(state.phase, .off)
    }

    func testReloadToNoAndStoppingReleaseTheLock() {
        var state = held(fd: 6)
        XCTAssertEqual(state.setEnabled(false), [.release(fd: 6), .disconnect])
        XCTAssertEqual(state.phase, .off)
        var sleeping = held(fd: 8)
        _ = sleeping.prepareForSleep(true)
        XCTAssertEqual(sleeping.daemonStopping(), [.release(fd: 8), .disconnect])
        XCTAssertEqual(sleeping.sleepRunFinished(), [], "the abandoned sleep run releases nothing twice")
    }

    func testALostConnectionReleasesTheLockItCanNoLongerUse() {
        var state = held(fd: 3)
        XCTAssertEqual(state.lockUnavailable(), [.release(fd: 3), .disconnect])
        XCTAssertEqual(state.phase, .unavailable)
        XCTAssertEqual(state.setEnabled(true), [.take], "a reload tries again")
    }
}
