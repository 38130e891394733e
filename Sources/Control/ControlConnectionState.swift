import EventLoop

/// Where one control connection is in its life, as a value with no I/O: its request–reply
/// ``Cycle`` and what is left of its two directions (``Ending``). These methods are the only
/// transitions; ``ControlConnection`` reports what its socket did, ``ControlConnections``
/// what the handler did, and both ask ``next``, ``deadline(timeout:)`` and ``readsInput``
/// what to do.
///
/// One request at a time: a line is taken only while the connection awaits a request, so the
/// next line waits until the previous reply is out. Replies therefore come in request order, and
/// a client that does not read them only ever holds one in memory.
struct ControlConnectionState: Equatable {
    /// The instants a connection's deadline is counted from.
    struct Clock: Equatable {
        /// When the wait for the client's next request began: when it connected, or when its
        /// previous request was answered. Bytes that arrive do not move it: a request must be
        /// complete within the limit, however slowly it trickles in.
        var waitingSince: MonotonicInstant
        /// When bytes of a reply last went out (or the wait began): a large reply that is being
        /// read still progresses.
        var lastSent: MonotonicInstant
    }

    /// Where the request–reply cycle is.
    enum Cycle: Equatable {
        /// Waiting for the client's next complete request line.
        case awaitingRequest(Clock)
        /// Request `serial` is with the handler; no clock runs.
        case awaitingReply(serial: UInt64)
        /// A reply is being written; no line is taken until it is out.
        case sendingReply(Clock)
        /// Closed: nothing more happens.
        case closed
    }

    /// What is left of the connection's two directions.
    enum Ending: Equatable {
        /// Both directions are open.
        case open
        /// The client sends nothing more (end of file): the lines it sent are still answered,
        /// then the connection closes.
        case inputEnded
        /// The reply being written is the last one (after `too-large`): the connection closes once
        /// it is out. Nothing more is read.
        case afterReply
        /// Nothing more in or out (a reset, a hang-up, EPIPE): the lines received are still
        /// handled, their replies dropped, then the connection closes.
        case peerGone
    }

    /// What to do with the connection next.
    enum Step: Equatable {
        /// Take the next complete request line, if there is one.
        case takeLine
        /// Nothing, until the handler replies or the socket is ready.
        case wait
        /// Close the connection.
        case close
    }

    /// The request–reply cycle's place.
    private(set) var cycle: Cycle
    /// What is left of the two directions.
    private(set) var ending = Ending.open
    /// The serial of the last request given to the handler: only a reply that brings it back is
    /// taken, so a second reply to a request (or a late one) is dropped.
    private var lastSerial: UInt64 = 0

    /// A connection that was accepted at `now`: its wait for a request begins.
    init(connectedAt now: MonotonicInstant) {
        cycle = .awaitingRequest(Clock(waitingSince: now, lastSent: now))
    }

    // MARK: Questions

    /// What to do next: take a line while a request is awaited (close instead after a last
    /// reply), otherwise wait.
    var next: Step {
        switch cycle {
        case .awaitingRequest: return ending == .afterReply ? .close : .takeLine
        case .awaitingReply, .sendingReply, .closed: return .wait
        }
    }

    /// Whether the socket is still read (nothing after end of file, a last reply or a failure).
    var readsInput: Bool { ending == .open }

    /// Whether a reply is being written to a peer that takes it (the socket is watched for
    /// writability).
    var isSending: Bool {
        if case .sendingReply = cycle { return true }
        return false
    }

    /// Whether replies can still be written (a farewell line too).
    var takesReplies: Bool { ending != .peerGone && cycle != .closed }

    /// Whether the connection is closed.
    var isClosed: Bool { cycle == .closed }

    /// When the client must have done its part: sent a complete request within `timeout` of the
    /// wait's start, or, while its reply is written, taken some of it within `timeout`. Nil while
    /// its request is with the handler (no clock runs) and once closed.
    func deadline(timeout: Duration) -> MonotonicInstant? {
        switch cycle {
        case .awaitingRequest(let clock): return clock.waitingSince.advanced(by: timeout)
        case .sendingReply(let clock): return clock.lastSent.advanced(by: timeout)
        case .awaitingReply, .closed: return nil
        }
    }

    // MARK: Transitions

    /// A request line goes to the handler: returns its serial, which the reply must bring back.
    mutating func requestTaken() -> UInt64 {
        lastSerial += 1
        cycle = .awaitingReply(serial: lastSerial)
        return lastSerial
    }

    /// The handler answers request `serial` at `now`: whether the reply is taken (not a second
    /// one, nor one for a connection that has closed). The wait for the next request, and the
    /// reply's progress, are timed from now.
    mutating func replyGiven(serial: UInt64, at now: MonotonicInstant) -> Bool {
        guard cycle == .awaitingReply(serial: serial) else { return false }
        cycle = .awaitingRequest(Clock(waitingSince: now, lastSent: now))
        return true
    }

    /// A reply's bytes were queued to be written (the handler's, or one the server makes itself
    /// for a bad or over-long line, which keeps the clock as it stands). Dropped once the peer is
    /// gone.
    mutating func replyQueued() {
        guard ending != .peerGone, case .awaitingRequest(let clock) = cycle else { return }
        cycle = .sendingReply(clock)
    }

    /// Bytes of the reply went out at `now`.
    mutating func sent(at now: MonotonicInstant) {
        guard case .sendingReply(var clock) = cycle else { return }
        clock.lastSent = now
        cycle = .sendingReply(clock)
    }

    /// The whole reply is out: the next request is awaited.
    mutating func replySent() {
        guard case .sendingReply(let clock) = cycle else { return }
        cycle = .awaitingRequest(clock)
    }

    /// End of file: the client sends nothing more.
    mutating func inputEnded() {
        if ending == .open { ending = .inputEnded }
    }

    /// The request line is over the limit: its `too-large` reply is the last, and nothing more is
    /// read.
    mutating func lineTooLong() {
        if ending != .peerGone { ending = .afterReply }
    }

    /// The socket failed or hung up: nothing more in or out; a reply being written is dropped.
    mutating func peerGone() {
        ending = .peerGone
        if case .sendingReply(let clock) = cycle { cycle = .awaitingRequest(clock) }
    }

    /// The connection is closed.
    mutating func close() {
        cycle = .closed
    }
}
