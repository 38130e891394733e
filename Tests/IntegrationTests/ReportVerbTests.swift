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
}
