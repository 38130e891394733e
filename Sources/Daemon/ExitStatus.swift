/// How the daemon's process ends; the unit's `SuccessExitStatus=` lists ``sessionsLeft``.
package enum ExitStatus: Int32, Sendable {
    /// Stopped, and nothing was left: every session was ended (or there were none).
    case success = 0
    /// Could not start (state or runtime directory, store, socket); see the journal.
    case startFailed = 1
    /// Bad command line.
    case usage = 2
    /// A client verb (`status`): the daemon is not running — what `systemctl status` exits with
    /// for a stopped unit.
    case notRunning = 3
    /// Stopped, but some sessions are kept for the next start (`EX_TEMPFAIL`).
    case sessionsLeft = 75
    /// The configuration is invalid (`EX_CONFIG`).
    case configurationInvalid = 78
}
