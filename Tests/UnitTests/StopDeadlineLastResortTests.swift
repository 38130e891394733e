import EventLoop
import Glibc
import Systemd
import XCTest

/// The stop deadline's last resort on its own: a process whose main thread never comes back (a
/// starved or stuck event loop) still exits at the time it was given, with the status set last and
/// a line on standard error. Checked in a child process, which the keeper ends.
final class StopDeadlineLastResortTests: XCTestCase {
    func testAProcessWhoseMainThreadIsStuckExitsAtTheLastResortWithTheStatusSetLast() throws {
        var pipeEnds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&pipeEnds), 0, "pipe")
        let clock = SystemMonotonicClock()
        let started = clock.now()
        let child = fork()
        if child == 0 {
            close(pipeEnds[0])
            guard dup2(pipeEnds[1], STDERR_FILENO) == STDERR_FILENO else { _exit(2) }
            let keeper = SystemdStopDeadlineKeeper(notifySocket: nil, reportError: { _ in _exit(3) })
            let now = clock.now()
            keeper.keep(
                until: now.advanced(by: .seconds(5)), exitAt: now.advanced(by: .milliseconds(300)), status: 75)
            keeper.settle(status: 69)
            // The main thread never returns: only the keeper's thread can end the process.
            while true { sleep(60) }
        }
        close(pipeEnds[1])
        XCTAssertGreaterThan(child, 0, "fork")
        var status: Int32 = 0
        var exited = false
        for _ in 0..<500 where !exited {
            if waitpid(child, &status, WNOHANG) == child { exited = true } else { usleep(10_000) }
        }
        let elapsed = clock.now().duration(since: started)
        if !exited {
            kill(child, SIGKILL)
            _ = waitpid(child, &status, 0)
        }
        var output = [UInt8](repeating: 0, count: 4096)
        let count = read(pipeEnds[0], &output, output.count)
        close(pipeEnds[0])
        let text = String(decoding: output.prefix(max(count, 0)), as: UTF8.self)

        XCTAssertTrue(exited, "the child was still running after 5 s: the last resort did not fire")
        XCTAssertTrue(status & 0x7f == 0, "the child ended by signal \(status & 0x7f), not by exiting")
        XCTAssertEqual((status >> 8) & 0xff, 69, "the status set last (75 first, then 69)")
        XCTAssertGreaterThanOrEqual(elapsed, .milliseconds(290), "not before the time it was given")
        XCTAssertLessThan(elapsed, .seconds(3), "at the time it was given, not much later")
        XCTAssertTrue(text.contains("before systemd's SIGKILL"), "says why on standard error: \(text)")
    }
}
