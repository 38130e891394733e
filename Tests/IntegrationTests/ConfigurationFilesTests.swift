import Foundation
import Glibc
import XCTest

@testable import SessionCleanup

/// The loader and `check-config` on real files: drop-ins that are not regular files, CRLF
/// files, a drop-in that is a link to a file of secrets.
final class ConfigurationFilesTests: XCTestCase {
    /// Runs `body` on another thread; fails (instead of hanging the suite) if it takes longer than `limit`.
    private func withinSeconds<T: Sendable>(_ limit: Double, _ body: @escaping @Sendable () -> T) -> T? {
        let done = DispatchSemaphore(value: 0)
        let result = LockedBox<T?>(nil)
        Thread.detachNewThread {
            result.value = body()
            done.signal()
        }
        guard done.wait(timeout: .now() + limit) == .success else {
            XCTFail("did not return within \(limit) s")
            return nil
        }
        return result.value
    }

    private func loadProblems(_ path: String) -> [String]? {
        withinSeconds(5) {
            do {
                _ = try ConfigurationLoader.load(path: path, required: true)
                return []
            } catch let error as ConfigurationError {
                return error.problems.map(\.description)
            } catch {
                return ["unexpected \(error)"]
            }
        }
    }

    /// Opening a FIFO for reading waits for a writer: the loader used to hang there for ever
    /// (check-config never returned; a reload blocked the daemon's only thread).
    func testAFIFOOrDirectoryDropInIsAProblemNotAHang() throws {
        let scratch = try ScratchDirectory("fifo")
        let main = try scratch.write("session-cleanup.conf", "[Stop]\nBudgetSec=10s\n")
        _ = try scratch.write("session-cleanup.conf.d/10-ok.conf", "[Stop]\nMaxAttempts=2\n")
        XCTAssertEqual(mkfifo(main + ".d/20-fifo.conf", 0o644), 0)
        XCTAssertEqual(mkdir(main + ".d/30-dir.conf", 0o755), 0)
        _ = try scratch.write("session-cleanup.conf.d/40-bad.conf", "[Stop]\nMaxAttempts=0\n")
        let problems = try XCTUnwrap(loadProblems(main))
        XCTAssertEqual(
            problems,
            [
                "\(main).d/20-fifo.conf: cannot read: read \(main).d/20-fifo.conf (not a regular file: a FIFO): "
                    + "Invalid argument (errno 22)",
                "\(main).d/30-dir.conf: cannot read: read \(main).d/30-dir.conf (not a regular file: a directory): "
                    + "Invalid argument (errno 22)",
                "\(main).d/40-bad.conf:2: invalid MaxAttempts=: expected an integer from 1 to 100",
            ])
        let checked = withinSeconds(10) { try? BuiltBinary.run(["check-config", "--config", main]) }
        XCTAssertEqual(checked??.status, 78)
        XCTAssertTrue(checked??.err.contains("20-fifo.conf") ?? false, checked??.err ?? "")
        XCTAssertTrue(checked??.err.contains("configuration invalid: 3 problems") ?? false, checked??.err ?? "")
    }

    func testADropInLinkedToAFileOfSecretsIsNeverQuoted() throws {
        let scratch = try ScratchDirectory("shadow")
        let main = try scratch.write("session-cleanup.conf", "")
        let shadow = try scratch.write(
            "shadow", "root:$6$Kq7s3cr3tSALT$Kq7s3cr3tHASH:19000:0:99999:7:::\nKq7s3cr3tTOKEN==\n")
        _ = try scratch.write("session-cleanup.conf.d/.keep", "")
        XCTAssertEqual(symlink(shadow, main + ".d/50-linked.conf"), 0)
        let problems = try XCTUnwrap(loadProblems(main))
        XCTAssertEqual(problems.count, 2)
        for problem in problems { XCTAssertFalse(problem.contains("s3cr3t"), problem) }
        let checked = try BuiltBinary.run(["check-config", "--config", main])
        XCTAssertEqual(checked.status, 78)
        XCTAssertFalse(checked.out.contains("s3cr3t") || checked.err.contains("s3cr3t"), checked.err)
    }

    /// A CRLF file used to be one line: its error echoed the whole file, tokens included.
    func testACRLFFileIsReadLineByLineAndNeverEchoed() throws {
        let scratch = try ScratchDirectory("crlf")
        let main = try scratch.write(
            "session-cleanup.conf",
            "[Endpoint]\r\nName=auth\r\nURL=http://127.0.0.1:9/{session}\r\nHeader=X-Token: Kq7s3cr3t\r\n"
                + "Colour=blue\r\n")
        let checked = try BuiltBinary.run(["check-config", "--config", main])
        XCTAssertEqual(checked.status, 78)
        XCTAssertEqual(
            checked.err,
            "session-cleanup: \(main):5: unknown key in [Endpoint] (see the README for the keys of each section)\n"
                + "session-cleanup: configuration invalid: 1 problem\n")
        try "[Endpoint]\r\nName=auth\r\nURL=http://127.0.0.1:9/{session}\r\nHeader=X-Token: Kq7s3cr3t\r\n"
            .write(toFile: main, atomically: true, encoding: .utf8)
        let (configuration, _) = try ConfigurationLoader.load(path: main, required: true)
        XCTAssertEqual(
            configuration.endpoint(named: "auth")?.headers, ["X-Token: Kq7s3cr3t"], "no CR left in the header")
    }
}

/// A value written on one thread and read on another after a semaphore (which orders them).
private final class LockedBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
