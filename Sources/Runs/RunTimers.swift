import EventLoop

/// A run's two loop timers: one expires its budget at the deadline, the other reports the
/// run's progress every ``progressInterval`` while it lasts. Both are cancelled when the run
/// finishes or is abandoned.
struct RunTimers {
    /// How often progress is reported (`STATUS=`).
    static let progressInterval: Duration = .milliseconds(250)

    private var expiry: EventLoop.TimerID?
    private var progress: EventLoop.TimerID?

    /// Starts both: `budget` expires at its deadline, and `reportProgress` runs after one
    /// ``progressInterval`` (it schedules the next with ``scheduleProgress(in:_:)``).
    mutating func start(for budget: StopBudget, in loop: EventLoop, reportProgress: @escaping () -> Void) {
        expiry = loop.schedule(at: budget.deadline) { [budget] in budget.expireIfDue() }
        scheduleProgress(in: loop, reportProgress)
    }

    /// Runs `reportProgress` after one ``progressInterval``.
    mutating func scheduleProgress(in loop: EventLoop, _ reportProgress: @escaping () -> Void) {
        progress = loop.schedule(after: Self.progressInterval, reportProgress)
    }

    /// Cancels both.
    mutating func cancel(in loop: EventLoop) {
        if let expiry { loop.cancel(expiry) }
        if let progress { loop.cancel(progress) }
        expiry = nil
        progress = nil
    }
}
