import Foundation
import XCTest

/// systemd forgets an `EXTEND_TIMEOUT_USEC=` across `daemon-reload` and `daemon-reexec`, and
/// extends from the moment it reads one (sd_notify(3)): the daemon renews it while the stop
/// lasts, each time for what is left until the budget's end plus the exit grace.
final class StopDeadlineTests: XCTestCase {
    func testTheTimeoutExtensionIsRenewedTowardTheStopsEndWhileTheRunLasts() throws {
        let server = try EndSessionServer()
        let budgetSeconds = 4
        let config =
            "[Stop]\nBudgetSec=\(budgetSeconds)s\n[Endpoint]\nName=auth\nURL=\(server.endSessionURL)\n"
            + "TimeoutSec=\(budgetSeconds)s\n"
        let daemon = try DaemonProcess(config: config)
        XCTAssertNotNil(daemon.waitUntilReady(), "not ready: \(daemon.stderr)")
        let registered = try BuiltBinary.run(
            ["register", "--socket", daemon.socketPath, "--endpoint", "auth"], stdin: "hang-deadline\n")
        XCTAssertEqual(registered.status, 0, registered.err)
        _ = daemon.notify.drain(for: 0.1)
        daemon.signal(SIGTERM)
        let messages = daemon.notify.drain(for: 1.5)
        let extensions = messages.flatMap { $0.split(separator: "\n") }.compactMap { line -> Int? in
            guard line.hasPrefix("EXTEND_TIMEOUT_USEC=") else { return nil }
            return Int(line.dropFirst("EXTEND_TIMEOUT_USEC=".count))
        }
        // 50 ms apart: about 30 in 1.5 s; 10 leaves room for a slow machine, 1 is the defect.
        XCTAssertGreaterThanOrEqual(extensions.count, 10, "renewed: \(extensions)")
        let end = (budgetSeconds + 5) * 1_000_000
        XCTAssertLessThanOrEqual(extensions.max() ?? .max, end, "never past the budget plus the grace: \(extensions)")
        XCTAssertLessThan(extensions.last ?? .max, end - 1_000_000, "toward a fixed end, not from now: \(extensions)")
        XCTAssertEqual(extensions, extensions.sorted(by: >), "each for what is left")
        XCTAssertEqual(daemon.waitForExit(timeout: Double(budgetSeconds + 5)), 75, daemon.stderr)
    }
}
