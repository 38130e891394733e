import Foundation
import Glibc
import XCTest

@testable import Basics
@testable import Control

/// The real binary's client verbs against a real `ControlServer` run by the test.
final class ControlVerbTests: XCTestCase {
    private var scratch: ScratchDirectory!
    private var loopThread: LoopThread!
    private var handler: RecordingHandler!
    private var server: ControlServer!
    private var socketPath: String { scratch.path + "/control.sock" }

    override func setUpWithError() throws {
        scratch = try ScratchDirectory("verbs")
        let thread = try LoopThread()
        handler = RecordingHandler(loop: thread.loop)
        server = try ControlServer(socketPath: socketPath, loop: thread.loop, handler: handler)
        loopThread = thread
        thread.start()
    }

    override func tearDown() {
        loopThread?.stop()
        server?.close()
        server = nil
        handler = nil
        loopThread = nil
        scratch = nil
    }

    private func cli(_ arguments: [String], stdin: String? = "") throws -> (status: Int32, out: String, err: String) {
        try BuiltBinary.run(arguments + ["--socket", socketPath], stdin: stdin)
    }

    func testRegisterReadsTheKeyFromStdinAndPrintsTheID() throws {
        let result = try cli(
            ["register", "--endpoint", "auth", "--endpoint", "billing", "--label", "web"], stdin: "k3y-s3cret\n")
        XCTAssertEqual(result.status, 0, result.err)
        XCTAssertEqual(result.out, "0000000000000001\n")
        XCTAssertFalse(result.err.contains("k3y-s3cret"))
        guard case .register(let key, let endpoints, let label) = try XCTUnwrap(handler.received.first).request else {
            return XCTFail("not a register")
        }
        XCTAssertEqual(key.exposedSecret, "k3y-s3cret", "exactly one trailing newline stripped")
        XCTAssertEqual(endpoints, ["auth", "billing"])
        XCTAssertEqual(label, "web")
    }

    func testRegisterRefusesBadKeysWithUsageStatus() throws {
        for (stdin, complaint) in [
            ("", "no session key"), ("\n", "no session key"), ("a\nb\n", "more than one line"),
            (String(repeating: "k", count: 4097), "longer than 4096 bytes"),
        ] {
            let result = try cli(["register", "--endpoint", "auth"], stdin: stdin)
            XCTAssertEqual(result.status, 2, "\(stdin.prefix(10)): \(result.err)")
            XCTAssertTrue(result.err.contains(complaint), result.err)
        }
        let noEndpoint = try cli(["register"], stdin: "k\n")
        XCTAssertEqual(noEndpoint.status, 2)
        XCTAssertTrue(noEndpoint.err.contains("--endpoint"), noEndpoint.err)
        XCTAssertTrue(handler.received.isEmpty)
        let exact = try cli(["register", "--endpoint", "auth"], stdin: String(repeating: "k", count: 4096) + "\n")
        XCTAssertEqual(exact.status, 0, exact.err)
    }

    func testListStatusEndAndUnregister() throws {
        let list = try cli(["list"])
        XCTAssertEqual(list.status, 0, list.err)
        XCTAssertEqual(list.out, "No sessions registered.\n")
        XCTAssertEqual(try cli(["list", "--json"]).out, "[]\n")
        let status = try cli(["status", "--json"])
        XCTAssertEqual(status.status, 0, status.err)
        XCTAssertEqual(status.out, "{\"sessions\":3,\"state\":\"running\"}\n")
        XCTAssertEqual(try cli(["status"]).out, "state:     running\nsessions:  4\n")
        let end = try cli(["end", "--all"])
        XCTAssertEqual(end.status, 0, end.err)
        XCTAssertEqual(end.out, "No sessions to end.\n\nended:  0\n")
        XCTAssertEqual(try cli(["unregister", "0123456789abcdef"]).status, 0)
        XCTAssertEqual(try cli(["end"]).status, 2)
        XCTAssertEqual(try cli(["end", "x", "--all"]).status, 2)
        XCTAssertEqual(try cli(["unregister"]).status, 2)
    }

    func testListShowsATableWithoutKeys() throws {
        let now = wallClockMicroseconds()
        handler.listed = [
            ControlSessionInfo(
                id: "0123456789abcdef", label: "web app", endpoints: ["auth", "billing"], ownerUID: 0,
                registeredAt: now - 125_000_000, ageSeconds: 125, attempts: 0, lastOutcome: nil),
            ControlSessionInfo(
                id: "fedcba9876543210", label: nil, endpoints: ["auth"], ownerUID: 4_000_000_000,
                registeredAt: now - 7_000_000, ageSeconds: 7, attempts: 2, lastOutcome: "failed"),
        ]
        let result = try cli(["list"])
        XCTAssertEqual(result.status, 0, result.err)
        XCTAssertEqual(
            result.out,
            """
            ID                LABEL    ENDPOINTS     OWNER       REGISTERED  ATTEMPTS  LAST OUTCOME
            0123456789abcdef  web app  auth,billing  root        2 min ago   0         -
            fedcba9876543210  -        auth          4000000000  7 s ago     2         failed

            2 sessions.

            """)
        let json = try cli(["list", "--json"])
        let items = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [[String: Any]])
        XCTAssertEqual(items.count, 2)
        XCTAssertEqual(items[1]["last_outcome"] as? String, "failed")
    }

    /// `list` names an owner whose password entry is longer than any first guess at its size:
    /// `getpwuid_r` says ERANGE and the buffer grows, and the name is read while that buffer
    /// lives (it was once a fixed 4 KiB buffer read after the call, and root was listed as `0`).
    /// Root's entry gets a 16 KiB comment in a private mount namespace of the CLI's own.
    func testAnOwnerWhosePasswordEntryIsLongerThanAnyFirstBufferIsListedByName() throws {
        guard getuid() == 0 else { throw TestSetupError("needs root: unshare --mount and a bind mount") }
        let comment = String(repeating: "a long comment ", count: 1100)
        let entries = try String(contentsOfFile: "/etc/passwd", encoding: .utf8).split(separator: "\n").map {
            line -> String in
            var fields = line.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 7, fields[2] == "0" else { return String(line) }
            fields[4] = comment
            return fields.joined(separator: ":")
        }
        XCTAssertTrue(entries.contains { $0.contains(comment) }, "no uid 0 in /etc/passwd")
        let passwd = try scratch.write("passwd", entries.joined(separator: "\n") + "\n")
        handler.listed = [
            ControlSessionInfo(
                id: "0123456789abcdef", label: nil, endpoints: ["auth"], ownerUID: 0,
                registeredAt: wallClockMicroseconds(), ageSeconds: 1, attempts: 0, lastOutcome: nil)
        ]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        process.arguments = [
            "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
            #"mount --bind "$0" /etc/passwd && exec "$@""#, passwd, BuiltBinary.path, "list", "--socket", socketPath,
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, text)
        let row = try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix("0123456789abcdef") }, text)
        XCTAssertEqual(row.split(separator: " ", omittingEmptySubsequences: true).dropFirst(3).first, "root", text)
    }

    /// The Python client of docs/control-protocol.md, as printed there, against the real server.
    func testTheDocumentedPythonClientWorks() throws {
        guard
            let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
                ?? ProcessInfo.processInfo.environment["PATH"]?.split(separator: ":").map({ $0 + "/python3" })
                .first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else { throw TestSetupError("no python3") }
        let doc = try String(contentsOfFile: Self.repositoryRoot + "/docs/control-protocol.md", encoding: .utf8)
        let start = try XCTUnwrap(doc.range(of: "```python\n"))
        let end = try XCTUnwrap(doc.range(of: "```", range: start.upperBound..<doc.endIndex))
        let snippet = String(doc[start.upperBound..<end.lowerBound])
            .replacingOccurrences(of: "/run/session-cleanup/control.sock", with: socketPath)
        let script = "import sys\nkey = sys.stdin.readline().rstrip('\\n')\n" + snippet + "print(session_id)\n"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", script]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(Data("py-k3y\n".utf8))
        try input.fileHandleForWriting.close()
        let out = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertEqual(out, "0000000000000001\n")
        guard case .register(let key, _, let label) = try XCTUnwrap(handler.received.first).request else {
            return XCTFail("not a register")
        }
        XCTAssertEqual(key.exposedSecret, "py-k3y")
        XCTAssertEqual(label, "web")
    }

    private static var repositoryRoot: String {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" && !FileManager.default.fileExists(atPath: url.path + "/Package.swift") {
            url.deleteLastPathComponent()
        }
        return url.path
    }

    func testADaemonsNoIsExitStatusOneWithItsMessage() throws {
        let result = try cli(["unregister", "missing-id"])
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(result.err, "session-cleanup unregister: no session missing-id [not-found]\n")
    }

    func testAnUnreachableDaemonIsExitStatusOneAndSaysWhere() throws {
        let path = scratch.path + "/nobody.sock"
        let result = try BuiltBinary.run(["status", "--socket", path])
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(
            result.err,
            "session-cleanup status: cannot reach the daemon at \(path): cannot connect to \(path): "
                + "No such file or directory (is the daemon running?)\n")
        let fromEnvironment = try BuiltBinary.run(["list"], environment: ["SESSION_CLEANUP_SOCKET": path])
        XCTAssertTrue(fromEnvironment.err.contains(path), fromEnvironment.err)
    }

    // MARK: Human output, plurals, filters, completion

    func testStatusShowsHumanUnitsAndJSONKeepsExactNumbers() throws {
        let now = wallClockMicroseconds()
        handler.cannedStatus = [
            "state": "running", "sessions": 1, "budget_usec": 25_000_000, "uptime_usec": 3_723_000_000,
            "endpoints": ["auth", "billing"],
            "last_stop_run": [
                "finished_at_usec": .integer(Int64(now - 180_000_000)), "duration_usec": 1_234_567,
                "sessions_ended": 1,
            ],
        ]
        let human = try cli(["status"])
        XCTAssertEqual(human.status, 0, human.err)
        let lines = human.out.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "state:      running")
        XCTAssertTrue(lines.contains("budget:     25 s"), human.out)
        XCTAssertTrue(lines.contains("uptime:     1 h 2 min"), human.out)
        XCTAssertTrue(lines.contains("endpoints:  auth, billing"), human.out)
        XCTAssertTrue(lines.contains("  duration:        1.2 s"), human.out)
        let finished = try XCTUnwrap(lines.first { $0.hasPrefix("  finished at:") })
        XCTAssertTrue(finished.hasSuffix("(3 min ago)"), finished)
        XCTAssertTrue(finished.contains(HumanText.localTime(epochMicroseconds: now - 180_000_000)), finished)
        XCTAssertFalse(human.out.contains("usec"), "no raw unit names for people: \(human.out)")
        let json = try cli(["status", "--json"])
        XCTAssertTrue(json.out.contains("\"budget_usec\":25000000"), json.out)
        XCTAssertTrue(json.out.contains("\"finished_at_usec\":\(now - 180_000_000)"), json.out)
    }

    func testEndSaysWhatBecameOfEachCallWithThePluralRight() throws {
        handler.cannedReport = [
            "kind": "on-demand", "sessions_total": 3, "sessions_ended": 2, "sessions_left": 1,
            "duration_usec": 1_240_000, "calls": ["ended": 2, "failed": 1],
            "results": [
                ["id": "0123456789abcdef", "endpoint": "auth", "outcome": "ended", "attempts": 1],
                ["id": "1123456789abcdef", "endpoint": "auth", "outcome": "ended", "attempts": 1],
                [
                    "id": "2123456789abcdef", "endpoint": "auth", "outcome": "failed", "attempts": 4,
                    "error": "connection refused",
                ],
            ],
        ]
        let end = try cli(["end", "--all"])
        XCTAssertEqual(end.status, 75, "some kept: exit 75")
        XCTAssertEqual(
            end.out,
            """
            Ended 2 of 3 sessions in 1.2 s; 1 session kept, to be ended at the next stop.
            Calls: 2 ended, 1 failed.

            SESSION           ENDPOINT  OUTCOME  ATTEMPTS  DETAIL
            0123456789abcdef  auth      ended    1
            1123456789abcdef  auth      ended    1
            2123456789abcdef  auth      failed   4         connection refused

            """)
        handler.cannedReport = [
            "sessions_total": 1, "sessions_ended": 1, "sessions_left": 0, "duration_usec": 40_000,
            "calls": ["ended": 1],
        ]
        let one = try cli(["end", "0123456789abcdef"])
        XCTAssertEqual(one.status, 0)
        XCTAssertEqual(one.out, "Ended 1 of 1 session in 40 ms.\nCalls: 1 ended.\n")
        XCTAssertTrue(try cli(["end", "--all", "--json"]).out.contains("\"duration_usec\":40000"))
    }

    func testListFiltersByOutcomeAndEndpointAndMarksUnconfiguredEndpoints() throws {
        let now = wallClockMicroseconds()
        handler.listed = [
            ControlSessionInfo(
                id: "0123456789abcdef", label: nil, endpoints: ["auth", "gone"], ownerUID: 0,
                registeredAt: now - 3_600_000_000, ageSeconds: 3_600, attempts: 4, lastOutcome: "failed",
                unconfiguredEndpoints: ["gone"]),
            ControlSessionInfo(
                id: "1123456789abcdef", label: nil, endpoints: ["billing"], ownerUID: 0,
                registeredAt: now, ageSeconds: 0, attempts: 0, lastOutcome: nil),
        ]
        let failed = try cli(["list", "--outcome", "failed"])
        XCTAssertEqual(failed.status, 0, failed.err)
        XCTAssertTrue(failed.out.contains("0123456789abcdef  -      auth,gone*"), failed.out)
        XCTAssertFalse(failed.out.contains("1123456789abcdef"), failed.out)
        XCTAssertTrue(failed.out.contains("\n1 of 2 sessions match.\n"), failed.out)
        XCTAssertTrue(failed.out.contains("* not configured"), failed.out)
        let never = try cli(["list", "--outcome", "none", "--endpoint", "billing"])
        XCTAssertTrue(never.out.contains("1123456789abcdef"), never.out)
        XCTAssertTrue(never.out.contains("just now"), never.out)
        XCTAssertFalse(never.out.contains("* not configured"), never.out)
        let none = try cli(["list", "--endpoint", "nowhere"])
        XCTAssertEqual(none.out, "No sessions match (2 sessions in all).\n")
        let json = try cli(["list", "--endpoint=auth", "--json"])
        let items = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [[String: Any]])
        XCTAssertEqual(items.map { $0["id"] as? String }, ["0123456789abcdef"])
        let bad = try cli(["list", "--outcome", "sideways"])
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.err.contains("--outcome takes one of ended, rejected"), bad.err)
        handler.listed = Array(handler.listed.prefix(1))
        XCTAssertTrue(
            try cli(["list"]).out.hasSuffix(
                "\n1 session.\n* not configured (any more): calls to it fail until an [Endpoint] with that Name= is back.\n"
            ))
    }

    func testBashCompletionOffersSessionIDsAndEndpointsFromTheDaemon() throws {
        handler.listed = [
            ControlSessionInfo(
                id: "0123456789abcdef", label: nil, endpoints: ["auth"], ownerUID: 0, registeredAt: 0, ageSeconds: 0,
                attempts: 0, lastOutcome: nil)
        ]
        handler.cannedStatus = ["state": "running", "endpoints": ["auth", "billing"]]
        XCTAssertEqual(try complete(["end", ""]), ["0123456789abcdef"])
        XCTAssertEqual(try complete(["unregister", "01"]), ["0123456789abcdef"])
        XCTAssertEqual(try complete(["register", "--endpoint", ""]), ["auth", "billing"])
        XCTAssertEqual(try complete(["list", "--endpoint", "b"]), ["billing"])
    }

    /// What the shipped bash completion offers for `words` (the last is the word being typed),
    /// with `--socket` pointing at the test's server.
    private func complete(_ words: [String]) throws -> [String] {
        var line = ["session-cleanup", words[0], "--socket", socketPath] + words.dropFirst()
        line[0] = BuiltBinary.path
        let script = CommandLineHelpTests.repositoryRoot + "/completion/session-cleanup.bash"
        let quoted = line.map { "'\($0)'" }.joined(separator: " ")
        let result = try CommandLineHelpTests.bash(
            "source '\(script)'; COMP_WORDS=(\(quoted)); COMP_CWORD=\(line.count - 1); _session_cleanup; "
                + "printf '%s\\n' \"${COMPREPLY[@]}\"")
        return result.split(separator: "\n").map(String.init)
    }
}
