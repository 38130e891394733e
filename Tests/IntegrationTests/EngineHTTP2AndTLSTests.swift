import Foundation
import XCTest

@testable import EventLoop
@testable import HTTPEngine
@testable import Vocabulary

/// The engine against Debian's nginx on 127.0.0.1: HTTP/2 by ALPN, `HTTPVersion` pinning,
/// multiplexing on few connections, and TLS sessions resumed across the engine's handles.
final class EngineHTTP2AndTLSTests: XCTestCase {
    private var loop: EventLoop!
    private var ca: TestCertificateAuthority!

    override func setUpWithError() throws {
        loop = try EventLoop()
        ca = try TestCertificateAuthority()
    }

    override func tearDown() {
        loop = nil
        ca = nil
    }

    private func request(_ server: NginxServer, _ path: String, version: HTTPRequest.Version = .automatic)
        -> HTTPRequest
    {
        HTTPRequest(
            url: server.base + path, redactedURL: path, timeout: .seconds(10), caFile: ca.caFile,
            origin: HTTPOrigin(url: server.base), version: version)
    }

    /// Runs `requests` all at once to completion.
    private func run(_ engine: HTTPEngine, _ requests: [HTTPRequest]) throws -> [HTTPResult] {
        var results: [HTTPResult] = []
        for request in requests { try engine.start(request) { results.append($0) } }
        let deadline = loop.clock.now().advanced(by: .seconds(20))
        while results.count < requests.count {
            guard loop.clock.now() < deadline else { throw TestSetupError("transfers did not finish in 20 s") }
            try loop.runOnce(maximumWait: .milliseconds(50))
        }
        return results
    }

    func testHTTP2IsNegotiatedWhereOfferedAndHTTPVersion11PinsHTTP1() throws {
        let h2 = try NginxServer(mode: .http2, certificate: ca.server)
        let h1 = try NginxServer(mode: .https, certificate: ca.server)
        let engine = try HTTPEngine(loop: loop, limits: HTTPEngine.Limits(maxTransfers: 8))
        let h3 = try NginxServer(mode: .https, certificate: ca.server)
        var unnamed = request(h3, "/origin-unnamed")
        unnamed.origin = nil
        let results = try run(
            engine,
            [request(h2, "/auto"), request(h2, "/pinned", version: .http1_1), request(h1, "/offered-none"), unnamed])
        XCTAssertEqual(results.map(\.status), [200, 200, 200, 200])
        let logged = h2.requests(atLeast: 2) + h1.requests(atLeast: 1)
        let byPath = Dictionary(uniqueKeysWithValues: logged.map { ($0.path, $0.httpVersion) })
        XCTAssertEqual(byPath, ["/auto": "HTTP/2.0", "/pinned": "HTTP/1.1", "/offered-none": "HTTP/1.1"])
        XCTAssertEqual(Set(results.compactMap(\.httpVersion)), ["2", "1.1"])
        // What the daemon remembers: the replies to `auto` requests (not the pinned one's) that
        // named their origin (one parsed from a URL may have a key in its host).
        let h2Origin = try XCTUnwrap(HTTPOrigin(url: h2.base))
        XCTAssertEqual(engine.versionsSeen, [h2Origin: true, try XCTUnwrap(HTTPOrigin(url: h1.base)): false])
    }

    /// An origin the daemon remembers answering in HTTP/1.1 is not probed: all 20 transfers are
    /// handed to libcurl in the first turn, before any connection is up; without the hint 19 wait
    /// for the probe's connection.
    func testAnOriginKnownToAnswerInHTTP1StartsEveryTransferAtOnce() throws {
        let server = try EndSessionServer(latencyMilliseconds: 200, certificate: ca.server)
        let base = server.endSessionURL
        let origin = try XCTUnwrap(HTTPOrigin(url: base))
        for known in [false, true] {
            let engine = try HTTPEngine(loop: loop, limits: HTTPEngine.Limits(maxTransfers: 20))
            if known { engine.knownHTTP1Origins = [origin] }
            var results: [HTTPResult] = []
            for index in 0..<20 {
                let request = HTTPRequest(
                    url: base.replacing("{session}", with: "ok-\(known)-\(index)"), redactedURL: "h1",
                    timeout: .seconds(10), caFile: ca.caFile, origin: origin)
                try engine.start(request) { results.append($0) }
            }
            try loop.runOnce(maximumWait: .zero)  // the hand-off
            XCTAssertEqual(engine.waitingCount, known ? 0 : 19, known ? "known" : "probed")
            let deadline = loop.clock.now().advanced(by: .seconds(20))
            while results.count < 20, loop.clock.now() < deadline { try loop.runOnce(maximumWait: .milliseconds(50)) }
            XCTAssertEqual(results.filter { $0.status == 200 }.count, 20)
            XCTAssertEqual(engine.versionsSeen, [origin: false])
        }
        XCTAssertEqual(try server.calls(for: "ok-true-0").successes, 1)
    }

    /// A hint that is out of date costs nothing but the probe: an origin remembered as HTTP/1.1
    /// that offers HTTP/2 now is spoken to in HTTP/2, and the engine says so.
    func testAnOriginRememberedAsHTTP1ThatOffersHTTP2NowIsToldAnew() throws {
        let server = try NginxServer(mode: .http2, certificate: ca.server)
        let origin = try XCTUnwrap(HTTPOrigin(url: server.base))
        let engine = try HTTPEngine(loop: loop, limits: HTTPEngine.Limits(maxTransfers: 8))
        engine.knownHTTP1Origins = [origin]
        var results: [HTTPResult] = []
        for index in 0..<4 { try engine.start(request(server, "/stale/\(index)")) { results.append($0) } }
        try loop.runOnce(maximumWait: .zero)  // the hand-off
        XCTAssertEqual(engine.waitingCount, 0, "the hint applies: no probe")
        let deadline = loop.clock.now().advanced(by: .seconds(20))
        while results.count < 4, loop.clock.now() < deadline { try loop.runOnce(maximumWait: .milliseconds(50)) }
        XCTAssertEqual(results.map(\.status), [200, 200, 200, 200])
        XCTAssertEqual(Set(results.compactMap(\.httpVersion)), ["2"])
        XCTAssertEqual(engine.versionsSeen, [origin: true])
    }

    func testManyTransfersToAnHTTP2OriginShareAConnectionPerHundredStreams() throws {
        let server = try NginxServer(mode: .http2, certificate: ca.server)
        let engine = try HTTPEngine(loop: loop, limits: HTTPEngine.Limits(maxTransfers: 150))
        let results = try run(engine, (0..<150).map { request(server, "/many/\($0)") })
        XCTAssertEqual(results.filter { $0.status == 200 }.count, 150)
        let logged = server.requests(atLeast: 150)
        XCTAssertEqual(logged.count, 150)
        XCTAssertTrue(logged.allSatisfy { $0.httpVersion == "HTTP/2.0" })
        // 150 at once need two connections of 100 streams; a fast local server may free
        // streams in time for one to do.
        var perConnection: [String: Int] = [:]
        for entry in logged { perConnection[entry.connection, default: 0] += 1 }
        XCTAssertLessThanOrEqual(Set(logged.map(\.connection)).count, 2, "\(perConnection) \(logged.map(\.connection))")
    }

    /// The probe's connection tells the version by ALPN (the test server offers none: HTTP/1.1)
    /// as soon as it is up, so the other transfers start while the probe's reply is still held
    /// by the server: all 20 are in flight at once, each on its own connection.
    func testAnHTTP1OnlyTLSOriginGetsAConnectionPerTransferOnceItsProbeHasConnected() throws {
        let server = try EndSessionServer(latencyMilliseconds: 1000, certificate: ca.server)
        let engine = try HTTPEngine(loop: loop, limits: HTTPEngine.Limits(maxTransfers: 20))
        let base = server.endSessionURL
        let requests = (0..<20).map {
            HTTPRequest(
                url: base.replacing("{session}", with: "ok-h1-\($0)"), redactedURL: "h1", timeout: .seconds(10),
                caFile: ca.caFile)
        }
        let results = try run(engine, requests)
        XCTAssertEqual(results.filter { $0.status == 200 }.count, 20)
        XCTAssertEqual(Set(results.compactMap(\.httpVersion)), ["1.1"])
        let stats = try server.stats()
        // Waiting for the probe's reply, the others would have started a second later, after it.
        XCTAssertEqual(stats["max_in_flight"] as? Int, 20, "the others started before the probe's reply")
        // Its own /_stats request is one more connection.
        XCTAssertEqual((stats["connections"] as? Int).map { $0 - 1 }, 20)
    }

    func testAReconnectResumesTheTLSSessionOfAnotherHandle() throws {
        // nginx closes each connection after one request: every request needs a new one.
        let server = try NginxServer(mode: .https, certificate: ca.server, keepaliveRequests: 1)
        let engine = try HTTPEngine(loop: loop, limits: HTTPEngine.Limits(maxTransfers: 4))
        for index in 0..<3 { XCTAssertEqual(try run(engine, [request(server, "/r\(index)")]).first?.status, 200) }
        // Three at once: each runs on its own handle, which must take the session from the share.
        XCTAssertEqual(try run(engine, (3..<6).map { request(server, "/r\($0)") }).map(\.status), [200, 200, 200])
        let logged = server.requests(atLeast: 6)
        XCTAssertEqual(Set(logged.map(\.connection)).count, 6)
        XCTAssertEqual(logged.map(\.tlsResumed), [false, true, true, true, true, true])
    }

    func testAReconnectResumesItsTLSSessionWithMoreOriginsThanOneShareCaches() throws {
        // A libcurl share caches 8 TLS sessions (7.88); 20 origins visited in turn push each
        // other's out of one share (then 7 of the 20 second visits resumed).
        let origins = 20
        let server = try NginxServer(mode: .https, certificate: ca.server, keepaliveRequests: 1, origins: origins)
        let engine = try HTTPEngine(loop: loop, limits: HTTPEngine.Limits(maxTransfers: 4))
        for round in 0..<2 {
            for origin in 0..<origins {
                let request = HTTPRequest(
                    url: server.base(origin: origin) + "/o\(origin)/r\(round)", redactedURL: "o\(origin)",
                    timeout: .seconds(10), caFile: ca.caFile, version: .http1_1)
                XCTAssertEqual(try run(engine, [request]).first?.status, 200)
            }
        }
        let logged = server.requests(atLeast: 2 * origins)
        XCTAssertEqual(logged.count, 2 * origins)
        XCTAssertEqual(Set(logged.map(\.connection)).count, 2 * origins)
        XCTAssertEqual(Set(logged.map(\.port)).count, origins)
        // Each origin's first connection is a full handshake, its second resumes.
        let firsts = logged.filter { $0.path.hasSuffix("/r0") }
        let seconds = logged.filter { $0.path.hasSuffix("/r1") }
        XCTAssertEqual(firsts.filter(\.tlsResumed).count, 0)
        XCTAssertEqual(seconds.filter(\.tlsResumed).map(\.path), seconds.map(\.path))
    }
}
