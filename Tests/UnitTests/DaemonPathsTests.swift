import XCTest

@testable import Daemon

final class DaemonPathsTests: XCTestCase {
    private func environment(_ values: [String: String]) -> (String) -> String? { { values[$0] } }

    func testTheSystemDaemonUsesItsUnitsDirectoriesWhateverItsUID() {
        let paths = DaemonPaths.resolve(
            .system, configOption: nil,
            environment: environment([
                "STATE_DIRECTORY": "/var/lib/session-cleanup", "RUNTIME_DIRECTORY": "/run/session-cleanup",
                "XDG_CONFIG_HOME": "/home/u/.config",
            ]))
        XCTAssertEqual(paths.instance, .system)
        XCTAssertEqual(paths.configFile, "/etc/session-cleanup/session-cleanup.conf")
        XCTAssertFalse(paths.configRequired)
        XCTAssertEqual(paths.stateDirectory, "/var/lib/session-cleanup")
        XCTAssertEqual(paths.controlSocket, "/run/session-cleanup/control.sock")
        let bare = DaemonPaths.resolve(.system, configOption: "/x.conf", environment: environment([:]))
        XCTAssertEqual(bare.stateDirectory, "/var/lib/session-cleanup")
        XCTAssertEqual(bare.runtimeDirectory, "/run/session-cleanup")
        XCTAssertEqual(bare.configFile, "/x.conf")
        XCTAssertTrue(bare.configRequired)
    }

    func testAUserDaemonUsesTheXDGDirectories() {
        let paths = DaemonPaths.resolve(
            .user, configOption: nil,
            environment: environment([
                "HOME": "/home/u", "XDG_CONFIG_HOME": "/cfg", "XDG_STATE_HOME": "/st",
                "XDG_RUNTIME_DIR": "/run/user/1000",
            ]))
        XCTAssertEqual(paths.configFile, "/cfg/session-cleanup/session-cleanup.conf")
        XCTAssertEqual(paths.stateDirectory, "/st/session-cleanup")
        XCTAssertEqual(paths.controlSocket, "/run/user/1000/session-cleanup/control.sock")
        let defaults = DaemonPaths.resolve(
            .user, configOption: nil,
            environment: environment(["HOME": "/home/u", "XDG_CONFIG_HOME": "relative", "XDG_RUNTIME_DIR": "/r"]))
        XCTAssertEqual(
            defaults.configFile, "/home/u/.config/session-cleanup/session-cleanup.conf", "relative is ignored")
        XCTAssertEqual(defaults.stateDirectory, "/home/u/.local/state/session-cleanup")
        XCTAssertEqual(defaults.runtimeDirectory, "/r/session-cleanup")
    }

    func testAUserUnitsOwnDirectoriesWin() {
        let paths = DaemonPaths.resolve(
            .user, configOption: nil,
            environment: environment([
                "HOME": "/home/u", "STATE_DIRECTORY": "/home/u/.config/session-cleanup",
                "RUNTIME_DIRECTORY": "/run/user/1000/session-cleanup", "XDG_RUNTIME_DIR": "/run/user/1000",
            ]))
        XCTAssertEqual(paths.stateDirectory, "/home/u/.config/session-cleanup")
        XCTAssertEqual(paths.controlSocket, "/run/user/1000/session-cleanup/control.sock")
    }

    func testClientsFindTheSocketTheDaemonMakes() {
        let env = environment(["XDG_RUNTIME_DIR": "/run/user/1000"])
        XCTAssertEqual(DaemonPaths.controlSocket(of: .system, environment: env), "/run/session-cleanup/control.sock")
        XCTAssertEqual(
            DaemonPaths.controlSocket(of: .user, environment: env),
            DaemonPaths.resolve(.user, configOption: nil, environment: env).controlSocket)
    }
}
