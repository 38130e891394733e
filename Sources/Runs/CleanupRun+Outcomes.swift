import Endpoints
import Vocabulary

/// A run's calls leave with their outcome here: recorded, the origin's held-back calls released
/// or failed with it, the completion run once the last has left; and the progress the run reports
/// while it lasts.
extension CleanupRun {
    // MARK: Outcomes

    /// A call under way has its outcome: its slot is freed.
    func finish(_ slot: Int, _ outcome: CallOutcome) {
        guard schedule.finish(slot) else { return }
        let call = schedule[slot]
        let duration = call.firstStart.map { loop.clock.now().duration(since: $0) } ?? .zero
        record(
            call.session, call.endpointName, call.endSession.template, outcome, attempts: call.attempts,
            duration: duration)
        // Every call's end passes here, so a probe's end releases or fails what it held back,
        // whatever the outcome; the caller pumps. (At expiry, the expiry records every call.)
        if !outcomes.hasExpired {
            let origin = call.endSession.origin
            var unreachable = false
            if case .failed = outcome { unreachable = call.lastAttemptUnreachable }
            let held = schedule.callFinished(slot, at: origin, unreachable: unreachable, cause: call.lastCause)
            for other in held.parked where schedule[other].state.isParked {
                finish(other, Self.notAttempted(origin, held.cause))
            }
        }
    }

    /// A call never taken from the line has its outcome.
    func finish(_ session: Int, _ name: String, _ template: EndpointTemplate?, _ outcome: CallOutcome) {
        record(session, name, template, outcome, attempts: 0, duration: .zero)
    }

    func record(
        _ session: Int, _ endpoint: String, _ template: EndpointTemplate?, _ outcome: CallOutcome, attempts: Int,
        duration: Duration
    ) {
        let sessionFinished = outcomes.record(
            session, endpoint, template, outcome, attempts: attempts, duration: duration)
        if let sessionFinished { onSessionFinished?(sessionFinished) }
    }

    /// Once every call has its outcome: the summary is journaled and the completion runs.
    func finishIfDone() {
        guard !finished, outcomes.results.callsLeft == 0 else { return }
        finished = true
        timers.cancel(in: loop)
        let report = outcomes.summarise(duration: budget.elapsed, origins: schedule.originReports)
        let completion = self.completion
        self.completion = nil
        completion?(report)
        quietIfIdle()
    }

    // MARK: Progress

    /// `Ending sessions: 812/1000 ended, 3 failed, 6.2 s left`.
    package var progressText: String { outcomes.progressText(timeRemaining: budget.timeRemaining) }

    func reportProgress() {
        guard !finished else { return }
        keepTimeouts()
        guard !finished else { return }
        onProgress?(progressText)
        timers.scheduleProgress(in: loop) { [weak self] in self?.reportProgress() }
    }
}
