import Basics
import EventLoop
import Journal
import Systemd

extension Daemon {
    /// How long a restart hand-over waits for connected clients to finish their requests.
    static let handOverDrainLimit: Duration = .milliseconds(250)
    /// How long a restart hand-over waits for the calls under way of background runs (an `end`)
    /// to finish, so that the next process does not make them again.
    static let handOverCallsLimit: Duration = .seconds(2)
    /// How long a hand-over's last journal entries may be waited for: a restart should be quick.
    static let handOverFlushLimit: Duration = .seconds(1)

    /// Stops taking connections (a socket unit keeps new ones queued for the next process), lets
    /// the background runs' calls under way finish for at most ``handOverCallsLimit`` (their
    /// outcomes recorded), finishes the requests of connected clients for at most
    /// ``handOverDrainLimit``, then exits.
    func beginHandOver(
        signal: DaemonSignal, sender: Int32, unit: ServiceManagerUnit, jobType: String,
        since received: MonotonicInstant, timing: [JournalField]
    ) {
        phase = .handingOver(since: received)
        notifier.send([.stopping, .status("Restarting: handing \(HumanText.count(sessionCount, "session")) over")])
        journal.record(
            JournalEntry(
                .handOverBegun, "\(signal) received: \(unit.name) is being restarted; its sessions are kept",
                [
                    JournalField(.signal, signal.description), JournalField(.senderPID, sender),
                    JournalField(.unit, unit.name), JournalField(.jobType, jobType),
                    JournalField(.sessionsTotal, sessionCount),
                ] + timing))
        guard let started else {
            finishHandOver()
            return
        }
        started.statusLine.stop()
        started.controlServer.close()
        started.runs.windDownForHandOver(within: Self.handOverCallsLimit) { [weak self] in
            guard let self, case .handingOver = self.phase else { return }
            started.runs.stopForHandOver()
            let deadline = self.loop.clock.now().advanced(by: Self.handOverDrainLimit)
            func waitForClients() {
                guard case .handingOver = self.phase else { return }
                if started.controlServer.clientCount == 0 || self.loop.clock.now() >= deadline {
                    self.finishHandOver()
                } else {
                    self.loop.schedule(after: .milliseconds(2)) { waitForClients() }
                }
            }
            waitForClients()
        }
    }

    /// Ends the hand-over (the clients are done, the drain limit passed, or a second signal):
    /// the store written, every session kept for the next process.
    func finishHandOver() {
        guard case .handingOver(let received) = phase else { return }
        var kept = 0
        if let started {
            started.runs.stopForHandOver()  // a second signal cut the wait short: the runs stop now
            kept = started.committer.settle(timeout: Self.storeFlushTimeout).kept
            started.committer.close()
            started.controlServer.disconnectAll()
        }
        watchdog.stop()
        let took = loop.clock.now().duration(since: received)
        let summary = "Handed \(HumanText.count(kept, "session")) over to the restarted daemon"
        notifier.send([.status(summary)])
        journal.record(
            JournalEntry(
                .handedOver, summary,
                [JournalField(.sessionsTotal, kept), JournalField(.durationUsec, took.microseconds)]))
        flushBeforeExit(until: loop.clock.now().advanced(by: Self.handOverFlushLimit))
        phase = .finished(.success)
    }
}
