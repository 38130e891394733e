import Foundation
import Glibc
import XCTest

@testable import Basics
@testable import Systemd

/// The D-Bus question asked at SIGTERM, against buses that fail in the ways a real one can: not
/// there, there but silent, hanging up. Each must end within its bound and say what failed, so
/// the daemon falls back to a stop run in time.
final class ServiceManagerQueryTests: XCTestCase {
    private let unit = ServiceManagerUnit(manager: .system, name: "session-cleanup.service")

    /// A Unix socket that listens (connections complete in its backlog) but never answers.
    private final class SilentPeer: Sendable {
        let path: String
        let fd: Int32

        init(path: String) throws {
            self.path = path
            fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0, let address = UnixSocketAddress(path: path), address.bind(fd) == 0, listen(fd, 8) == 0
            else { throw TestSetupError("cannot listen on \(path): errno \(errno)") }
        }

        /// Accepts one waiting connection and closes it at once.
        func hangUpOnNextClient() {
            let client = accept(fd, nil, nil)
            if client >= 0 { close(client) }
        }

        deinit { close(fd) }
    }

    private func measure(_ body: () -> Result<ServiceManagerAnswer, ServiceManagerQueryError>) -> (
        Result<ServiceManagerAnswer, ServiceManagerQueryError>, Duration
    ) {
        let clock = ContinuousClock()
        let start = clock.now
        let result = body()
        return (result, clock.now - start)
    }

    func testNoBusFailsAtOnceNamingTheConnection() throws {
        let scratch = try ScratchDirectory("nobus")
        let address = "unix:path=\(scratch.path)/no-such-socket"
        let (result, took) = measure {
            SystemdServiceManager.ask(about: unit, timeout: .seconds(5), address: address)
        }
        guard case .failure(let error) = result else { return XCTFail("answered: \(result)") }
        XCTAssertEqual(error.errno, ENOENT, "\(error)")
        XCTAssertTrue(error.step.contains("connect to \(address)"), error.step)
        XCTAssertLessThan(took, .milliseconds(500))
    }

    func testASilentBusTimesOutWithinTheBound() throws {
        let scratch = try ScratchDirectory("silentbus")
        let peer = try SilentPeer(path: scratch.path + "/bus")
        let (result, took) = measure {
            SystemdServiceManager.ask(about: unit, timeout: .milliseconds(300), address: "unix:path=\(peer.path)")
        }
        guard case .failure(let error) = result else { return XCTFail("answered: \(result)") }
        XCTAssertTrue(error.isTimeout, "\(error)")
        XCTAssertEqual(error.description, "no answer within 300 ms")
        XCTAssertGreaterThanOrEqual(took, .milliseconds(295))
        XCTAssertLessThan(took, .milliseconds(800), "the bound holds while authentication hangs")
    }

    func testABusThatHangsUpFailsWithoutWaitingOutTheBound() throws {
        let scratch = try ScratchDirectory("hangup")
        let peer = try SilentPeer(path: scratch.path + "/bus")
        let (result, took) = measure {
            // The connection completes in the backlog; the peer then closes it before answering.
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { peer.hangUpOnNextClient() }
            return SystemdServiceManager.ask(about: unit, timeout: .seconds(5), address: "unix:path=\(peer.path)")
        }
        guard case .failure(let error) = result else { return XCTFail("answered: \(result)") }
        XCTAssertFalse(error.isTimeout, "\(error)")
        XCTAssertLessThan(took, .seconds(2))
    }

    func testAUserManagerWithoutAUserBusIsAskedOverItsPrivateSocket() throws {
        let scratch = try ScratchDirectory("userbus")
        try FileManager.default.createDirectory(atPath: scratch.path + "/systemd", withIntermediateDirectories: true)
        let savedRuntime = getenv("XDG_RUNTIME_DIR").map { String(cString: $0) }
        let savedSession = getenv("DBUS_SESSION_BUS_ADDRESS").map { String(cString: $0) }
        defer {
            if let savedRuntime { setenv("XDG_RUNTIME_DIR", savedRuntime, 1) } else { unsetenv("XDG_RUNTIME_DIR") }
            if let savedSession { setenv("DBUS_SESSION_BUS_ADDRESS", savedSession, 1) }
        }
        setenv("XDG_RUNTIME_DIR", scratch.path, 1)
        unsetenv("DBUS_SESSION_BUS_ADDRESS")
        let user = ServiceManagerUnit(manager: .user, name: "session-cleanup.service")

        // Neither $XDG_RUNTIME_DIR/bus nor the private socket: the error names both.
        guard case .failure(let missing) = SystemdServiceManager.ask(about: user, timeout: .seconds(2)) else {
            return XCTFail("answered without any socket")
        }
        XCTAssertTrue(missing.step.contains("\(scratch.path)/systemd/private"), missing.step)

        // With only the private socket (a silent one), the query goes there and times out.
        let peer = try SilentPeer(path: scratch.path + "/systemd/private")
        let (result, took) = measure { SystemdServiceManager.ask(about: user, timeout: .milliseconds(200)) }
        guard case .failure(let error) = result else { return XCTFail("answered: \(result)") }
        XCTAssertTrue(error.isTimeout, "the private socket was used: \(error)")
        XCTAssertLessThan(took, .milliseconds(700))
        _ = peer
    }

    func testThisTestProcessIsNotADaemonUnitUnlessSystemdStartedIt() {
        // Outside systemd (this host's PID 1 is not systemd) there is no unit; under a systemd
        // host the test runs in some unit, which is named. Either way the call does not fail.
        if let unit = ServiceManagerUnit.ofThisProcess() {
            XCTAssertFalse(unit.name.isEmpty)
        }
    }
}
