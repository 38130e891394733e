import Configuration
import Systemd

/// What a SIGTERM (or SIGINT) means for the sessions: a restart of the unit hands them over to
/// the next process; anything else — a stop, a shutdown, no answer, no service manager — is a
/// stop, which ends them (the safe default).
package enum TerminationDecision: Sendable, Equatable {
    /// The unit is being restarted: keep every session for the process systemd starts next.
    case handOver(unit: ServiceManagerUnit, jobType: String)
    /// End every session now; `reason` says why, for the journal.
    case stop(reason: String)

    /// Decides from the signal, `[Stop] OnRestart=`, and what the service manager said.
    /// `ask` is called only when the answer matters (SIGTERM with `OnRestart=keep`).
    package static func decide(
        signal: DaemonSignal, onRestart: OnRestartPolicy, ask: () -> ServiceManagerReport
    ) -> TerminationDecision {
        guard signal == .terminate else { return .stop(reason: "\(signal) always stops") }
        guard onRestart == .keep else { return .stop(reason: "[Stop] OnRestart=end: every SIGTERM stops") }
        switch ask() {
        case .notUnderServiceManager:
            return .stop(reason: "not started by a service manager (no unit), so not a restart")
        case .unanswered(let unit, let error):
            return .stop(reason: "could not ask the \(unit.manager.rawValue) manager about \(unit.name): \(error)")
        case .answered(let unit, let answer):
            guard let jobType = answer.jobType else {
                return .stop(reason: "\(unit.name) has no job (SIGTERM not from a stop or restart of the unit)")
            }
            guard jobType == "restart" else {
                return .stop(reason: "\(unit.name) has a \(jobType) job (system \(answer.systemState))")
            }
            guard answer.systemState != "stopping" else {
                return .stop(reason: "\(unit.name) has a restart job but the system is shutting down")
            }
            return .handOver(unit: unit, jobType: jobType)
        }
    }
}
