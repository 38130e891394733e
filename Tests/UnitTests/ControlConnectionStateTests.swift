import XCTest

@testable import Control
@testable import EventLoop

/// The control connection's state machine, without a socket: every transition the server and the
/// connection make, and what each state answers (next step, deadline, reading, writing).
final class ControlConnectionStateTests: XCTestCase {
    private let timeout: Duration = .seconds(5)
    private let connected = MonotonicInstant(microseconds: 1_000_000)

    private func instant(after seconds: Int) -> MonotonicInstant { connected.advanced(by: .seconds(seconds)) }

    func testANewConnectionAwaitsARequestTimedFromItsConnection() {
        let state = ControlConnectionState(connectedAt: connected)
        XCTAssertEqual(state.next, .takeLine)
        XCTAssertTrue(state.readsInput)
        XCTAssertFalse(state.isSending)
        XCTAssertTrue(state.takesReplies)
        XCTAssertEqual(state.deadline(timeout: timeout), instant(after: 5))
    }

    func testARequestWithTheHandlerStopsTheClockAndTakesNoFurtherLine() {
        var state = ControlConnectionState(connectedAt: connected)
        XCTAssertEqual(state.requestTaken(), 1)
        XCTAssertEqual(state.cycle, .awaitingReply(serial: 1))
        XCTAssertEqual(state.next, .wait)
        XCTAssertNil(state.deadline(timeout: timeout))
        XCTAssertTrue(state.readsInput, "bytes are still read (up to the limit) while the handler works")
    }

    func testOnlyTheFirstReplyToTheRequestWithTheHandlerIsTaken() {
        var state = ControlConnectionState(connectedAt: connected)
        let first = state.requestTaken()
        XCTAssertFalse(state.replyGiven(serial: first + 1, at: instant(after: 1)), "no such request")
        XCTAssertTrue(state.replyGiven(serial: first, at: instant(after: 1)))
        XCTAssertFalse(state.replyGiven(serial: first, at: instant(after: 2)), "a second reply")
        let second = state.requestTaken()
        XCTAssertEqual(second, first + 1)
        XCTAssertFalse(state.replyGiven(serial: first, at: instant(after: 3)), "a late reply to the earlier request")
        XCTAssertEqual(state.cycle, .awaitingReply(serial: second))
    }

    func testAReplyRestartsTheWaitAndItsProgressMovesOnlyTheWriteDeadline() {
        var state = ControlConnectionState(connectedAt: connected)
        let serial = state.requestTaken()
        XCTAssertTrue(state.replyGiven(serial: serial, at: instant(after: 10)))
        state.replyQueued()
        XCTAssertTrue(state.isSending)
        XCTAssertEqual(state.next, .wait, "no line is taken while the reply is written")
        XCTAssertEqual(state.deadline(timeout: timeout), instant(after: 15))
        state.sent(at: instant(after: 13))
        XCTAssertEqual(state.deadline(timeout: timeout), instant(after: 18), "a reply being read still progresses")
        state.replySent()
        XCTAssertFalse(state.isSending)
        XCTAssertEqual(state.next, .takeLine)
        XCTAssertEqual(
            state.deadline(timeout: timeout), instant(after: 15), "the wait for the next request began at the reply")
    }

    func testAReplyTheServerMakesItselfKeepsTheConnectionsClock() {
        var state = ControlConnectionState(connectedAt: connected)
        state.replyQueued()  // a bad-request line's answer
        XCTAssertEqual(
            state.cycle,
            .sendingReply(ControlConnectionState.Clock(waitingSince: connected, lastSent: connected)))
        XCTAssertEqual(state.deadline(timeout: timeout), instant(after: 5))
        state.replySent()
        XCTAssertEqual(state.deadline(timeout: timeout), instant(after: 5), "a bad line does not buy time")
    }

    func testAfterEndOfInputTheLinesSentAreStillAnsweredButNothingIsRead() {
        var state = ControlConnectionState(connectedAt: connected)
        state.inputEnded()
        XCTAssertEqual(state.ending, .inputEnded)
        XCTAssertFalse(state.readsInput)
        XCTAssertEqual(state.next, .takeLine)
        let serial = state.requestTaken()
        XCTAssertTrue(state.replyGiven(serial: serial, at: instant(after: 1)))
        state.replyQueued()
        XCTAssertTrue(state.isSending, "the reply is still written")
        state.replySent()
        XCTAssertEqual(state.next, .takeLine)
    }

    func testATooLongLineMakesItsReplyTheLastThenCloses() {
        var state = ControlConnectionState(connectedAt: connected)
        state.lineTooLong()
        XCTAssertEqual(state.ending, .afterReply)
        XCTAssertFalse(state.readsInput)
        state.replyQueued()
        XCTAssertEqual(state.next, .wait, "the too-large reply is written first")
        state.replySent()
        XCTAssertEqual(state.next, .close)
        state.inputEnded()
        XCTAssertEqual(state.ending, .afterReply, "end of file changes nothing then")
    }

    func testAGonePeerDropsTheReplyBeingWrittenButItsRequestsAreStillHandled() {
        var state = ControlConnectionState(connectedAt: connected)
        state.replyQueued()
        XCTAssertTrue(state.isSending)
        state.peerGone()
        XCTAssertEqual(state.ending, .peerGone)
        XCTAssertFalse(state.isSending)
        XCTAssertFalse(state.takesReplies)
        XCTAssertFalse(state.readsInput)
        XCTAssertEqual(state.next, .takeLine, "the lines received are still handled")
        let serial = state.requestTaken()
        XCTAssertTrue(state.replyGiven(serial: serial, at: instant(after: 1)))
        state.replyQueued()
        XCTAssertFalse(state.isSending, "its reply is dropped")
        state.lineTooLong()
        state.inputEnded()
        XCTAssertEqual(state.ending, .peerGone, "nothing undoes a gone peer")
    }

    func testAClosedConnectionDoesNothingMore() {
        var state = ControlConnectionState(connectedAt: connected)
        let serial = state.requestTaken()
        state.close()
        XCTAssertTrue(state.isClosed)
        XCTAssertEqual(state.next, .wait)
        XCTAssertNil(state.deadline(timeout: timeout))
        XCTAssertFalse(state.takesReplies)
        XCTAssertFalse(state.replyGiven(serial: serial, at: instant(after: 1)), "a reply after the close is dropped")
        state.replyQueued()
        XCTAssertTrue(state.isClosed)
    }
}
