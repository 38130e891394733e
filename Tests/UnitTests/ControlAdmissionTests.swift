import XCTest

@testable import Control
@testable import EventLoop

/// Who may open another control connection: the total, root's reserve, the per-user limit, and
/// how often a refusal is journaled.
final class ControlAdmissionTests: XCTestCase {
    private let limits = ControlServer.Limits(maxClients: 6, maxClientsPerUser: 2, reservedForRoot: 2)
    private let root = PeerCredentials(pid: 1, uid: 0, gid: 0)

    private func user(_ uid: UInt32) -> PeerCredentials { PeerCredentials(pid: 100, uid: uid, gid: uid) }

    func testOneUserIsHeldToItsLimitWhileOthersAreNot() {
        var admission = ControlAdmission(limits: limits)
        admission.admitted(user(1000))
        admission.admitted(user(1000))
        XCTAssertEqual(
            admission.refusal(for: user(1000)), "too many control connections from uid 1000 (2); try again later")
        XCTAssertNil(admission.refusal(for: user(1001)))
        admission.closed(user(1000))
        XCTAssertNil(admission.refusal(for: user(1000)), "a closed connection frees its place")
    }

    func testTheLastConnectionsAreRootsAndThenNobodysAtAll() {
        var admission = ControlAdmission(limits: limits)
        for uid: UInt32 in [1000, 1000, 1001, 1001] { admission.admitted(user(uid)) }
        XCTAssertEqual(
            admission.refusal(for: user(1002)),
            "too many control connections (4 for users other than root); try again later")
        XCTAssertNil(admission.refusal(for: root))
        admission.admitted(root)
        admission.admitted(root)
        XCTAssertEqual(admission.count, 6)
        XCTAssertEqual(admission.refusal(for: root), "too many control connections (6); try again later")
    }

    func testRefusalsAreJournaledAtMostOnceEveryTenSeconds() {
        var admission = ControlAdmission(limits: limits)
        let start = MonotonicInstant(microseconds: 5_000_000)
        XCTAssertTrue(admission.journalsRefusal(at: start))
        XCTAssertFalse(admission.journalsRefusal(at: start.advanced(by: .seconds(9))))
        XCTAssertTrue(admission.journalsRefusal(at: start.advanced(by: .seconds(10))))
        XCTAssertFalse(admission.journalsRefusal(at: start.advanced(by: .seconds(11))))
    }
}
