import XCTest

@testable import Systemd

/// How a client reads systemd's answer: when connecting reaches the daemon, and when it would
/// start it (socket activation).
final class ServiceActivityTests: XCTestCase {
    func testAServiceRunsWhileItStartsRunsReloadsOrStops() {
        for state in ["active", "activating", "reloading", "deactivating", "refreshing"] {
            XCTAssertTrue(ServiceActivity(serviceState: state, socketState: "active").serviceRuns, state)
        }
        for state in ["inactive", "failed", "maintenance", ""] {
            XCTAssertFalse(ServiceActivity(serviceState: state, socketState: "active").serviceRuns, state)
        }
    }

    func testOnlyAListeningSocketUnitActivates() {
        XCTAssertTrue(ServiceActivity(serviceState: "inactive", socketState: "active").socketActivates)
        for state in ["inactive", "failed", "deactivating", ""] {
            XCTAssertFalse(ServiceActivity(serviceState: "inactive", socketState: state).socketActivates, state)
        }
    }
}
