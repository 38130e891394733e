import Foundation
import Glibc
import XCTest

@testable import Basics

/// State changes reach systemd even when PID 1's notify queue is full for a while: each test
/// fills the queue, makes the daemon change state, waits 100 ms (PID 1 busy), then reads.
final class NotifyDeliveryTests: XCTestCase {
    /// Fills the receiver's queue (net.unix.max_dgram_qlen datagrams) from a socket of the test's
    /// own; returns how many it took.
    private func fill(_ path: String) throws -> Int {
        guard let address = UnixSocketAddress(path: path) else { throw POSIXError(.ENAMETOOLONG) }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0, address.connect(fd) == 0 else { throw TestSetupError("filler socket: errno \(errno)") }
        defer { close(fd) }
        var sent = 0
        while sent < 100_000, Array("FILLER".utf8).withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) >= 0 {
            sent += 1
        }
        guard errno == EAGAIN else { throw TestSetupError("filling the notify socket: errno \(errno)") }
        return sent
    }

    /// Sends `signal` with the queue full, reads after 100 ms; returns what arrived (fillers left out).
    private func messagesAfter(_ signal: Int32, to daemon: DaemonProcess) throws -> [String] {
        XCTAssertGreaterThan(try fill(daemon.notify.path), 0)
        daemon.signal(signal)
        usleep(100_000)
        return daemon.notify.drain(for: 1).filter { $0 != "FILLER" }
    }

    func testStoppingAndTheTimeoutExtensionArriveAfterTheQueueDrains() throws {
        let daemon = try DaemonProcess()
        XCTAssertNotNil(daemon.waitUntilReady())
        _ = daemon.notify.drain(for: 0.1)
        let messages = try messagesAfter(SIGTERM, to: daemon)
        let stopping = try XCTUnwrap(messages.first { $0.contains("STOPPING=1") }, "dropped: \(messages)")
        XCTAssertTrue(stopping.contains("EXTEND_TIMEOUT_USEC="), stopping)
        XCTAssertEqual(daemon.waitForExit(timeout: 5), 0)
        XCTAssertFalse(daemon.stderr.contains("notify-failed"), daemon.stderr)
    }

    func testReloadingAndReadyArriveAfterTheQueueDrains() throws {
        let daemon = try DaemonProcess(config: "[Stop]\nBudgetSec=5s\n")
        XCTAssertNotNil(daemon.waitUntilReady())
        _ = daemon.notify.drain(for: 0.1)
        let messages = try messagesAfter(SIGHUP, to: daemon)
        let reloading = try XCTUnwrap(messages.firstIndex { $0.hasPrefix("RELOADING=1") }, "dropped: \(messages)")
        let ready = try XCTUnwrap(messages.lastIndex { $0.hasPrefix("READY=1") }, "dropped: \(messages)")
        XCTAssertLessThan(reloading, ready, "in order: \(messages)")
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 5), 0)
    }
}
