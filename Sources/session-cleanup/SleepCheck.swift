import Basics
import Configuration
import Daemon
import EventLoop
import Systemd

/// `check-config`'s look at `[Sleep] EndSessions=yes`: the sleep run's budget as logind's
/// `InhibitDelayMaxSec=` on this host makes it, and whether a call can begin within it.
enum SleepCheck {
    /// What logind said of its delay.
    enum DelayAnswer {
        /// `InhibitDelayMaxUSec`.
        case delay(Duration)
        /// Why it could not be read.
        case failed(String)
    }

    /// How long `check-config` waits for logind.
    static let timeout: Duration = .seconds(1)

    /// The line `check-config` prints, and its warnings. With `askLogind`, logind's setting is read
    /// (within ``timeout``); without, its default is assumed.
    static func summary(_ configuration: Configuration, askLogind: Bool) -> (line: String, warnings: [String])? {
        guard configuration.sleep.endSessions else { return nil }
        var warnings: [String] = []
        var delay: Duration?
        if askLogind {
            switch logindDelayMax() {
            case .delay(let found): delay = found
            case .failed(let error):
                warnings.append(
                    "[Sleep] EndSessions=yes: cannot read logind's InhibitDelayMaxUSec (\(error)); "
                        + "the daemon needs logind to hold its sleep lock")
            }
        }
        let budget = SleepLockState.budget(delayMax: delay)
        let source =
            delay.map { "logind's InhibitDelayMaxSec= \($0.humanReadable)" }
            ?? "logind's default InhibitDelayMaxSec= \(SleepLockState.defaultDelayMax.humanReadable)"
        if budget < configuration.stop.minimumRequest {
            warnings.append(
                "[Sleep] EndSessions=yes: the sleep run's budget (\(budget.humanReadable)) is shorter than "
                    + "[Stop] MinimumRequestSec= (\(configuration.stop.minimumRequest.humanReadable)): no call "
                    + "can begin before sleep; raise InhibitDelayMaxSec= in logind.conf")
        }
        return (
            "  [Sleep] sessions ended before the machine sleeps, within \(budget.humanReadable) (\(source), "
                + "less a margin)", warnings
        )
    }

    /// logind's `InhibitDelayMaxUSec`, asked over the system bus within ``timeout``.
    static func logindDelayMax() -> DelayAnswer {
        do {
            let loop = try EventLoop()
            var answer: DelayAnswer?
            let connection = try LoginConnection(loop: loop) { event in
                switch event {
                case .delayMax(let delay): answer = .delay(delay)
                case .delayMaxFailed(let text), .disconnected(let text): answer = .failed(text)
                default: break
                }
            }
            defer { connection.close() }
            try connection.askDelayMax()
            let deadline = loop.clock.now().advanced(by: timeout)
            while answer == nil, loop.clock.now() < deadline {
                try loop.runOnce(maximumWait: deadline.duration(since: loop.clock.now()))
            }
            return answer ?? .failed("no answer within \(timeout.humanReadable)")
        } catch {
            return .failed("\(error)")
        }
    }
}
