import Vocabulary

extension CleanupRun {
    /// Whether `failure`, of a request never written, was the short connect timeout the run
    /// set (``OriginLimiter/connectTimeout``) rather than the request's own, with budget left.
    func connectTimedOut(_ slot: Int, _ failure: TransportFailure) -> Bool {
        guard failure.kind == .timeout, schedule[slot].connectTimeout != nil,
            let started = schedule[slot].attemptStart, !finished, !windingDown, budget.allowsNewRequest
        else { return false }
        return loop.clock.now().duration(since: started) < schedule[slot].attemptTimeout
    }

    /// Tells the adaptive limit of the origin of the call in `slot` (``OriginLimiter``) what its
    /// request's `result` says of the server: a reply's latency, or a signal to cut — 503 or
    /// 429, a refused connection, a timeout, a reset or dropped connection. A cancelled request
    /// (the budget's end, a hand-over) says nothing.
    func observe(_ slot: Int, _ result: HTTPResult) {
        guard let origin = schedule[slot].origin else { return }
        if let status = result.status {
            if status == 503 || status == 429 {
                schedule.originFailed(origin, .overloaded)
            } else {
                schedule.originSucceeded(origin, latency: result.duration, reused: result.reusedConnection)
            }
            return
        }
        switch result.failure?.kind {
        case .connect: schedule.originFailed(origin, .refused)
        case .timeout: schedule.originFailed(origin, .timeout)
        case .sendReceive: schedule.originFailed(origin, .reset)
        default: break
        }
    }
}
