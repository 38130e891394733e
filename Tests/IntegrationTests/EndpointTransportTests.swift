import Foundation
import XCTest

/// The daemon against a real server: what bounds calls in flight and connections, that a
/// reload's new limits reach the engine even while a run is using it, and an endpoint's proxy.
final class EndpointTransportTests: XCTestCase {
    private func register(_ key: String, on daemon: DaemonProcess) throws -> String {
        let result = try BuiltBinary.run(
            ["register", "--socket", daemon.socketPath, "--endpoint", "auth"], stdin: key + "\n")
        XCTAssertEqual(result.status, 0, result.err)
        return result.out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func config(_ server: EndSessionServer, stop: String, endpoint: String = "") -> String {
        "[Stop]\nBudgetSec=10s\n\(stop)\n[Endpoint]\nName=auth\nURL=\(server.endSessionURL)\n\(endpoint)"
    }

    /// The server's `max_in_flight` and accepted connections (less the one `stats()` itself uses).
    private func serverCounts(_ server: EndSessionServer) throws -> (inFlight: Int, connections: Int) {
        let stats = try server.stats()
        return ((stats["max_in_flight"] as? Int) ?? -1, ((stats["connections"] as? Int) ?? 0) - 1)
    }

    func testMaxConcurrentRequestsBoundsCallsInFlight() throws {
        let server = try EndSessionServer()
        let daemon = try DaemonProcess(config: config(server, stop: "MaxConcurrentRequests=3"))
        XCTAssertNotNil(daemon.waitUntilReady())
        for index in 0..<12 { _ = try register("slow200-\(index)", on: daemon) }
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 10), 0, daemon.stderr)
        let counts = try serverCounts(server)
        XCTAssertEqual(counts.inFlight, 3, "three calls at once, never more")
        XCTAssertEqual(counts.connections, 3, "each kept alive and reused")
    }

    func testMaxConnectionsPerHostBoundsConnectionsToThatHost() throws {
        let server = try EndSessionServer()
        let daemon = try DaemonProcess(
            config: config(server, stop: "MaxConcurrentRequests=8", endpoint: "MaxConnectionsPerHost=2\n"))
        XCTAssertNotNil(daemon.waitUntilReady())
        for index in 0..<8 { _ = try register("slow200-\(index)", on: daemon) }
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 10), 0, daemon.stderr)
        let counts = try serverCounts(server)
        XCTAssertEqual(counts.inFlight, 2)
        XCTAssertEqual(counts.connections, 2)
    }

    /// Issue 9: a reload while a background run uses the engine used to leave the old limits in
    /// force for good; now the engine is rebuilt once that run is over, before the stop run.
    func testANewMaxConcurrentRequestsReachesTheStopRunAfterAReloadDuringABackgroundRun() throws {
        let server = try EndSessionServer()
        let scratch = try ScratchDirectory("reload-limits")
        let daemon = try DaemonProcess(config: config(server, stop: "MaxConcurrentRequests=1"), scratch: scratch)
        XCTAssertNotNil(daemon.waitUntilReady())
        let background = try register("slow1500-background", on: daemon)
        let end = Process()
        end.executableURL = URL(fileURLWithPath: BuiltBinary.path)
        end.arguments = ["end", background, "--socket", daemon.socketPath]
        end.standardOutput = FileHandle.nullDevice
        end.standardError = FileHandle.nullDevice
        try end.run()
        let deadline = Date().addingTimeInterval(5)
        while (try server.stats()["in_flight"] as? Int) != 1, Date() < deadline { usleep(20_000) }
        _ = try scratch.write("session-cleanup.conf", config(server, stop: "MaxConcurrentRequests=4"))
        daemon.signal(SIGHUP)
        XCTAssertNotNil(daemon.notify.receive(until: { $0.hasPrefix("READY=1") }, timeout: 5), "reloaded")
        end.waitUntilExit()
        XCTAssertEqual(end.terminationStatus, 0, "the background run ended its session")
        for index in 0..<8 { _ = try register("slow300-\(index)", on: daemon) }
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 10), 0, daemon.stderr)
        XCTAssertEqual(try serverCounts(server).inFlight, 4, "the stop run had the reloaded limit")
    }

    func testAnEndpointsProxyAndItsCredentialFromCredentialsDirectoryAreUsed() throws {
        let server = try EndSessionServer()
        let proxy = try ProxyServer(.http, user: "svc", password: "pr0xy-secret")
        let credentials = try ScratchDirectory("proxy-credentials")
        _ = try credentials.write("proxy-login", "svc:pr0xy-secret\n")
        let daemon = try DaemonProcess(
            config: config(
                server, stop: "",
                endpoint: "Proxy=\(proxy.url)\nProxyCredential=proxy-login\nNoProxy=internal.example\n"),
            environment: ["CREDENTIALS_DIRECTORY": credentials.path, "http_proxy": "http://127.0.0.1:9"])
        XCTAssertNotNil(daemon.waitUntilReady())
        let id = try register("ok-proxied", on: daemon)
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 10), 0, daemon.stderr)
        XCTAssertEqual(JournalLines.callOutcomes(daemon.stderr)["\(id)/auth"]?["OUTCOME"], "ended")
        XCTAssertTrue(proxy.log.contains("/user/ok-proxied/endsession"), proxy.log)
        XCTAssertFalse(daemon.stderr.contains("pr0xy-secret"))
    }

    func testAMissingOrMalformedProxyCredentialStopsTheDaemonFromStarting() throws {
        let server = try EndSessionServer()
        let credentials = try ScratchDirectory("bad-credentials")
        _ = try credentials.write("no-colon", "justapassword\n")
        for (name, complaint) in [("absent", "ProxyCredential=absent"), ("no-colon", "must hold user:password")] {
            let daemon = try DaemonProcess(
                config: config(server, stop: "", endpoint: "Proxy=http://127.0.0.1:9\nProxyCredential=\(name)\n"),
                environment: ["CREDENTIALS_DIRECTORY": credentials.path])
            XCTAssertEqual(daemon.waitForExit(timeout: 10), 78, "a configuration that cannot work: \(name)")
            XCTAssertTrue(daemon.stderr.contains(complaint), daemon.stderr)
            XCTAssertFalse(daemon.stderr.contains("justapassword"))
        }
    }
}
