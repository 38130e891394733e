import Sessions
import Vocabulary

extension CleanupRun {
    /// What became of one session once all its calls are done: the daemon updates the store from it.
    package struct SessionResult: Sendable {
        /// The session.
        package let id: SessionID
        /// Ended at every endpoint.
        package let ended: Bool
        /// The endpoints it was ended at (all of them when `ended`).
        package let endedEndpoints: [String]
        /// The outcome of its last call that did not end it; when every call ended it, that of
        /// its last call.
        package let outcome: CallOutcome
        /// Requests made for it in this run.
        package let attempts: Int
    }
}

/// A run's results as its calls get their outcomes: one ``RunReport/CallResult`` per call, and
/// per session, once its last call has an outcome, a ``CleanupRun/SessionResult`` — ended only
/// when every endpoint ended it; otherwise the outcome of its last call that did not, and the
/// endpoints that did end it, so they are not called again. Sessions with one endpoint finish
/// with their call; only sessions with several endpoints, some of whose calls have finished,
/// hold progress. Pure bookkeeping, no I/O.
struct RunResults {
    /// A session with several endpoints, some of whose calls have finished.
    private struct SessionProgress {
        var callsLeft: Int
        var allEnded = true
        /// The outcome of the last call that did not end the session.
        var lastNotEnded: CallOutcome?
        var attempts = 0
        var endedEndpoints: [String] = []
    }

    /// The report so far.
    var report: RunReport
    /// Calls in all.
    let callsTotal: Int
    /// Calls without an outcome yet.
    private(set) var callsLeft: Int
    /// Calls whose outcome was not `ended`.
    private(set) var callsNotEnded = 0
    private let sessions: SessionList
    /// By session index.
    private var progress: [Int: SessionProgress] = [:]
    /// The results' endpoints and outcomes, shared.
    private var shapes = CallShapes()

    /// Results of a run over `sessions`, reported in `report`.
    init(sessions: SessionList, report: RunReport) {
        self.sessions = sessions
        self.report = report
        callsTotal = sessions.callCount
        callsLeft = callsTotal
        // One result per call: reserved once rather than grown by doubling (and copying).
        self.report.calls.reserveCapacity(callsTotal)
    }

    /// Records the outcome of session `index`'s call to `endpoint`; returns the session's result
    /// when that was its last call.
    mutating func record(
        _ index: Int, _ endpoint: String, _ outcome: CallOutcome, attempts: Int, duration: Duration
    ) -> CleanupRun.SessionResult? {
        callsLeft -= 1
        // Fields, not a copy of the session: one call each.
        report.calls.append(
            RunReport.CallResult(
                sessionID: sessions.id(at: index), ownerUID: sessions.ownerUID(at: index),
                shape: shapes.shape(endpoint, outcome, attempts: attempts), duration: duration))
        let ended = outcome.isEnded
        if !ended { callsNotEnded += 1 }
        let endpointCount = sessions.endpointCount(at: index)
        guard endpointCount > 1 else {
            return sessionFinished(
                index, allEnded: ended, endedEndpoints: ended ? sessions.endpoints(at: index) : [], outcome, attempts)
        }
        var done = progress.removeValue(forKey: index) ?? SessionProgress(callsLeft: endpointCount)
        done.callsLeft -= 1
        done.attempts += attempts
        if ended {
            done.endedEndpoints.append(endpoint)
        } else {
            done.allEnded = false
            done.lastNotEnded = outcome
        }
        guard done.callsLeft == 0 else {
            progress[index] = done
            return nil
        }
        return sessionFinished(
            index, allEnded: done.allEnded, endedEndpoints: done.endedEndpoints, done.lastNotEnded ?? outcome,
            done.attempts)
    }

    /// What the run did to the sessions it had not finished, when it is abandoned: for each that
    /// some endpoint already ended, or that had requests made (`attemptsUnderWay`: by session,
    /// the requests of its calls still under way), the endpoints that ended it and the requests
    /// made. In session order.
    func unfinished(attemptsUnderWay: [Int: Int]) -> [CleanupRun.SessionResult] {
        var attemptsBySession = attemptsUnderWay
        for session in progress.keys where attemptsBySession[session] == nil { attemptsBySession[session] = 0 }
        return attemptsBySession.keys.sorted().compactMap { index in
            let done = progress[index] ?? SessionProgress(callsLeft: 0)
            let attempts = done.attempts + (attemptsBySession[index] ?? 0)
            guard !done.endedEndpoints.isEmpty || attempts > 0 else { return nil }
            return CleanupRun.SessionResult(
                id: sessions.id(at: index), ended: false, endedEndpoints: done.endedEndpoints,
                outcome: done.lastNotEnded ?? .notStarted(reason: "the run was taken over by the stop run"),
                attempts: attempts)
        }
    }

    private mutating func sessionFinished(
        _ index: Int, allEnded: Bool, endedEndpoints: [String], _ outcome: CallOutcome, _ attempts: Int
    ) -> CleanupRun.SessionResult {
        if allEnded { report.sessionsEnded += 1 } else { report.sessionsLeft += 1 }
        return CleanupRun.SessionResult(
            id: sessions.id(at: index), ended: allEnded, endedEndpoints: endedEndpoints, outcome: outcome,
            attempts: attempts)
    }
}
