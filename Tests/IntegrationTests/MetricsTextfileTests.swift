import Foundation
import Glibc
import XCTest

@testable import Metrics

/// node_exporter's textfile: replaced whole, readable by another user, and kept up to date by
/// the real daemon.
final class MetricsTextfileTests: XCTestCase {
    func testTheFileIsReplacedWholeWithMode0644WhateverTheUmaskAndNoTemporaryIsLeft() throws {
        let scratch = try ScratchDirectory("metrics")
        let file = MetricsTextfile(directory: scratch.path)
        let old = umask(0o077)
        defer { umask(old) }
        try file.replace(with: "a 1\n")
        try file.replace(with: "b 2\n")
        XCTAssertEqual(try String(contentsOfFile: file.path, encoding: .utf8), "b 2\n")
        var status = stat()
        XCTAssertEqual(stat(file.path, &status), 0)
        XCTAssertEqual(status.st_mode & 0o777, 0o644, "node_exporter's user reads it")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: scratch.path), ["session_cleanup.prom"])
    }

    func testAMissingDirectoryIsAnErrorNamingThePath() throws {
        let scratch = try ScratchDirectory("metrics")
        let file = MetricsTextfile(directory: scratch.path + "/absent")
        XCTAssertThrowsError(try file.replace(with: "x 1\n")) { error in
            XCTAssertTrue("\(error)".contains(scratch.path + "/absent/"), "\(error)")
        }
    }

    func testTheDaemonWritesSessionsAtStartAfterRegistrationsAndTheStopRunAtItsEnd() throws {
        let scratch = try ScratchDirectory("metrics-daemon")
        let textfiles = scratch.path + "/textfiles"
        try FileManager.default.createDirectory(atPath: textfiles, withIntermediateDirectories: true)
        let config =
            "[Stop]\nMaxAttempts=1\n[Metrics]\nTextfileDirectory=\(textfiles)\n"
            + "[Endpoint]\nName=auth\nURL=http://127.0.0.1:9/user/{session}/endsession\n"
        let daemon = try DaemonProcess(config: config, scratch: scratch)
        XCTAssertNotNil(daemon.waitUntilReady())
        let path = textfiles + "/session_cleanup.prom"
        func contents() -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        for label in ["one", "two"] {
            let registered = try BuiltBinary.run(
                ["register", "--endpoint", "auth", "--label", label, "--socket", daemon.socketPath],
                stdin: "secret-key-\(label)\n")
            XCTAssertEqual(registered.status, 0, registered.err)
        }
        // Coalesced: within a second or so of the last change.
        let deadline = Date().addingTimeInterval(5)
        while !contents().contains(#"session_cleanup_sessions{endpoint="auth"} 2"#) && Date() < deadline {
            usleep(50_000)
        }
        XCTAssertTrue(contents().contains(#"session_cleanup_sessions{endpoint="auth"} 2"#), contents())
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 30), 75, daemon.stderr)
        let after = contents()
        XCTAssertTrue(
            after.contains(#"session_cleanup_last_run_calls{kind="stop",endpoint="auth",outcome="failed"} 2"#), after)
        XCTAssertTrue(after.contains(#"session_cleanup_last_run_budget_seconds{kind="stop"} 25"#), after)
        XCTAssertTrue(after.contains(#"session_cleanup_last_run_journal_complete{kind="stop"} 1"#), after)
        for secret in ["secret-key", "one", "two", "/user/", "endsession", "127.0.0.1"] {
            XCTAssertFalse(after.contains(secret), "\(secret) in \(after)")
        }
    }
}
