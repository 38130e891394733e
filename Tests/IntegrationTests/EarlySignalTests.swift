import Foundation
import Glibc
import XCTest

/// Signals at the first instant after exec: the `daemon` verb blocks SIGTERM, SIGINT, SIGHUP and SIGUSR1
/// from the executable's `.preinit_array` (CEarlySignals), before any library initializer or
/// Swift code runs, so a SIGTERM from then on becomes a stop run. The other verbs keep the
/// default dispositions (Ctrl-C ends a `register` waiting for its key).
final class EarlySignalTests: XCTestCase {
    private func blockedSignals(of pid: Int32) -> UInt64? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigBlk:") })
        else { return nil }
        return UInt64(line.dropFirst("SigBlk:".count).trimmingCharacters(in: .whitespaces), radix: 16)
    }

    private static let terminateInterruptHangUp: UInt64 =
        1 << (UInt64(SIGTERM) - 1) | 1 << (UInt64(SIGINT) - 1)
        | 1 << (UInt64(SIGHUP) - 1) | 1 << (UInt64(SIGUSR1) - 1)

    func testASigtermTheMomentTheSignalsAreBlockedIsAStopRunNeverADeath() throws {
        for round in 0..<10 {
            let daemon = try DaemonProcess()
            let deadline = Date().addingTimeInterval(5)
            var blocked: UInt64 = 0
            while blocked & Self.terminateInterruptHangUp != Self.terminateInterruptHangUp, Date() < deadline {
                blocked = blockedSignals(of: daemon.pid) ?? 0
            }
            XCTAssertEqual(blocked & Self.terminateInterruptHangUp, Self.terminateInterruptHangUp, "round \(round)")
            daemon.signal(SIGTERM)
            XCTAssertEqual(daemon.waitForExit(timeout: 5), 0, "round \(round): \(daemon.stderr)")
            XCTAssertEqual(daemon.process.terminationReason, .exit, "round \(round)")
            XCTAssertTrue(daemon.stderr.contains("SESSION_CLEANUP_EVENT=stopped"), "round \(round): \(daemon.stderr)")
        }
    }

    func testTheExecutableBlocksThemBeforeAnyLibraryInitializer() throws {
        // The entry point is a .preinit_array entry: glibc runs those before the initializers of
        // every shared library and of the executable itself.
        let readelf = Process()
        readelf.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        readelf.arguments = ["readelf", "--dynamic", BuiltBinary.path]
        let output = Pipe()
        readelf.standardOutput = output
        try readelf.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        readelf.waitUntilExit()
        XCTAssertTrue(text.contains("(PREINIT_ARRAY)"), text)
    }

    func testOtherVerbsKeepTheDefaultDispositions() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: BuiltBinary.path)
        process.arguments = ["register", "--endpoint", "auth", "--socket", "/nonexistent/control.sock"]
        let input = Pipe()
        process.standardInput = input  // never written: it waits for the key
        process.standardError = FileHandle.nullDevice
        try process.run()
        usleep(200_000)
        XCTAssertEqual((blockedSignals(of: process.processIdentifier) ?? 1) & Self.terminateInterruptHangUp, 0)
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .uncaughtSignal)
        XCTAssertEqual(process.terminationStatus, SIGTERM)
    }

    /// SIGUSR1 (the units' RestartKillSignal=) from something that is no service manager: no
    /// next process would take the sessions over, so it is a stop run that says why, not a death.
    func testSigusr1OutsideAServiceManagerIsAStopRunThatSaysWhy() throws {
        let daemon = try DaemonProcess()
        XCTAssertNotNil(daemon.waitUntilReady(), "not ready: \(daemon.stderr)")
        daemon.signal(SIGUSR1)
        XCTAssertEqual(daemon.waitForExit(timeout: 5), 0, daemon.stderr)
        XCTAssertEqual(daemon.process.terminationReason, .exit)
        XCTAssertTrue(daemon.stderr.contains("SIGUSR1 but not started by a service manager"), daemon.stderr)
    }
}
