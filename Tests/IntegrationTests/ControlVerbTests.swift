import Foundation
import Glibc
import SessionCleanup
import XCTest

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
        XCTAssertEqual(try cli(["status"]).out, "sessions: 4\nstate: running\n")
        let end = try cli(["end", "--all"])
        XCTAssertEqual(end.status, 0, end.err)
        XCTAssertEqual(end.out, "ended: 0\n")
        XCTAssertEqual(try cli(["unregister", "0123456789abcdef"]).status, 0)
        XCTAssertEqual(try cli(["end"]).status, 2)
        XCTAssertEqual(try cli(["end", "x", "--all"]).status, 2)
        XCTAssertEqual(try cli(["unregister"]).status, 2)
    }

    func testListShowsATableWithoutKeys() throws {
        handler.listed = [
            ControlSessionInfo(
                id: "0123456789abcdef", label: "web app", endpoints: ["auth", "billing"], ownerUID: 0,
                registeredAt: 1_700_000_000_000_000, ageSeconds: 125, attempts: 0, lastOutcome: nil),
            ControlSessionInfo(
                id: "fedcba9876543210", label: nil, endpoints: ["auth"], ownerUID: 4_000_000_000,
                registeredAt: 1_700_000_000_000_000, ageSeconds: 7, attempts: 2, lastOutcome: "failed"),
        ]
        let result = try cli(["list"])
        XCTAssertEqual(result.status, 0, result.err)
        XCTAssertEqual(
            result.out,
            """
            ID                LABEL    ENDPOINTS     OWNER       AGE
            0123456789abcdef  web app  auth,billing  root        2m
            fedcba9876543210  -        auth          4000000000  7s

            """)
        let json = try cli(["list", "--json"])
        let items = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [[String: Any]])
        XCTAssertEqual(items.count, 2)
        XCTAssertEqual(items[1]["last_outcome"] as? String, "failed")
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
        XCTAssertEqual(result.err, "session-cleanup: no session missing-id [not-found]\n")
    }

    func testAnUnreachableDaemonIsExitStatusOneAndSaysWhere() throws {
        let path = scratch.path + "/nobody.sock"
        let result = try BuiltBinary.run(["status", "--socket", path])
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(
            result.err,
            "session-cleanup: cannot connect to \(path): No such file or directory (is the daemon running?)\n")
        let fromEnvironment = try BuiltBinary.run(["list"], environment: ["SESSION_CLEANUP_SOCKET": path])
        XCTAssertTrue(fromEnvironment.err.contains(path), fromEnvironment.err)
    }
}
