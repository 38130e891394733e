import Foundation
import Glibc
import XCTest

/// The daemon with `[Store] KeyCredential=`: what it registers is in no file in clear, its stop
/// ends every session; without the credential, or with a malformed one, or with a sealed store and
/// no key configured, it refuses to start with exit 78 and says why.
final class SealedStoreDaemonTests: XCTestCase {
    private static let planted = "ok-planted-store-key-"

    /// A credentials directory holding `store-key` with `bytes` (nil: none).
    private func credentials(_ bytes: [UInt8]?) throws -> ScratchDirectory {
        let directory = try ScratchDirectory("credentials")
        if let bytes { try Data(bytes).write(to: URL(fileURLWithPath: directory.path + "/store-key")) }
        return directory
    }

    private func randomBytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255) } }

    private func config(_ url: String, sealed: Bool = true) -> String {
        (sealed ? "[Store]\nKeyCredential=store-key\n" : "")
            + "[Stop]\nBudgetSec=6s\nRetryDelaySec=100ms\n[Endpoint]\nName=auth\nURL=\(url)\n"
    }

    private func register(_ key: String, on daemon: DaemonProcess) throws {
        let result = try BuiltBinary.run(
            ["register", "--socket", daemon.socketPath, "--endpoint", "auth"], stdin: key + "\n")
        XCTAssertEqual(result.status, 0, result.err)
    }

    /// A store in `scratch` holding `keys` sealed with a fresh store key: a first daemon registered
    /// them against `refused` (a port nobody listens on) and kept them at its stop. Returns the
    /// key's credentials directory (alive as long as it is held) and the state directory.
    private func sealedStore(keeping keys: [String], refused: String, in scratch: ScratchDirectory) throws
        -> (credentials: ScratchDirectory, stateDirectory: String)
    {
        let credentials = try credentials(randomBytes(32))
        let first = try DaemonProcess(
            config: config(refused), environment: ["CREDENTIALS_DIRECTORY": credentials.path], scratch: scratch)
        XCTAssertNotNil(first.waitUntilReady(), "not ready: \(first.stderr)")
        for key in keys { try register(key, on: first) }
        first.signal(SIGTERM)
        XCTAssertEqual(first.waitForExit(timeout: 10), 75, "the calls fail: sessions kept: \(first.stderr)")
        return (credentials, first.stateDirectory)
    }

    /// How many of `keys` are in clear in any file of `directory`.
    private func keysInClear(_ keys: [String], in directory: String) throws -> Int {
        var all = Data()
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
            all += (try? Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))) ?? Data()
        }
        return keys.filter { all.range(of: Data($0.utf8)) != nil }.count
    }

    func testRegisteredKeysAreInNoFileInClearAndTheStopEndsThemAll() throws {
        let server = try EndSessionServer()
        let credentials = try credentials(randomBytes(32))
        let daemon = try DaemonProcess(
            config: config(server.endSessionURL), environment: ["CREDENTIALS_DIRECTORY": credentials.path])
        XCTAssertNotNil(daemon.waitUntilReady(), "not ready: \(daemon.stderr)")
        let keys = (0..<40).map { Self.planted + "\($0)-" + UUID().uuidString }
        for key in keys { try register(key, on: daemon) }
        XCTAssertEqual(try keysInClear(keys, in: daemon.stateDirectory), 0, "no registered key in clear")
        let check = try BuiltBinary.run(
            ["check-config", "--config", daemon.scratch.path + "/session-cleanup.conf"],
            environment: ["CREDENTIALS_DIRECTORY": credentials.path])
        XCTAssertEqual(check.status, 0, check.err)
        XCTAssertTrue(
            check.out.contains("[Store] session keys sealed (AES-256-GCM) with the key in credential 'store-key'"),
            check.out)
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 10), 0, "every session ended: \(daemon.stderr)")
        for key in keys { XCTAssertEqual(try server.calls(for: key).successes, 1, key) }
        XCTAssertEqual(try keysInClear(keys, in: daemon.stateDirectory), 0)
    }

    func testASealedStoreIsReadBackByTheNextStartWithItsKey() throws {
        let refused = "http://127.0.0.1:\(try EndSessionServer.closedPort())/user/{session}/endsession"
        let scratch = try ScratchDirectory("sealed-restart")
        let keys = (0..<5).map { Self.planted + "kept-\($0)-" + UUID().uuidString }
        let (credentials, stateDirectory) = try sealedStore(keeping: keys, refused: refused, in: scratch)
        let environment = ["CREDENTIALS_DIRECTORY": credentials.path]
        XCTAssertEqual(try keysInClear(keys, in: stateDirectory), 0)

        let server = try EndSessionServer()
        let second = try DaemonProcess(config: config(server.endSessionURL), environment: environment, scratch: scratch)
        XCTAssertNotNil(second.waitUntilReady(), "not ready: \(second.stderr)")
        second.signal(SIGTERM)
        XCTAssertEqual(second.waitForExit(timeout: 10), 0, second.stderr)
        for key in keys { XCTAssertEqual(try server.calls(for: key).successes, 1, "ended with its key: \(key)") }
    }

    func testAStoreOfClearKeysIsSealedAtTheFirstStartWithAKeyAndTheJournalSaysHowMany() throws {
        let refused = "http://127.0.0.1:\(try EndSessionServer.closedPort())/user/{session}/endsession"
        let scratch = try ScratchDirectory("clear-to-sealed")
        let clear = try DaemonProcess(config: config(refused, sealed: false), scratch: scratch)
        XCTAssertNotNil(clear.waitUntilReady(), "not ready: \(clear.stderr)")
        let keys = (0..<3).map { Self.planted + "clear-\($0)-" + UUID().uuidString }
        for key in keys { try register(key, on: clear) }
        clear.signal(SIGTERM)
        XCTAssertEqual(clear.waitForExit(timeout: 10), 75, clear.stderr)
        XCTAssertEqual(try keysInClear(keys, in: clear.stateDirectory), 3, "no key: stored in clear")

        let credentials = try credentials(randomBytes(32))
        let sealed = try DaemonProcess(
            config: config(refused), environment: ["CREDENTIALS_DIRECTORY": credentials.path], scratch: scratch)
        XCTAssertNotNil(sealed.waitUntilReady(), "not ready: \(sealed.stderr)")
        XCTAssertTrue(
            sealed.stderr.contains("it held session keys in clear: rewrote it with the keys of 3 sessions sealed"),
            sealed.stderr)
        XCTAssertEqual(try keysInClear(keys, in: sealed.stateDirectory), 0, "sealed at the start")
        sealed.signal(SIGTERM)
        XCTAssertEqual(sealed.waitForExit(timeout: 10), 75, sealed.stderr)
    }

    func testWithoutItsCredentialTheDaemonRefusesToStartAndSaysWhy() throws {
        let url = "http://127.0.0.1:9/user/{session}/endsession"
        for (bytes, expected) in [
            (nil, "cannot read credential 'store-key'"),
            ([UInt8](randomBytes(31)), "must hold exactly 32 random bytes (it holds 31)"),
            ([UInt8](), "credential 'store-key' is empty"),
        ] as [([UInt8]?, String)] {
            let credentials = try credentials(bytes)
            let daemon = try DaemonProcess(
                config: config(url), environment: ["CREDENTIALS_DIRECTORY": credentials.path])
            XCTAssertEqual(daemon.waitForExit(timeout: 10), 78, daemon.stderr)
            XCTAssertTrue(daemon.stderr.contains("[Store] KeyCredential=store-key"), daemon.stderr)
            XCTAssertTrue(daemon.stderr.contains(expected), "\(expected): \(daemon.stderr)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: daemon.stateDirectory + "/sessions.log"), "no store")
            let check = try BuiltBinary.run(
                ["check-config", "--config", daemon.scratch.path + "/session-cleanup.conf"],
                environment: ["CREDENTIALS_DIRECTORY": credentials.path])
            XCTAssertEqual(check.status, 78, check.err)
            XCTAssertTrue(check.err.contains("[Store] KeyCredential=store-key"), check.err)
        }
        let unset = try DaemonProcess(config: config(url))  // no $CREDENTIALS_DIRECTORY at all
        XCTAssertEqual(unset.waitForExit(timeout: 10), 78, unset.stderr)
        XCTAssertTrue(unset.stderr.contains("$CREDENTIALS_DIRECTORY is unset"), unset.stderr)
    }

    func testASealedStoreWithoutAKeyConfiguredRefusesToStart() throws {
        let refused = "http://127.0.0.1:\(try EndSessionServer.closedPort())/user/{session}/endsession"
        let scratch = try ScratchDirectory("sealed-nokey")
        let (credentials, stateDirectory) = try sealedStore(
            keeping: [Self.planted + "kept-" + UUID().uuidString], refused: refused, in: scratch)
        let environment = ["CREDENTIALS_DIRECTORY": credentials.path]
        let before = try FileManager.default.contentsOfDirectory(atPath: stateDirectory).sorted()

        let unkeyed = try DaemonProcess(
            config: config(refused, sealed: false), environment: environment, scratch: scratch)
        XCTAssertEqual(unkeyed.waitForExit(timeout: 10), 78, unkeyed.stderr)
        XCTAssertTrue(unkeyed.stderr.contains("holds 1 sealed session keys, but no store key"), unkeyed.stderr)
        XCTAssertTrue(unkeyed.stderr.contains("KeyCredential="), unkeyed.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: stateDirectory).sorted(), before)

        let otherKey = try self.credentials(randomBytes(32))
        let wrong = try DaemonProcess(
            config: config(refused), environment: ["CREDENTIALS_DIRECTORY": otherKey.path], scratch: scratch)
        XCTAssertEqual(wrong.waitForExit(timeout: 10), 78, wrong.stderr)
        XCTAssertTrue(wrong.stderr.contains("not the key that sealed them"), wrong.stderr)
    }
}
