import CProcessSecrecy
import Glibc
import XCTest

@testable import Daemon

/// The daemon's process is kept out of core dumps: checked in a child process, so that the test
/// process itself stays as it was. The child is made dumpable first: the test process is not any
/// more once an integration test has run the daemon in it.
final class CoreDumpExclusionTests: XCTestCase {
    func testAfterItTheProcessIsNotDumpableAndItsCoreLimitIsZero() throws {
        let child = fork()
        if child == 0 {
            guard cps_make_dumpable() == 0, cps_is_dumpable() == 1 else { _exit(2) }
            var ok = (try? CoreDumpExclusion.apply()) != nil
            var limit = rlimit()
            ok = ok && cps_is_dumpable() == 0 && getrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &limit) == 0
            ok = ok && limit.rlim_cur == 0 && limit.rlim_max == 0
            _exit(ok ? 0 : 1)
        }
        XCTAssertGreaterThan(child, 0, "fork")
        var status: Int32 = 0
        XCTAssertEqual(waitpid(child, &status, 0), child)
        XCTAssertNotEqual(status, 2 << 8, "the child could not be made dumpable: the check would mean nothing")
        XCTAssertEqual(status, 0, "the child was still dumpable, or kept a core limit")
    }
}
