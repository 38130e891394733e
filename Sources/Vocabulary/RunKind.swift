/// Why a run of end-session calls happens.
package enum RunKind: String, Sendable {
    /// The stop run: SIGTERM to exit.
    case stop
    /// After start-up: sessions an earlier stop run could not end.
    case leftover
    /// `session-cleanup end`: asked for while running.
    case onDemand = "on-demand"
    /// Before the machine sleeps (`[Sleep] EndSessions=yes`): every session, within logind's delay.
    case sleep
}

/// Why a run's budget expired.
package enum RunExpiryReason: String, Sendable {
    /// The budget's time ran out.
    case timeUp = "time-up"
    /// A second SIGTERM or SIGINT asked to stop now.
    case secondSignal = "second-signal"
}
