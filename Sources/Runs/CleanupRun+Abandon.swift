import Vocabulary

/// How a background run hands its sessions to the stop run: it stops at once, records nothing
/// more, and says what it did to the sessions it had not finished.
extension CleanupRun {
    /// Cancels everything without recording outcomes: the stop run takes these sessions over.
    /// Returns what the run did to the sessions it had not finished — the endpoints that already
    /// ended each and the requests made — so that the stop run does not call those endpoints
    /// again. (Sessions already finished were reported through ``onSessionFinished``.)
    @discardableResult
    package func abandon() -> [SessionResult] {
        guard !finished else { return [] }
        finished = true
        outcomes.journal.flush()
        var attemptsUnderWay: [Int: Int] = [:]
        for slot in schedule.slots {
            switch schedule[slot].state {
            case .inFlight(let id): transport.cancel(id)
            case .waitingToRetry(let timer): loop.cancel(timer)
            case .done: continue
            default: break
            }
            attemptsUnderWay[schedule[slot].session, default: 0] += schedule[slot].attempts
            schedule[slot].state = .done
        }
        timers.cancel(in: loop)
        cancelGrants()
        return outcomes.results.unfinished(attemptsUnderWay: attemptsUnderWay)
    }
}
