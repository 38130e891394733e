import EventLoop
import Vocabulary

extension CleanupRun {
    /// How long an attempt runs before its connection is checked for a request the server's
    /// TCP never acknowledged (``HTTPTransport/requestUnacknowledged(_:)``).
    static let unacknowledgedAfter = Duration.milliseconds(500)

    /// Keeps each endpoint's `TimeoutSec=` for the requests started with the budget's rest as
    /// their timeout (``start(_:_:)``), checked with the progress report (every 250 ms). The
    /// rule: a request past its endpoint's timeout is abandoned only if its origin answered no
    /// request of the run within that timeout, and only once it was sent — it is then
    /// `unconfirmed` and not sent again. While the origin answers others, the server is working
    /// through a queue that holds this request too: abandoning it would free nothing at the
    /// server, and the answer may still come before the budget's end. A request still waiting
    /// for a connection keeps waiting: it was never sent, and is no attempt.
    /// (The timeout is measured from the call's first request.)
    ///
    /// One exception, checked first: a request written to a connection whose server never
    /// acknowledged a byte of it (its accept queue was full when the handshake's last ACK came,
    /// and its kernel drops what follows) is not in any queue of the server's. Waiting for it
    /// would only wait out the budget, so it goes again at once on a new connection, as no
    /// attempt (``resend(_:_:)``); so does a request whose SYN is still unanswered after its
    /// origin's connect timeout (``OriginLimiter/synTimeout``). Either cuts the origin's
    /// adaptive limit to the requests the server did take
    /// (``OriginLimiter/connectionsLost(_:inFlight:)``).
    func keepTimeouts() {
        let now = loop.clock.now()
        var changed = false
        // By origin: requests lost at its accept queue, and its requests in flight before.
        var lost: [Int: (count: Int, inFlight: Int)] = [:]
        for slot in schedule.underWayInOrder {
            guard case .inFlight(let id) = schedule[slot].state else { continue }
            if let loss = lostAtAcceptQueue(slot, id, now: now) {
                let origin = schedule[slot].origin
                if let origin { lost[origin, default: (0, schedule.inFlight(at: origin))].count += 1 }
                if loss == .syn { schedule[slot].connectTimeouts += 1 }
                resend(slot, id)
                changed = true
                continue
            }
            guard let origin = schedule[slot].origin, let started = schedule[slot].firstStart else { continue }
            let limit = schedule[slot].endSession.template.configuration.timeout
            guard now.duration(since: started) >= limit else { continue }
            if let answered = lastAnswer[origin], now.duration(since: answered) < limit { continue }
            guard transport.requestSent(id) else { continue }
            let cause =
                "the request was sent, but no answer came within \(limit.humanReadable), "
                + "and \(schedule[slot].endSession.origin) answered nothing else meanwhile"
            // Recorded first: the cancelled completion then finds the call done and is ignored.
            finish(slot, .unconfirmed(cause: cause))
            schedule.stopped(slot)
            schedule.originFailed(origin, .timeout)
            transport.cancel(id)
            changed = true
        }
        for (origin, lost) in lost { schedule.connectionsLost(origin, lost.count, inFlight: lost.inFlight) }
        if changed {
            pump()
            finishIfDone()
        }
    }

    /// What of a request its server's full accept queue dropped.
    enum AcceptQueueLoss { case request, syn }

    /// Whether the request of the call in `slot`, transfer `id`, is lost at its server's full
    /// accept queue: written to a connection whose server's TCP acknowledged none of it, after
    /// ``unacknowledgedAfter`` (`.request`); or its SYN still waiting for a SYN-ACK after its
    /// origin's connect timeout (`.syn`; ``OriginLimiter/synTimeout``) — a SYN dropped waits
    /// for the kernel's retransmission, 1 s, then 3 s. A call's SYNs count so at most
    /// ``OriginLimiter/connectRetries`` times: then it waits for the kernel's.
    private func lostAtAcceptQueue(_ slot: Int, _ id: TransferID, now: MonotonicInstant) -> AcceptQueueLoss? {
        guard let attempt = schedule[slot].attemptStart else { return nil }
        let age = now.duration(since: attempt)
        if age >= Self.unacknowledgedAfter, transport.requestUnacknowledged(id) { return .request }
        guard let origin = schedule[slot].origin, schedule[slot].connectTimeouts < OriginLimiter.connectRetries,
            let connect = schedule.synTimeout(origin), age >= connect
        else { return nil }
        return transport.connectPending(id) ? .syn : nil
    }

    /// The request of the call in `slot`, transfer `id`, never reached the server: its transfer
    /// is cancelled and the call queued again, the attempt not counted.
    private func resend(_ slot: Int, _ id: TransferID) {
        schedule.stopped(slot)
        schedule.notSent(slot)
        // Queued first: the cancelled completion then finds the call not in flight and is ignored.
        schedule.requeue(slot)
        transport.cancel(id)
    }
}
