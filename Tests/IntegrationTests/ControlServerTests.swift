import Foundation
import Glibc
import XCTest

@testable import Basics
@testable import Control
@testable import EventLoop
@testable import Sessions

/// A real `ControlServer` on a real `EventLoop`, turned by one dedicated thread; real sockets.
final class ControlServerTests: XCTestCase {
    private var scratch: ScratchDirectory!
    private var loopThread: LoopThread!
    private var handler: RecordingHandler!
    private var server: ControlServer!
    private var socketPath: String { scratch.path + "/control.sock" }

    override func setUpWithError() throws {
        scratch = try ScratchDirectory("control")
    }

    override func tearDown() {
        loopThread?.stop()
        // The loop thread has ended: this thread owns the server again.
        server?.close()
        server = nil
        handler = nil
        loopThread = nil
        scratch = nil
    }

    private func startServer(
        mode: UInt32 = 0o660, group: String = "", limits: ControlServer.Limits = ControlServer.Limits(),
        path: String? = nil
    ) throws {
        let thread = try LoopThread()
        let handler = RecordingHandler(loop: thread.loop)
        server = try ControlServer(
            socketPath: path ?? socketPath, socketMode: mode, socketGroup: group, loop: thread.loop, handler: handler,
            limits: limits)
        self.handler = handler
        loopThread = thread
        thread.start()
    }

    private func clientCount() -> Int {
        let server = UncheckedBox(server!)
        return loopThread.sync { server.value.clientCount }
    }

    private func waitFor(_ condition: () -> Bool, timeout: TimeInterval = 5) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            usleep(5_000)
        }
        return condition()
    }

    // MARK: Round trips

    func testRegisterRoundTripCarriesTheKeyAndThePeersCredentials() throws {
        try startServer()
        let client = try RawClient(path: socketPath)
        client.send(#"{"op":"register","key":"s3cret","endpoints":["auth","billing"],"label":"web"}"# + "\n")
        let reply = try XCTUnwrap(client.readObject())
        XCTAssertEqual(reply["ok"] as? Bool, true)
        XCTAssertEqual(reply["id"] as? String, "0000000000000001")
        let record = try XCTUnwrap(handler.received.first)
        guard case .register(let key, let endpoints, let label) = record.request else {
            return XCTFail("\(record.request)")
        }
        XCTAssertEqual(key.exposedSecret, "s3cret")
        XCTAssertEqual(endpoints, ["auth", "billing"])
        XCTAssertEqual(label, "web")
        XCTAssertEqual(record.peer.uid, getuid())
        XCTAssertEqual(record.peer.gid, getgid())
        XCTAssertEqual(record.peer.pid, getpid())
        // The connection carries further requests.
        client.send(#"{"op":"status"}"# + "\n")
        XCTAssertEqual(try XCTUnwrap(client.readObject())["ok"] as? Bool, true)
    }

    func testTheBlockingClientRoundTrips() throws {
        try startServer()
        let client = ControlClient(socketPath: socketPath, timeout: .seconds(5))
        let registered = try client.send(.register(key: SessionKey("k"), endpoints: ["auth"], label: nil))
        XCTAssertEqual(registered, .registered(id: "0000000000000001"))
        XCTAssertEqual(try client.send(.list), .sessions([]))
        XCTAssertEqual(try client.send(.unregister(id: "missing1")), .failure(.notFound, "no session missing1"))
        XCTAssertEqual(try client.send(.end(.all)), .ended(report: ["ended": 0]))
    }

    func testMalformedJSONIsAnsweredAndTheConnectionStaysUsable() throws {
        try startServer()
        let client = try RawClient(path: socketPath)
        client.send("this is not json\n")
        let bad = try XCTUnwrap(client.readObject())
        XCTAssertEqual(bad["ok"] as? Bool, false)
        XCTAssertEqual(bad["code"] as? String, "bad-request")
        client.send(#"{"op":"teleport"}"# + "\n")
        XCTAssertEqual(try XCTUnwrap(client.readObject())["code"] as? String, "bad-request")
        client.send("\n\r\n")  // blank lines are no requests and get no reply
        client.send(#"{"op":"list"}"# + "\r\n")
        let good = try XCTUnwrap(client.readObject())
        XCTAssertEqual(good["ok"] as? Bool, true)
        XCTAssertEqual((good["sessions"] as? [Any])?.count, 0)
    }

    func testAnOversizedLineIsRefusedAndClosedWhileOthersAreServed() throws {
        try startServer()
        let big = try RawClient(path: socketPath)
        let other = try RawClient(path: socketPath)
        let line = #"{"op":"register","key":""# + String(repeating: "x", count: 100 * 1024) + "\"}\n"
        big.send(line)
        let reply = try XCTUnwrap(big.readObject())
        XCTAssertEqual(reply["code"] as? String, "too-large")
        XCTAssertFalse((reply["error"] as? String ?? "").contains("xxxx"))
        XCTAssertEqual(big.readLine(timeout: 2), .closed)
        other.send(#"{"op":"list"}"# + "\n")
        XCTAssertEqual(try XCTUnwrap(other.readObject())["ok"] as? Bool, true)
        XCTAssertTrue(
            handler.received.allSatisfy { $0.request == .list }, "the oversized request never reached the handler")
    }

    func testManyPipelinedLinesCostLinearTime() throws {
        try startServer()
        let client = try RawClient(path: socketPath)
        let started = Date()
        client.send(String(repeating: "\n", count: 60_000) + String(repeating: #"{"op":"list"}"# + "\n", count: 2_000))
        for _ in 0..<2_000 { XCTAssertEqual(try XCTUnwrap(client.readObject())["ok"] as? Bool, true) }
        XCTAssertLessThan(Date().timeIntervalSince(started), 3)
    }

    func testALineOfExactlyTheLimitIsAccepted() throws {
        try startServer(limits: ControlServer.Limits(maxLineBytes: 1024))
        let client = try RawClient(path: socketPath)
        let prefix = #"{"op":"list"}"#
        client.send(prefix + String(repeating: " ", count: 1024 - prefix.utf8.count) + "\n")
        XCTAssertEqual(try XCTUnwrap(client.readObject())["ok"] as? Bool, true)
        client.send(prefix + String(repeating: " ", count: 1025 - prefix.utf8.count) + "\n")
        XCTAssertEqual(try XCTUnwrap(client.readObject())["code"] as? String, "too-large")
    }

    func testAStalledHalfRequestIsClosedAfterTheIdleTimeoutWhileOthersAreServed() throws {
        try startServer(limits: ControlServer.Limits(requestTimeout: .milliseconds(300)))
        let stalled = try RawClient(path: socketPath)
        let started = Date()
        stalled.send(#"{"op":"li"#)
        // Meanwhile another client is served promptly, several times over.
        for _ in 0..<3 {
            let other = try RawClient(path: socketPath)
            let before = Date()
            other.send(#"{"op":"status"}"# + "\n")
            XCTAssertEqual(try XCTUnwrap(other.readObject())["ok"] as? Bool, true)
            XCTAssertLessThan(Date().timeIntervalSince(before), 0.2)
        }
        let notice = try XCTUnwrap(stalled.readObject(timeout: 3))
        XCTAssertEqual(notice["code"] as? String, "bad-request")
        XCTAssertEqual(stalled.readLine(timeout: 3), .closed)
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertGreaterThanOrEqual(elapsed, 0.28)
        XCTAssertLessThan(elapsed, 2)
        XCTAssertTrue(waitFor { self.clientCount() == 0 })
    }

    /// Slow-loris: the clock used to restart on every byte, so a client sending one byte at a
    /// time held its connection for ever. The limit is for a complete request.
    func testAClientTricklingBytesIsClosedWhenTheRequestTimeIsUp() throws {
        try startServer(limits: ControlServer.Limits(requestTimeout: .milliseconds(400)))
        let loris = try RawClient(path: socketPath)
        let started = Date()
        var sent = 0
        for byte in Array(#"{"op":"status","padding":"xxxxxxxxxxxxxxxxxxxxxxxx"#.utf8) {
            guard loris.send([byte]) else { break }
            sent += 1
            usleep(50_000)
            if clientCount() == 0 { break }
        }
        XCTAssertTrue(waitFor { self.clientCount() == 0 }, "closed")
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertGreaterThanOrEqual(elapsed, 0.38)
        XCTAssertLessThan(elapsed, 1.0, "closed at the limit, not kept alive byte by byte (\(sent) bytes sent)")
        XCTAssertEqual(try XCTUnwrap(loris.readObject(timeout: 2))["code"] as? String, "bad-request")
        // A request that is complete in time is answered, and the next one gets its own time.
        let prompt = try RawClient(path: socketPath)
        prompt.send(#"{"op":"sta"#)
        usleep(250_000)
        prompt.send(#"tus"}"# + "\n")
        XCTAssertEqual(try XCTUnwrap(prompt.readObject())["ok"] as? Bool, true)
        usleep(250_000)
        prompt.send(#"{"op":"status"}"# + "\n")
        XCTAssertEqual(try XCTUnwrap(prompt.readObject())["ok"] as? Bool, true)
    }

    /// Connects as `uid` (the effective uid is what SO_PEERCRED reports), then back to root.
    private func connect(asUID uid: uid_t) throws -> RawClient {
        XCTAssertEqual(getuid(), 0, "these tests need root, to act as another user")
        chmod(scratch.path, 0o711)
        guard seteuid(uid) == 0 else { throw POSIXError(.EPERM) }
        defer { XCTAssertEqual(seteuid(0), 0) }
        return try RawClient(path: socketPath)
    }

    /// One user's connections used to be able to take every slot, root's `register` included.
    func testOneUserCannotTakeEveryConnectionAndRootKeepsItsOwn() throws {
        try startServer(limits: ControlServer.Limits(maxClients: 8, maxClientsPerUser: 3, reservedForRoot: 2))
        let held = try (0..<3).map { _ in try connect(asUID: 65534) }
        XCTAssertTrue(waitFor { self.clientCount() == 3 })
        let fourth = try connect(asUID: 65534)
        let refusal = try XCTUnwrap(fourth.readObject())
        XCTAssertEqual(refusal["code"] as? String, "limit")
        XCTAssertEqual(
            refusal["error"] as? String, "too many control connections from uid 65534 (3); try again later")
        // Other users fill what is left for non-root users (8 − 2 reserved) …
        let others = try (0..<3).map { try connect(asUID: 60000 + uid_t($0)) }
        XCTAssertTrue(waitFor { self.clientCount() == 6 })
        let overflow = try connect(asUID: 60010)
        XCTAssertEqual(try XCTUnwrap(overflow.readObject())["code"] as? String, "limit")
        // … and root still gets in, twice.
        for _ in 0..<2 {
            let root = try RawClient(path: socketPath)
            root.send(#"{"op":"status"}"# + "\n")
            XCTAssertEqual(try XCTUnwrap(root.readObject())["ok"] as? Bool, true)
        }
        // A slot freed is usable again by its user.
        held[0].shutdownWrite()
        XCTAssertTrue(waitFor { self.clientCount() <= 7 })
        let again = try connect(asUID: 65534)
        again.send(#"{"op":"status"}"# + "\n")
        XCTAssertEqual(try XCTUnwrap(again.readObject())["ok"] as? Bool, true)
        _ = others
    }

    /// The reviewed attack at full size: 512 connections trickling a byte a second. Root's
    /// request is served at once, and every trickling connection is closed at the limit.
    func testFiveHundredTwelveSlowLorisClientsDoNotLockRootOut() throws {
        try startServer(limits: ControlServer.Limits(requestTimeout: .seconds(1)))
        var lorises: [RawClient] = []
        for index in 0..<512 {
            guard let client = try? connect(asUID: 61000 + uid_t(index % 64)) else { break }
            client.send("{")
            lorises.append(client)
        }
        XCTAssertEqual(lorises.count, 512)
        let started = Date()
        let root = try RawClient(path: socketPath)
        root.send(#"{"op":"register","key":"k","endpoints":["auth"]}"# + "\n")
        XCTAssertNotNil(try XCTUnwrap(root.readObject())["id"] as? String, "root is served")
        XCTAssertLessThan(Date().timeIntervalSince(started), 0.5)
        for client in lorises.prefix(64) { client.send("\"") }
        XCTAssertTrue(waitFor({ self.clientCount() == 0 }, timeout: 4), "\(clientCount()) still open")
    }

    func testAnIdleConnectionIsClosedSilently() throws {
        try startServer(limits: ControlServer.Limits(requestTimeout: .milliseconds(300)))
        let idle = try RawClient(path: socketPath)
        XCTAssertEqual(idle.readLine(timeout: 3), .closed)
    }

    func testTwoHundredConcurrentClients() throws {
        try startServer()
        let clients = try (0..<200).map { _ in try RawClient(path: socketPath) }
        XCTAssertTrue(waitFor { self.clientCount() == 200 }, "\(clientCount()) connected")
        for (index, client) in clients.enumerated() {
            client.send(#"{"op":"register","key":"key-\#(index)","endpoints":["auth"]}"# + "\n")
        }
        var ids = Set<String>()
        for client in clients {
            let reply = try XCTUnwrap(client.readObject())
            ids.insert(try XCTUnwrap(reply["id"] as? String))
        }
        XCTAssertEqual(ids.count, 200)
        XCTAssertEqual(handler.received.count, 200)
    }

    func testClientsBeyondTheLimitGetAnErrorLineAndAreClosed() throws {
        try startServer(limits: ControlServer.Limits(maxClients: 2))
        let first = try RawClient(path: socketPath)
        let second = try RawClient(path: socketPath)
        XCTAssertTrue(waitFor { self.clientCount() == 2 })
        let third = try RawClient(path: socketPath)
        let refusal = try XCTUnwrap(third.readObject())
        XCTAssertEqual(refusal["code"] as? String, "limit")
        XCTAssertEqual(third.readLine(timeout: 2), .closed)
        for client in [first, second] {
            client.send(#"{"op":"list"}"# + "\n")
            XCTAssertEqual(try XCTUnwrap(client.readObject())["ok"] as? Bool, true)
        }
    }

    func testAClientThatDoesNotReadItsReplyIsClosedAfterTheIdleTimeout() throws {
        try startServer(limits: ControlServer.Limits(requestTimeout: .milliseconds(300)))
        let sluggard = try RawClient(path: socketPath)
        sluggard.send(#"{"op":"unregister","id":"huge"}"# + "\n" + #"{"op":"list"}"# + "\n")
        XCTAssertTrue(waitFor { self.handler.received.count == 1 })
        let other = try RawClient(path: socketPath)
        other.send(#"{"op":"status"}"# + "\n")
        XCTAssertEqual(try XCTUnwrap(other.readObject())["ok"] as? Bool, true)
        XCTAssertTrue(waitFor { self.clientCount() == 0 }, "both idle clients are closed: \(clientCount())")
        XCTAssertFalse(
            handler.received.contains { $0.request == .list }, "its second request waited behind the unread reply")
        // What it finally reads is part of the reply, then the end: the rest was never buffered.
        XCTAssertEqual(sluggard.readLine(timeout: 3), .closed)
    }

    func testAReplyOverTheLimitBecomesAnInternalError() throws {
        try startServer(limits: ControlServer.Limits(maxReplyBytes: 4096))
        let client = try RawClient(path: socketPath)
        client.send(#"{"op":"unregister","id":"huge"}"# + "\n")
        let reply = try XCTUnwrap(client.readObject())
        XCTAssertEqual(reply["code"] as? String, "internal")
        XCTAssertLessThan((reply["error"] as? String ?? "").count, 200)
    }

    // MARK: Ordering and disconnects

    func testPipelinedRepliesComeInRequestOrderEvenWhenTheFirstIsSlow() throws {
        try startServer()
        let client = try RawClient(path: socketPath)
        client.send(
            #"{"op":"unregister","id":"slow1"}"# + "\n" + #"{"op":"register","key":"k","endpoints":["a"]}"# + "\n"
                + #"{"op":"unregister","id":"missing2"}"# + "\n")
        let first = try XCTUnwrap(client.readObject())
        XCTAssertEqual(first.count, 1, "\(first)")
        XCTAssertEqual(first["ok"] as? Bool, true)
        XCTAssertNotNil(try XCTUnwrap(client.readObject())["id"])
        XCTAssertEqual(try XCTUnwrap(client.readObject())["code"] as? String, "not-found")
    }

    func testAClientDisconnectingBeforeItsReplyIsHarmless() throws {
        try startServer()
        do {
            let leaving = try RawClient(path: socketPath)
            leaving.send(#"{"op":"unregister","id":"slow-bye"}"# + "\n" + #"{"op":"list"}"# + "\n")
        }  // closed here, before the slow reply
        XCTAssertTrue(waitFor { self.handler.received.count == 2 }, "every complete request is still handled")
        XCTAssertTrue(waitFor { self.clientCount() == 0 })
        let next = try RawClient(path: socketPath)
        next.send(#"{"op":"status"}"# + "\n")
        XCTAssertEqual(try XCTUnwrap(next.readObject())["ok"] as? Bool, true)
    }

    func testARequestFollowedByEndOfFileIsAnsweredThenClosed() throws {
        try startServer()
        let client = try RawClient(path: socketPath)
        client.send(#"{"op":"list"}"#)  // no newline: `printf '%s' … | socat`
        client.shutdownWrite()
        XCTAssertEqual(try XCTUnwrap(client.readObject())["ok"] as? Bool, true)
        XCTAssertEqual(client.readLine(timeout: 2), .closed)
    }

    func testTheBlockingClientTimesOutWhenNoReplyComes() throws {
        try startServer()
        let client = ControlClient(socketPath: socketPath, timeout: .milliseconds(300))
        XCTAssertThrowsError(try client.send(.unregister(id: "never"))) { error in
            XCTAssertEqual((error as? ControlClientError)?.kind, .timedOut)
            XCTAssertTrue("\(error)".contains(socketPath), "\(error)")
        }
    }

    // MARK: The socket file

    func testTheSocketFileHasTheConfiguredModeAndIsRemovedOnClose() throws {
        for mode: UInt32 in [0o600, 0o660, 0o666] {
            try startServer(mode: mode)
            var status = stat()
            XCTAssertEqual(lstat(socketPath, &status), 0)
            XCTAssertEqual(status.st_mode & S_IFMT, S_IFSOCK)
            XCTAssertEqual(UInt32(status.st_mode) & 0o7777, mode, String(mode, radix: 8))
            loopThread.stop()
            server.close()
            XCTAssertFalse(FileManager.default.fileExists(atPath: socketPath))
            server = nil
            loopThread = nil
        }
    }

    func testSocketGroupIsApplied() throws {
        let gid = getegid()
        guard let entry = getgrgid(gid) else { throw TestSetupError("no name for gid \(gid)") }
        let name = String(cString: entry.pointee.gr_name)
        try startServer(group: name)
        var status = stat()
        XCTAssertEqual(lstat(socketPath, &status), 0)
        XCTAssertEqual(status.st_gid, gid)
    }

    func testAnUnknownSocketGroupIsAnErrorNamingIt() throws {
        let loop = try EventLoop()
        let handler = RecordingHandler(loop: loop)
        XCTAssertThrowsError(
            try ControlServer(socketPath: socketPath, socketGroup: "no-such-group-sc", loop: loop, handler: handler)
        ) { error in
            XCTAssertEqual("\(error)", "SocketGroup=no-such-group-sc: no such group")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: socketPath))
    }

    func testAStaleSocketIsReplacedButALiveOneIsNot() throws {
        // A stale socket: bound, then its owner died without unlinking it.
        let stale = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertEqual(try XCTUnwrap(UnixSocketAddress(path: socketPath)).bind(stale), 0)
        close(stale)
        XCTAssertTrue(FileManager.default.fileExists(atPath: socketPath))
        try startServer()
        let client = try RawClient(path: socketPath)
        client.send(#"{"op":"list"}"# + "\n")
        XCTAssertEqual(try XCTUnwrap(client.readObject())["ok"] as? Bool, true)

        let loop = try EventLoop()
        let otherHandler = RecordingHandler(loop: loop)
        XCTAssertThrowsError(
            try ControlServer(socketPath: socketPath, loop: loop, handler: otherHandler)
        ) { error in
            XCTAssertTrue("\(error)".contains("another process is listening"), "\(error)")
        }
        // The live server is untouched.
        let again = try RawClient(path: socketPath)
        again.send(#"{"op":"status"}"# + "\n")
        XCTAssertEqual(try XCTUnwrap(again.readObject())["ok"] as? Bool, true)
    }

    func testSomethingOtherThanASocketAtThePathIsLeftAlone() throws {
        let path = try scratch.write("control.sock", "not a socket")
        let loop = try EventLoop()
        let handler = RecordingHandler(loop: loop)
        XCTAssertThrowsError(try ControlServer(socketPath: path, loop: loop, handler: handler)) {
            XCTAssertTrue("\($0)".contains("is not a socket"), "\($0)")
        }
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), "not a socket")
    }

    func testTheBlockingClientExplainsAMissingDaemon() {
        let client = ControlClient(socketPath: scratch.path + "/nobody.sock", timeout: .seconds(2))
        XCTAssertThrowsError(try client.send(.status)) { error in
            XCTAssertEqual((error as? ControlClientError)?.kind, .unreachable)
            XCTAssertEqual(
                "\(error)",
                "cannot connect to \(scratch.path)/nobody.sock: No such file or directory (is the daemon running?)")
        }
    }

    func testTheBlockingClientExplainsPermissionDenied() throws {
        try startServer(mode: 0o600)
        if getuid() == 0 {
            // Root may connect to any socket: ask as an unprivileged user instead.
            // Its group (mode 0600: the group may not write either) is the one to join.
            XCTAssertEqual(chown(socketPath, 0, 65534), 0)
            XCTAssertEqual(
                chmod((socketPath as NSString).deletingLastPathComponent, 0o711), 0,
                "the socket, not its directory, refuses")
            let result = try BuiltBinary.run(["status", "--socket", socketPath], asUID: 65534)
            XCTAssertEqual(result.status, 1)
            XCTAssertTrue(result.err.contains("Permission denied"), result.err)
            let group = AccountLookup.groupName(65534) ?? "65534"
            XCTAssertTrue(result.err.contains("join the group \(group) (usermod -aG \(group) "), result.err)
            return
        }
        chmod(socketPath, 0o000)
        let client = ControlClient(socketPath: socketPath, timeout: .seconds(2))
        XCTAssertThrowsError(try client.send(.status)) { error in
            XCTAssertEqual((error as? ControlClientError)?.kind, .permissionDenied)
            XCTAssertTrue("\(error)".contains("Permission denied"), "\(error)")
        }
    }
}

/// Carries a non-Sendable value to the loop thread, which alone uses it.
struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
