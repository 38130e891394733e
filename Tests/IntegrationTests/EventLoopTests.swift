import Glibc
import XCTest

@testable import Basics
@testable import EventLoop

/// The event loop on real descriptors (pipes).
final class EventLoopTests: XCTestCase {
    private func makePipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw SystemCallError.current("pipe") }
        for fd in fds { _ = fcntl(fd, F_SETFL, O_NONBLOCK) }
        return (fds[0], fds[1])
    }

    private func writeByte(_ fd: Int32) {
        var byte: UInt8 = 1
        XCTAssertEqual(write(fd, &byte, 1), 1)
    }

    /// A handler that closes another descriptor and watches a new one under the same number
    /// used to hand the new handler the old descriptor's event, queued in the same batch.
    func testAnEventQueuedForAClosedDescriptorNeverReachesItsSuccessor() throws {
        let loop = try EventLoop()
        let first = try makePipe()
        let second = try makePipe()
        defer { for fd in [first.read, first.write, second.write] { close(fd) } }
        var successorCalls = 0
        var successor: (read: Int32, write: Int32) = (-1, -1)
        try loop.watch(first.read) { _ in
            loop.unwatch(second.read)
            close(second.read)
            // An empty pipe: not readable, so no event of its own.
            successor = (try? self.makePipe()) ?? (-1, -1)
            XCTAssertEqual(successor.read, second.read, "the number is reused")
            try? loop.watch(successor.read) { _ in successorCalls += 1 }
        }
        try loop.watch(second.read) { _ in XCTFail("second must be closed by first's handler before its turn") }
        writeByte(first.write)
        writeByte(second.write)
        try loop.runOnce(maximumWait: .milliseconds(100))
        XCTAssertEqual(successorCalls, 0, "the old descriptor's event was dropped")
        for fd in [successor.read, successor.write] where fd >= 0 { close(fd) }
    }

    /// libcurl closes its sockets itself; the kernel then forgets the registration. Watching
    /// the number again (a new socket) used to fail with ENOENT from EPOLL_CTL_MOD.
    func testWatchingAgainAfterTheDescriptorWasClosedBehindTheLoopsBack() throws {
        let loop = try EventLoop()
        let old = try makePipe()
        try loop.watch(old.read) { _ in }
        close(old.read)
        close(old.write)
        let fresh = try makePipe()
        defer { for fd in [fresh.read, fresh.write] { close(fd) } }
        XCTAssertEqual(fresh.read, old.read, "the number is reused")
        var calls = 0
        XCTAssertNoThrow(try loop.watch(fresh.read) { _ in calls += 1 })
        writeByte(fresh.write)
        try loop.runOnce(maximumWait: .milliseconds(100))
        XCTAssertEqual(calls, 1)
        XCTAssertNoThrow(try loop.update(fresh.read, readable: true, writable: false))
        loop.unwatch(fresh.read)
        XCTAssertThrowsError(try loop.update(fresh.read, readable: true, writable: false), "not watched")
    }
}
