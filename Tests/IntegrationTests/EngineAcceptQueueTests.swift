import Glibc
import XCTest

@testable import EventLoop
@testable import HTTPEngine
@testable import Vocabulary

/// What the engine reads from the connections of a server whose accept queue is full (issue 25):
/// a SYN the kernel dropped is seen waiting (`connectPending`), and a request written to a
/// connection that sits in the accept queue is acknowledged by the server's TCP (so it is not
/// taken for a lost one: `requestUnacknowledged` stays false).
final class EngineAcceptQueueTests: XCTestCase {
    func testASYNDroppedByAFullAcceptQueueIsSeenWaitingAndAQueuedRequestIsAcknowledged() throws {
        // A listener that never accepts, with the smallest queue (backlog 0: one connection).
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        XCTAssertGreaterThanOrEqual(listener, 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) }
        }
        XCTAssertEqual(bound, 0)
        XCTAssertEqual(listen(listener, 0), 0)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(listener, $0, &length) }
        }
        let port = Int(UInt16(bigEndian: address.sin_port))

        let loop = try EventLoop()
        let engine = try HTTPEngine(loop: loop, limits: HTTPEngine.Limits(maxTransfers: 16, maxTransfersPerOrigin: 16))
        var ids: [TransferID] = []
        for index in 0..<4 {
            let request = HTTPRequest(
                url: "http://127.0.0.1:\(port)/user/k\(index)/endsession", redactedURL: "queue-\(index)",
                timeout: .seconds(10))
            ids.append(try engine.start(request) { _ in })
        }
        // Well before a dropped SYN's first retransmission (1 s).
        let deadline = loop.clock.now().advanced(by: .milliseconds(700))
        while loop.clock.now() < deadline { try loop.runOnce(maximumWait: .milliseconds(20)) }
        let pending = ids.filter { engine.connectPending($0) }
        let sent = ids.filter { engine.requestSent($0) }
        XCTAssertFalse(pending.isEmpty, "SYNs beyond the queue wait for the kernel's retransmission")
        XCTAssertFalse(sent.isEmpty, "the queued connection took its request")
        XCTAssertTrue(Set(pending).isDisjoint(with: sent))
        for id in sent {
            XCTAssertFalse(engine.requestUnacknowledged(id), "the queued connection's TCP acknowledged it")
        }
        engine.cancelAll()
    }
}
