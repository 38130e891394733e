import Foundation
import XCTest

/// `session-cleanup report`: the last stop run, after the restart, as each user may see it.
final class ReportVerbTests: XCTestCase {
    private func json(_ text: String) throws -> [String: Any] {
        try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], text)
    }

    func testTheReportOfTheLastStopRunShowsEachUserOnlyTheirOwnSessions() throws {
        let server = try EndSessionServer()
        let scratch = try ScratchDirectory("report")
        // The test's own directories must be reachable by the unprivileged user.
        chmod(scratch.path, 0o755)
        mkdir(scratch.path + "/run", 0o755)
        let config = "[Control]\nSocketMode=0666\n[Endpoint]\nName=auth\nURL=\(server.endSessionURL)\n"
        let first = try DaemonProcess(config: config, scratch: scratch)
        XCTAssertNotNil(first.waitUntilReady())
        let socket = ["--socket", first.socketPath]
        let nobody: UInt32 = 65534
        func register(_ key: String, as uid: UInt32? = nil) throws -> String {
            let result = try BuiltBinary.run(
                ["register", "--endpoint", "auth"] + socket, stdin: key + "\n", asUID: uid)
            XCTAssertEqual(result.status, 0, result.err)
            return result.out.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let rootID = try register("ok-root")
        let mineEnded = try register("ok-mine", as: nobody)
        let mineKept = try register("no-mine", as: nobody)
        first.signal(SIGTERM)
        XCTAssertEqual(first.waitForExit(timeout: 10), 75, "the rejected one is kept")

        let second = try DaemonProcess(config: config, scratch: scratch)
        XCTAssertNotNil(second.waitUntilReady())
        let secondSocket = ["--socket", second.socketPath]
        let all = try json(try BuiltBinary.run(["report", "--json", "--no-journal"] + secondSocket).out)
        XCTAssertEqual(all["scope"] as? String, "all")
        XCTAssertEqual((all["calls"] as? [String: Int])?["total"], 3)
        XCTAssertEqual((all["sessions"] as? [String: Int])?["kept"], 1)
        let runID = try XCTUnwrap(all["run_id"] as? String)
        XCTAssertEqual(runID.count, 32)

        let mine = try BuiltBinary.run(["report", "--json", runID] + secondSocket, asUID: nobody)
        XCTAssertEqual(mine.status, 0, mine.err)
        let report = try json(mine.out)
        XCTAssertEqual(report["scope"] as? String, "uid \(nobody)")
        XCTAssertEqual((report["calls"] as? [String: Int])?["total"], 2)
        XCTAssertEqual((report["sessions"] as? [String: Int])?["ended"], 1)
        XCTAssertFalse(mine.out.contains(rootID), "root's session is not theirs to see")
        XCTAssertTrue(mine.out.contains(mineKept))
        XCTAssertEqual((report["journal_check"] as? [String: Any])?["checked"] as? Bool, false)
        _ = mineEnded

        let human = try BuiltBinary.run(["report", "--no-journal"] + secondSocket)
        XCTAssertEqual(human.status, 0, human.err)
        XCTAssertTrue(human.out.contains("Run \(runID) (stop)"), human.out)
        XCTAssertTrue(human.out.contains("Sessions: 3 — 2 ended, 1 kept"), human.out)
        XCTAssertTrue(human.out.contains("Not ended, by cause:"), human.out)

        let unknown = try BuiltBinary.run(["report", String(repeating: "0", count: 32)] + secondSocket)
        XCTAssertEqual(unknown.status, 1)
        XCTAssertTrue(unknown.err.contains("is not kept"), unknown.err)
        XCTAssertEqual(try BuiltBinary.run(["report", "not-a-run-id"] + secondSocket).status, 2)
        second.signal(SIGKILL)
    }

    func testAnotherUsersBackgroundRunIsAnsweredExactlyAsARunNotKeptAndErrorsNeverQuoteTheRequest() throws {
        let server = try EndSessionServer()
        let scratch = try ScratchDirectory("report-other")
        chmod(scratch.path, 0o755)
        mkdir(scratch.path + "/run", 0o755)
        let config = "[Control]\nSocketMode=0666\n[Endpoint]\nName=auth\nURL=\(server.endSessionURL)\n"
        let daemon = try DaemonProcess(config: config, scratch: scratch)
        XCTAssertNotNil(daemon.waitUntilReady())
        let socket = ["--socket", daemon.socketPath]
        let nobody: UInt32 = 65534
        let registered = try BuiltBinary.run(["register", "--endpoint", "auth"] + socket, stdin: "ok-root\n")
        XCTAssertEqual(registered.status, 0, registered.err)
        let ended = try BuiltBinary.run(["end", "--all", "--json"] + socket)
        XCTAssertEqual(ended.status, 0, ended.err)
        // The background run's id, from its run-begun entry (the daemon journals to stderr here).
        var found: String?
        for _ in 0..<200 where found == nil {
            let line = daemon.stderr.split(separator: "\n").first { $0.contains("in the background") }
            found = line.flatMap { $0.firstMatch(of: /RUN_ID=([0-9a-f]{32})/) }.map { String($0.output.1) }
            if found == nil { usleep(10_000) }
        }
        let runID = try XCTUnwrap(found, daemon.stderr)
        let rootReport = try BuiltBinary.run(["report", "--json", "--no-journal", runID] + socket)
        XCTAssertEqual(rootReport.status, 0, rootReport.err)

        let missing = String(repeating: "0", count: 32)
        let theirs = try BuiltBinary.run(["report", "--json", "--no-journal", runID] + socket, asUID: nobody)
        let none = try BuiltBinary.run(["report", "--json", "--no-journal", missing] + socket, asUID: nobody)
        XCTAssertEqual(none.status, 1, none.err)
        XCTAssertEqual(theirs.status, none.status, theirs.err)
        XCTAssertEqual(theirs.out, none.out)
        XCTAssertEqual(theirs.err.replacingOccurrences(of: runID, with: missing), none.err)
        XCTAssertFalse(theirs.out.contains("started_at") || theirs.err.contains("duration"), theirs.out + theirs.err)

        // Ids that are not ids are refused without being sent back.
        let client = try RawClient(path: daemon.socketPath)
        for request in [
            #"{"op":"report","run_id":"ok-secret-key-as-run-id"}"#, #"{"op":"end","id":"ok-secret-key-as-id"}"#,
            #"{"op":"unregister","id":"ok-secret-key-as-id"}"#,
        ] {
            client.send(request + "\n")
            let reply = try XCTUnwrap(client.readObject(), request)
            XCTAssertEqual(reply["code"] as? String, "bad-request", request)
            XCTAssertFalse((reply["error"] as? String ?? "").contains("secret"), "\(reply)")
        }
        daemon.signal(SIGKILL)
    }
}
