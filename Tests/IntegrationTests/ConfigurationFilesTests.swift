import Foundation
import Glibc
import XCTest

@testable import Configuration

/// The loader and `check-config` on real files: drop-ins that are not regular files, CRLF
/// files, a drop-in that is a link to a file of secrets.
final class ConfigurationFilesTests: XCTestCase {
    /// Runs `body` on another thread; fails (instead of hanging the suite) if it takes longer than `limit`.
    private func withinSeconds<T: Sendable>(_ limit: Double, _ body: @escaping @Sendable () -> T) -> T? {
        let done = DispatchSemaphore(value: 0)
        let result = LockedValue<T?>(nil)
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

    // MARK: What check-config checks of the host

    private func endpointWithCA(_ path: String) -> String {
        "[Endpoint]\nName=auth\nURL=https://127.0.0.1:9/{session}\nCAFile=\(path)\n"
    }

    func testCheckConfigFindsCAFilesThatAreMissingUnreadableOrNotPEMAndGroupsThatDoNotExist() throws {
        let scratch = try ScratchDirectory("host")
        let ca = try TestCertificateAuthority()
        // Readable by everyone, so that the same problems are found whether or not this host has
        // the service user (it has once the package is installed): only the contents are wrong.
        for directory in [scratch.path, ca.directory.path] { XCTAssertEqual(chmod(directory, 0o755), 0) }
        XCTAssertEqual(chmod(ca.caFile, 0o644), 0)
        let garbage = try scratch.write(
            "garbage.pem", "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n")
        let key = try scratch.write("key.pem", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
        for file in [garbage, key] { XCTAssertEqual(chmod(file, 0o644), 0) }
        let main = try scratch.write(
            "session-cleanup.conf",
            "[Control]\nSocketGroup=no-such-group-sc\n" + endpointWithCA(scratch.path + "/missing.pem")
                + endpointWithCA(garbage).replacing("Name=auth", with: "Name=b")
                + endpointWithCA(key).replacing("Name=auth", with: "Name=c")
                + endpointWithCA(ca.caFile).replacing("Name=auth", with: "Name=d"))
        let checked = try BuiltBinary.run(["check-config", "--config", main])
        XCTAssertEqual(checked.status, 78)
        let lines = checked.err.split(separator: "\n").map(String.init).filter { !$0.contains("warning:") }
        XCTAssertEqual(
            lines,
            [
                "session-cleanup: \(main):2: SocketGroup=no-such-group-sc: no such group",
                "session-cleanup: \(main):6: CAFile= of [Endpoint] 'auth': open \(scratch.path)/missing.pem: "
                    + "No such file or directory (errno 2)",
                "session-cleanup: \(main):10: CAFile= of [Endpoint] 'b': certificate 1 is not valid base64 DER",
                "session-cleanup: \(main):14: CAFile= of [Endpoint] 'c': no PEM certificate in it "
                    + "(expected -----BEGIN CERTIFICATE----- blocks)",
                "session-cleanup: configuration invalid: 4 problems",
            ])
        // The daemon itself would start with it; the hand-over's check asks just that.
        XCTAssertEqual(try BuiltBinary.run(["check-config", "--config", main, "--no-host-checks"]).status, 0)
        let good = try scratch.write("good.conf", endpointWithCA(ca.caFile) + "[Control]\nSocketGroup=root\n")
        let ok = try BuiltBinary.run(["check-config", "--config", good])
        XCTAssertEqual(ok.status, 0, ok.err)
    }

    func testACAFileTheServiceUserCannotReadIsAProblem() throws {
        let ca = try TestCertificateAuthority()
        XCTAssertEqual(chmod(ca.caFile, 0o600), 0)
        XCTAssertEqual(chmod(ca.directory.path, 0o755), 0)
        let configuration = try ConfigurationLoader.load(files: [("main.conf", Array(endpointWithCA(ca.caFile).utf8))])
        XCTAssertNil(ConfigurationCheck.caFileProblem(ca.caFile, readableBy: nil), "root reads it")
        let nobody = (uid: uid_t(65534), gid: gid_t(65534), groups: [gid_t(65534)])
        XCTAssertEqual(
            ConfigurationCheck.caFileProblem(ca.caFile, readableBy: nobody),
            "user 'session-cleanup' cannot read it (mode 600, owner uid \(getuid()), group gid \(getgid()))")
        XCTAssertEqual(chmod(ca.caFile, 0o644), 0)
        XCTAssertNil(ConfigurationCheck.caFileProblem(ca.caFile, readableBy: nobody))
        XCTAssertEqual(chmod(ca.directory.path, 0o700), 0)
        XCTAssertEqual(
            ConfigurationCheck.caFileProblem(ca.caFile, readableBy: nobody),
            "user 'session-cleanup' cannot read it (no search permission on \(ca.directory.path))")
        XCTAssertEqual(ConfigurationCheck.check(configuration, serviceUser: nil).problems, [])
    }

    func testABudgetLongerThanAShutdownMayTakeIsRefusedAndALongOneWarned() throws {
        let scratch = try ScratchDirectory("budget")
        let days = try scratch.write("days.conf", "[Stop]\nBudgetSec=2d\n")
        let refused = try BuiltBinary.run(["check-config", "--config", days])
        XCTAssertEqual(refused.status, 78)
        XCTAssertTrue(refused.err.contains("\(days):2: invalid BudgetSec=: at most 30min"), refused.err)
        let long = try scratch.write("long.conf", "[Stop]\nBudgetSec=10min\n")
        let warned = try BuiltBinary.run(["check-config", "--config", long])
        XCTAssertEqual(warned.status, 0, warned.err)
        XCTAssertTrue(
            warned.err.contains("session-cleanup: warning: \(long):2: BudgetSec= is 10 min: every stop"), warned.err)
    }
}
