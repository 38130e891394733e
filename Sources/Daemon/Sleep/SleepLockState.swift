/// The sleep lock's decisions (`[Sleep] EndSessions=yes`): from what logind and the daemon say,
/// what to do next. No I/O here; ``SleepWatch`` carries the actions out.
///
/// The life of the lock: taken (a logind *delay* inhibitor) while the machine is awake; at
/// `PrepareForSleep(true)` a sleep run ends every session within ``budget(delayMax:)`` and the
/// lock is closed when it finishes, so the machine sleeps; at `PrepareForSleep(false)` (resume)
/// the lock is taken again and what the sleep run could not end is retried (a leftover run).
package struct SleepLockState: Equatable {
    /// Where the lock is.
    enum Phase: Equatable {
        /// `EndSessions=no`, or the daemon is stopping: no lock, no connection.
        case off
        /// `Inhibit` sent; no answer yet.
        case taking
        /// The lock (its descriptor) is held; the machine is awake.
        case held(fd: Int32)
        /// The machine is about to sleep: the sleep run ends the sessions while the lock delays it.
        case ending(fd: Int32)
        /// The lock was released for sleep; waiting for the resume.
        case asleep
        /// logind refused the lock or could not be reached; tried again at resume or reload.
        case unavailable
    }

    /// What to do.
    enum Action: Equatable {
        /// Connect to logind if not connected, then ask for the lock and for `InhibitDelayMaxUSec`.
        case take
        /// Close the connection to logind.
        case disconnect
        /// Close the lock's descriptor: logind lets the machine sleep (or no longer waits for us).
        case release(fd: Int32)
        /// Begin the sleep run over every session, within `budget`.
        case beginSleepRun(budget: Duration)
        /// After the resume: retry, as a leftover run, what the sleep run could not end.
        case retryLeftovers
    }

    /// logind's default `InhibitDelayMaxSec=`, used while its setting is not known.
    package static let defaultDelayMax: Duration = .seconds(5)
    /// The most kept back from logind's delay for recording the results and releasing the lock.
    static let maximumMargin: Duration = .seconds(1)

    /// Where the lock is now.
    private(set) var phase = Phase.off
    /// logind's `InhibitDelayMaxUSec`, once read.
    var delayMax: Duration?

    /// The sleep run's budget: logind's `InhibitDelayMaxSec=` (5 s unless read otherwise) less a
    /// margin of a quarter of it, at most ``maximumMargin``; so 5 s gives 4 s, 30 s gives 29 s.
    package static func budget(delayMax: Duration?) -> Duration {
        let delay = max(.zero, delayMax ?? defaultDelayMax)
        return delay - min(maximumMargin, delay / 4)
    }

    /// `[Sleep] EndSessions=` at start or after a reload.
    mutating func setEnabled(_ enabled: Bool) -> [Action] {
        switch (enabled, phase) {
        case (true, .off), (true, .unavailable):
            phase = .taking
            return [.take]
        case (true, _):
            return []
        case (false, .held(let fd)), (false, .ending(let fd)):
            phase = .off
            return [.release(fd: fd), .disconnect]
        case (false, .off):
            return []
        case (false, _):
            phase = .off
            return [.disconnect]
        }
    }

    /// logind granted the lock.
    mutating func lockTaken(fd: Int32) -> [Action] {
        guard phase == .taking else { return [.release(fd: fd)] }  // not wanted any more
        phase = .held(fd: fd)
        return []
    }

    /// logind refused the lock, or the connection to it failed or ended.
    mutating func lockUnavailable() -> [Action] {
        switch phase {
        case .off: return []
        case .held(let fd), .ending(let fd):
            // Without the connection, PrepareForSleep is not heard: the lock would only delay sleep.
            phase = .unavailable
            return [.release(fd: fd), .disconnect]
        default:
            phase = .unavailable
            return [.disconnect]
        }
    }

    /// `PrepareForSleep(sleeping)`.
    mutating func prepareForSleep(_ sleeping: Bool) -> [Action] {
        switch (sleeping, phase) {
        case (true, .held(let fd)):
            phase = .ending(fd: fd)
            return [.beginSleepRun(budget: Self.budget(delayMax: delayMax))]
        case (true, _):
            return []  // no lock held: nothing delays the sleep
        case (false, .asleep), (false, .unavailable):
            phase = .taking
            return [.take, .retryLeftovers]
        case (false, .ending(let fd)):
            // logind's delay ran out and the machine slept before the run finished: keep the lock
            // (we are awake again); the run ends on its own and its leftovers are retried.
            phase = .held(fd: fd)
            return [.retryLeftovers]
        case (false, _):
            return []
        }
    }

    /// The sleep run finished (or there was nothing to end).
    mutating func sleepRunFinished() -> [Action] {
        guard case .ending(let fd) = phase else { return [] }
        phase = .asleep
        return [.release(fd: fd)]
    }

    /// The daemon began stopping (or handing over): its stop run ends every session; the lock goes.
    mutating func daemonStopping() -> [Action] {
        let actions = setEnabled(false)
        return actions
    }
}
