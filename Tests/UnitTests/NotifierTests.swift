import Glibc
import XCTest

@testable import EventLoop
@testable import Systemd
@testable import TestSupport

/// A notify socket whose queue the test fills and drains; its descriptor is a real socket (always
/// writable) so the event loop can watch it.
private final class FakeNotifyChannel: NotifyChannel {
    var full = true
    var delivered: [String] = []
    let descriptor: Int32
    private let peer: Int32

    init() throws {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0, &fds) == 0 else { throw POSIXError(.EIO) }
        descriptor = fds[0]
        peer = fds[1]
    }

    deinit {
        close(descriptor)
        close(peer)
    }

    func send(_ bytes: [UInt8]) -> Int32 {
        guard !full else { return -EAGAIN }
        delivered.append(String(decoding: bytes, as: UTF8.self))
        return 0
    }

    func reconnect() -> Bool { false }
}

final class NotifierTests: XCTestCase {
    private let clock = ManualClock()
    private let journal = MemoryJournal()
    private var loop: EventLoop!
    private var channel: FakeNotifyChannel!
    private var notifier: SystemdNotifier!

    override func setUpWithError() throws {
        loop = try EventLoop(clock: clock)
        channel = try FakeNotifyChannel()
        notifier = SystemdNotifier(socket: channel, journal: journal, clock: clock)
        notifier.attach(to: loop)
    }

    private func turn() throws { try loop.runOnce(maximumWait: .zero) }

    func testAStateChangeWaitsForRoomAndArrivesInOrder() throws {
        notifier.send([.stopping, .extendTimeout(.seconds(30))])
        notifier.send([.status("a")])
        XCTAssertEqual(notifier.pendingMessages, 2)
        try turn()
        XCTAssertEqual(channel.delivered, [], "the queue is still full")
        channel.full = false
        try turn()
        XCTAssertEqual(channel.delivered, ["STOPPING=1\nEXTEND_TIMEOUT_USEC=30000000", "STATUS=a"])
        XCTAssertEqual(notifier.pendingMessages, 0)
        XCTAssertTrue(journal.entries(event: "notify-failed").isEmpty)
    }

    func testAWaitingStatusIsReplacedByTheNextButAStateChangeNeverIs() throws {
        notifier.send([.status("a")])
        notifier.send([.status("b")])
        notifier.send([.ready, .status("c")])
        notifier.send([.status("d")])
        notifier.send([.watchdog])
        notifier.send([.watchdog])
        channel.full = false
        try turn()
        XCTAssertEqual(channel.delivered, ["STATUS=b", "READY=1\nSTATUS=c", "STATUS=d", "WATCHDOG=1"])
    }

    func testAStateChangeNotDeliveredWithinTheBoundIsJournaledLoudly() throws {
        notifier.send([.stopping])
        clock.advance(SystemdNotifier.deliveryBound - .milliseconds(1))
        try turn()
        XCTAssertTrue(journal.entries(event: "notify-failed").isEmpty)
        clock.advance(.milliseconds(1))
        try turn()
        let entry = try XCTUnwrap(journal.entries(event: "notify-failed").first)
        XCTAssertEqual(entry.priority, .error)
        XCTAssertEqual(entry.value(of: .notifyState), "STOPPING=1")
        XCTAssertEqual(notifier.pendingMessages, 0)
    }

    func testFlushGivesUpAtItsDeadlineAndSaysWhichStateChangesWereLost() throws {
        let realClock = SystemMonotonicClock()
        let flushing = SystemdNotifier(socket: channel, journal: journal, clock: realClock)
        flushing.send([.status("routine")])
        flushing.send([.ready])
        let started = realClock.now()
        flushing.flush(until: started.advanced(by: .milliseconds(50)))
        XCTAssertLessThan(realClock.now().duration(since: started), .seconds(1))
        XCTAssertEqual(journal.entries(event: "notify-failed").map { $0.value(of: .notifyState) }, ["READY=1"])
    }

    func testWithoutANotifySocketNothingIsSentOrQueued() {
        let silent = SystemdNotifier(socket: nil, journal: journal, clock: clock)
        silent.send([.ready])
        XCTAssertEqual(silent.pendingMessages, 0)
    }
}
