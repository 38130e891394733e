import XCTest

@testable import Sessions

/// Whether the store may commit, and when its rewrite from memory runs.
final class StoreHealthTests: XCTestCase {
    private let fault = StoreError(kind: .syncFailed, message: "fdatasync: Input/output error")

    private func isStart(_ step: StoreHealth.RewriteStep) -> Bool {
        if case .start = step { return true }
        return false
    }

    private func waitReason(_ step: StoreHealth.RewriteStep) -> String? {
        if case .wait(let reason) = step { return reason.message }
        return nil
    }

    func testAHealthyStoreHasNothingToRewrite() {
        var health = StoreHealth()
        XCTAssertTrue(health.isHealthy)
        XCTAssertFalse(health.isRewriting)
        guard case .none = health.nextRewrite(now: 0) else { return XCTFail("no rewrite when healthy") }
    }

    func testALostWriteStartsOneRewriteAtOnce() {
        var health = StoreHealth()
        health.lost(fault)
        XCTAssertFalse(health.isHealthy)
        XCTAssertFalse(health.isRewriting)
        XCTAssertTrue(isStart(health.nextRewrite(now: 0)))
        XCTAssertTrue(health.isRewriting)
        guard case .none = health.nextRewrite(now: .max - 1) else { return XCTFail("one rewrite at a time") }
    }

    func testAFailedRewriteWaitsADelayDoubledFromOneUpToThirtySeconds() {
        var health = StoreHealth()
        health.lost(fault)
        var now: UInt64 = 5_000_000
        var delays: [UInt64] = []
        XCTAssertTrue(isStart(health.nextRewrite(now: now)))
        for _ in 0..<7 {
            health.rewriteFailed(fault, now: now)
            XCTAssertFalse(health.isRewriting)
            // Probe in steps of 0.5 s; the probe that says "start" starts the next attempt.
            var delay: UInt64 = 0
            while !isStart(health.nextRewrite(now: now + delay)) { delay += 500_000 }
            delays.append(delay)
            now += delay
        }
        XCTAssertEqual(delays, [1_000_000, 2_000_000, 4_000_000, 8_000_000, 16_000_000, 30_000_000, 30_000_000])
    }

    func testWhileTheDelayRunsClientChangesAreToldWhy() {
        var health = StoreHealth()
        health.lost(fault)
        _ = health.nextRewrite(now: 0)
        health.rewriteFailed(fault, now: 0)
        XCTAssertEqual(waitReason(health.nextRewrite(now: 999_999)), fault.message)
        health.retryNow()
        XCTAssertTrue(isStart(health.nextRewrite(now: 1)), "a flush does not wait out the delay")
        health.retryNow()
        XCTAssertTrue(health.isRewriting, "a running rewrite is left as it is")
    }

    func testASuccessfulRewriteMakesTheStoreHealthyAndSaysWhetherTheDirectoryWasMadeAgain() {
        var health = StoreHealth()
        health.lost(fault)
        _ = health.nextRewrite(now: 0)
        health.rewroteSnapshot(directoryRecreated: true)
        XCTAssertTrue(health.recovered())
        XCTAssertTrue(health.isHealthy)
        health.lost(fault)
        _ = health.nextRewrite(now: 0)
        health.rewroteSnapshot(directoryRecreated: false)
        XCTAssertFalse(health.recovered())
    }
}
