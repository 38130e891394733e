import Configuration
import Systemd

/// What a SIGTERM, SIGUSR1 or SIGINT means for the sessions: a restart of the unit hands them over
/// to the next process; a stop or a shutdown is a stop run, which ends them.
///
/// The rule (README, "Restart or stop"), in order:
/// 1. SIGINT (a terminal's Ctrl-C) and `[Stop] OnRestart=end` always stop.
/// 2. SIGUSR1 is the units' `RestartKillSignal=`: systemd (≥ 250) sends it, not SIGTERM, to a unit
///    it restarts. A restart, told without D-Bus, so a D-Bus hiccup cannot make it a logout:
///    hand over (unless no service manager runs the process: then nothing would start the next).
/// 3. SIGTERM: the unit's job over D-Bus decides — a `restart` job outside a shutdown hands
///    over (systemd < 250, which ignores `RestartKillSignal=`); anything else stops. With the
///    shipped units on systemd ≥ 250 a SIGTERM is never a restart, so a stop is right even when
///    the manager does not answer.
package enum TerminationDecision: Sendable, Equatable {
    /// The unit is being restarted: keep every session for the process systemd starts next.
    case handOver(unit: ServiceManagerUnit, jobType: String)
    /// End every session now; `reason` says why, for the journal.
    case stop(reason: String)

    /// The job type recorded for a restart told by SIGUSR1 (the manager was not asked).
    package static let restartSignalJob = "restart (RestartKillSignal=SIGUSR1)"

    /// Decides from the signal, `[Stop] OnRestart=`, and what the service manager said.
    /// `ownUnit` is called only for SIGUSR1, `ask` only for SIGTERM with `OnRestart=keep`.
    package static func decide(
        signal: DaemonSignal, onRestart: OnRestartPolicy, ownUnit: () -> ServiceManagerUnit?,
        ask: () -> ServiceManagerReport
    ) -> TerminationDecision {
        switch signal {
        case .terminate, .restart: break
        case .interrupt, .hangUp: return .stop(reason: "\(signal) always stops")
        }
        guard onRestart == .keep else {
            return .stop(reason: "[Stop] OnRestart=end: every stop and restart ends the sessions")
        }
        if signal == .restart {
            guard let unit = ownUnit() else {
                return .stop(reason: "SIGUSR1 but not started by a service manager (no unit), so no restart follows")
            }
            return .handOver(unit: unit, jobType: restartSignalJob)
        }
        switch ask() {
        case .notUnderServiceManager:
            return .stop(reason: "not started by a service manager (no unit), so not a restart")
        case .unanswered(let unit, let error):
            return .stop(
                reason: "could not ask the \(unit.manager.rawValue) manager about \(unit.name): \(error); "
                    + "a restart would have sent SIGUSR1 (RestartKillSignal=), so this SIGTERM is a stop")
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
