import Basics
import Journal
import Vocabulary

/// How a run ends early: the budget expires (its time is up, or a second signal), or it leaves
/// too little time for another request. Either way every call still to do gets its outcome at
/// once, in the run's order of calls.
extension CleanupRun {
    /// The budget expired: in-flight transfers are cancelled and their calls recorded `expired`,
    /// calls waiting to retry `expired`, and calls never tried `not-started`.
    func expire(_ reason: RunExpiryReason) {
        guard !finished else { return }
        results.report.expiry = reason
        journal.record(
            JournalEntry(
                .expired,
                "Budget expired (\(reason.rawValue)) with \(results.callsLeft) of \(results.callsTotal) calls "
                    + "unfinished: cancelling what is in flight",
                runJournal.runFields + [
                    JournalField(.budgetUsec, budget.total.microseconds),
                    JournalField(
                        .timeRemainingUsec, max(.zero, budget.deadline.duration(since: loop.clock.now())).microseconds),
                ]))
        // In the run's order of calls: those under way (taken in that order), then the line.
        for index in calls.underWayInOrder {
            switch calls[index].state {
            case .inFlight(let id):
                // Recorded first: the cancelled completion then finds the call done and is ignored.
                finish(index, .expired)
                inFlight -= 1
                if let origin = calls[index].origin { line.stopped(origin) }
                transport.cancel(id)
            case .waitingToRetry(let timer):
                loop.cancel(timer)
                finish(index, .expired)
            case .queued, .parked:
                finish(
                    index,
                    calls[index].attempts > 0
                        ? .expired : .notStarted(reason: "the budget expired (\(reason.rawValue))"))
            case .done:
                break
            }
        }
        finishLine(.notStarted(reason: "the budget expired (\(reason.rawValue))"))
        finishIfDone()
    }

    /// Too little budget is left: the current call and every call still waiting its turn end
    /// now, including calls a finishing probe releases meanwhile.
    func refuseRemaining(_ current: Int) {
        let reason = "less than \(budget.minimumRequest.humanReadable) of the budget was left"
        var next: Int? = current
        while let index = next {
            if case .queued = calls[index].state {
                finish(index, calls[index].attempts > 0 ? .expired : .notStarted(reason: reason))
            }
            if !ready.isEmpty {
                next = nextCall()
            } else {
                finishLine(.notStarted(reason: reason))
                next = nil
            }
        }
    }

    /// Every call still in line ends with `outcome`, untried.
    func finishLine(_ outcome: CallOutcome) {
        while let taken = line.takeUntried() { finish(taken.session, taken.endpoint, taken.template, outcome) }
    }
}
