import Endpoints
import EventLoop
import Vocabulary

/// Where a call under way is: waiting its turn, in flight, waiting to retry, parked behind an
/// origin's probe, or done.
enum CallState {
    /// Waiting for its turn (taken from the line, released, or due to retry).
    case queued
    /// Its request is in flight.
    case inFlight(TransferID)
    /// Waiting for its backoff timer.
    case waitingToRetry(EventLoop.TimerID)
    /// Waiting for the ``OriginGate`` to release it.
    case parked
    /// It has its outcome.
    case done

    /// Whether the call is parked.
    var isParked: Bool {
        if case .parked = self { return true }
        return false
    }

    /// Whether the call has its outcome.
    var isDone: Bool {
        if case .done = self { return true }
        return false
    }
}

/// A call taken from the line and not yet finished: in flight, waiting to retry, parked, or
/// queued again. Calls still in line and calls finished hold no state, so a run's memory
/// follows the calls under way, not the calls it has.
struct CallUnderWay {
    /// Its place in the run's order of calls taken: tells a reused slot's calls apart.
    let number: Int
    /// The session's index in the run's sessions.
    let session: Int
    /// The call's request maker.
    let endSession: EndSessionCall
    /// The endpoint's name.
    let endpointName: String
    /// Its origin's number in the line's quotas (``CallLine/Call/origin``).
    let origin: Int?
    var state = CallState.queued
    /// Requests made so far.
    var attempts = 0
    /// When its first request started.
    var firstStart: MonotonicInstant?
    /// When its latest request started, and with which timeout.
    var attemptStart: MonotonicInstant?
    var attemptTimeout = Duration.zero
    /// The latest request's connect timeout, when the run set one (``OriginLimiter/connectTimeout``).
    var connectTimeout: Duration?
    /// Connect timeouts so far: after ``OriginLimiter/connectRetries`` the call waits for the kernel's.
    var connectTimeouts = 0
    /// The last retryable failure's cause and HTTP status (if the server answered).
    var lastCause = ""
    var lastStatus: Int?
    /// The last attempt could not connect (DNS, refused, unreachable).
    var lastAttemptUnreachable = false
    /// The running request's timeout was the budget's remainder, not the endpoint's own.
    var timeoutIsBudget = false
    /// The generation (``TokenCache``) of the access token its last request carried, if any.
    var tokenGeneration: Int?
    /// It was answered 401 with an obtained token and went again with a fresh one (once only).
    var retriedWithFreshToken = false
}

/// The run's calls under way, each in a slot that is reused once its call is done: the slot's
/// index is what the ``OriginGate`` and the transfers' completions name, and a call's
/// ``CallUnderWay/number`` tells a completion for an earlier call of the same slot apart.
/// Pure bookkeeping, no I/O.
struct CallSlots {
    private var calls: [CallUnderWay] = []
    private var free: [Int] = []
    /// Calls given a slot so far: the next call's number.
    private(set) var taken = 0

    /// Gives a call a slot (a freed one if there is one) and the next number; returns the slot.
    mutating func add(session: Int, endSession: EndSessionCall, endpointName: String, origin: Int? = nil) -> Int {
        let call = CallUnderWay(
            number: taken, session: session, endSession: endSession, endpointName: endpointName, origin: origin)
        taken += 1
        if let slot = free.popLast() {
            calls[slot] = call
            return slot
        }
        calls.append(call)
        return calls.count - 1
    }

    /// The call in `slot`.
    subscript(slot: Int) -> CallUnderWay {
        _read { yield calls[slot] }
        _modify { yield &calls[slot] }
    }

    /// Marks the call in `slot` done and frees the slot for the next call; false if it was
    /// already done.
    mutating func finish(_ slot: Int) -> Bool {
        guard !calls[slot].state.isDone else { return false }
        calls[slot].state = .done
        free.append(slot)
        return true
    }

    /// Every slot, done or not.
    var indices: Range<Int> { calls.indices }

    /// The slots of the calls not done, in the order the calls were taken.
    var underWayInOrder: [Int] {
        calls.indices.filter { !calls[$0].state.isDone }.sorted { calls[$0].number < calls[$1].number }
    }
}
