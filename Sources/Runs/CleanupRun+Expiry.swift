import Basics
import Vocabulary

/// How a run ends early: the budget expires (its time is up, or a second signal), or it leaves
/// too little time for another request. Either way every call still to do gets its outcome at
/// once, in the run's order of calls.
extension CleanupRun {
    /// The budget expired: in-flight transfers are cancelled and their calls recorded
    /// `unconfirmed` when the request was written (the server may have acted on it), else
    /// `expired`; calls waiting to retry `expired`, and calls never tried `not-started`.
    func expire(_ reason: RunExpiryReason) {
        guard !finished else { return }
        outcomes.budgetExpired(reason, budget: budget, now: loop.clock.now())
        // In the run's order of calls: those under way (taken in that order), then the line.
        for slot in schedule.underWayInOrder {
            switch schedule[slot].state {
            case .inFlight(let id):
                // Recorded first: the cancelled completion then finds the call done and is ignored.
                finish(
                    slot,
                    transport.requestSent(id)
                        ? .unconfirmed(cause: "the request was sent, but the budget ran out before an answer came")
                        : .expired)
                schedule.stopped(slot)
                transport.cancel(id)
            case .waitingToRetry(let timer):
                loop.cancel(timer)
                finish(slot, .expired)
            case .queued, .parked:
                finish(
                    slot,
                    schedule[slot].attempts > 0
                        ? .expired : .notStarted(reason: "the budget expired (\(reason.rawValue))"))
            case .done:
                break
            }
        }
        finishLine(.notStarted(reason: "the budget expired (\(reason.rawValue))"))
        finishIfDone()
        cancelGrants()
    }

    /// Too little budget is left: the current call and every call still waiting its turn end
    /// now, including calls a finishing probe releases meanwhile.
    func refuseRemaining(_ current: Int) {
        let reason = "less than \(budget.minimumRequest.humanReadable) of the budget was left"
        var next: Int? = current
        while let slot = next {
            if case .queued = schedule[slot].state {
                finish(slot, schedule[slot].attempts > 0 ? .expired : .notStarted(reason: reason))
            }
            if schedule.hasReady {
                next = schedule.next()
            } else {
                finishLine(.notStarted(reason: reason))
                next = nil
            }
        }
    }

    /// Every call still in line ends with `outcome`, untried.
    func finishLine(_ outcome: CallOutcome) {
        while let taken = schedule.takeUntried() { finish(taken.session, taken.endpoint, taken.template, outcome) }
    }
}
