import Foundation
import XCTest

@testable import Daemon

/// Before a restart hand-over the daemon runs `check-config` of the binary on disk: a
/// configuration the next process would refuse turns the restart into a stop run.
final class NextStartCheckTests: XCTestCase {
    func testTheBinarysCheckConfigDecidesAndItsMessageIsKept() throws {
        let scratch = try ScratchDirectory("nextstart")
        let good = try scratch.write("good.conf", "[Stop]\nBudgetSec=5s\n")
        XCTAssertEqual(NextStartCheck.run([BuiltBinary.path, "check-config", "--config", good]), .valid)
        let bad = try scratch.write("bad.conf", "[Stop]\nBudgetSec=never\n")
        guard case .invalid(let why) = NextStartCheck.run([BuiltBinary.path, "check-config", "--config", bad]) else {
            return XCTFail("an invalid configuration must be refused")
        }
        XCTAssertTrue(why.contains("bad.conf:2:"), why)
    }

    func testACheckThatCannotTellLetsTheHandOverGoAheadWithinTheBound() {
        let clock = ContinuousClock()
        let start = clock.now
        guard case .unknown(let why) = NextStartCheck.run(["/bin/sleep", "10"]) else {
            return XCTFail("a hanging check is not a verdict")
        }
        XCTAssertTrue(why.contains("longer than"), why)
        XCTAssertLessThan(clock.now - start, .seconds(3))
        guard case .unknown = NextStartCheck.run(["/nonexistent/session-cleanup", "check-config"]) else {
            return XCTFail("a missing binary is not a verdict")
        }
    }
}
