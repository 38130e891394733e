import CProcessSecrecy
import Glibc
import XCTest

@testable import Daemon

/// The daemon's process is kept out of core dumps: checked in a child process, so that the test
/// process itself stays as it was.
final class CoreDumpExclusionTests: XCTestCase {
    func testAfterItTheProcessIsNotDumpableAndItsCoreLimitIsZero() throws {
        XCTAssertEqual(cps_is_dumpable(), 1, "a test process starts dumpable: the check below can fail")
        let child = fork()
        if child == 0 {
            var ok = (try? CoreDumpExclusion.apply()) != nil
            var limit = rlimit()
            ok = ok && cps_is_dumpable() == 0 && getrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &limit) == 0
            ok = ok && limit.rlim_cur == 0 && limit.rlim_max == 0
            _exit(ok ? 0 : 1)
        }
        XCTAssertGreaterThan(child, 0, "fork")
        var status: Int32 = 0
        XCTAssertEqual(waitpid(child, &status, 0), child)
        XCTAssertEqual(status, 0, "the child was still dumpable, or kept a core limit")
    }
}
