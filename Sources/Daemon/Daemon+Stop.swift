import Basics
import Journal
import Metrics
import Runs
import Systemd
import Vocabulary

extension Daemon {
    /// How long after the budget's end (or the run's, if later) the last journal entries may
    /// still be waited for; well inside ``exitGrace``. A journal that takes nothing for half a
    /// second is given up on sooner.
    static let journalFlushLimit: Duration = .seconds(2)
    /// The end of ``exitGrace`` kept for writing the run record and exiting, whatever the store's
    /// settle and the journal's flush took before it.
    static let recordReserve: Duration = .seconds(1)

    /// The stop's beginning: systemd told how long it may take, the registrations being written
    /// acknowledged, the run's start made durable, then the stop run begun within `budget`.
    func beginStop(
        signal: DaemonSignal, sender: Int32, budget: StopBudget, reason: String, timing: [JournalField]
    ) {
        let settings = configuration.current.stop
        var stop = StopRunBookkeeping(
            budget: budget, runID: RunID.random(), journalDroppedAtStart: journal.droppedEntries)
        phase = .stopping(stop)
        // Tell systemd first: from here on its stop timeout must cover the budget plus the grace.
        notifier.send([
            .stopping, .extendTimeout(settings.budget + Self.exitGrace),
            .status(
                "Stopping: ending \(HumanText.count(sessionCount, "session")), "
                    + "\(HumanText.duration(microseconds: settings.budget.microseconds)) budget"),
        ])
        // Renewed on a thread of its own until exit: systemd forgets an extension across a
        // daemon-reload or daemon-reexec; and the process exits on its own before the SIGKILL.
        let end = budget.deadline.advanced(by: Self.exitGrace)
        stopDeadline?.keep(
            until: end, exitAt: end.advanced(by: .zero - Self.lastResortMargin),
            status: ExitStatus.sessionsLeft.rawValue)
        // Registrations already being written are acknowledged now (and ended by the stop run);
        // then the stop run's start is made durable, so a crash before its end does not forget it.
        let syncBegan = loop.clock.now()
        if let started {
            started.committer.beginStop()
            if started.committer.store.count > 0, started.committer.store.readOnlyCause == nil {
                stop.startRecorded = InterruptedStopRun.recordBegun(
                    sessions: started.committer.store.count, in: started.committer.store, journal: journal)
                phase = .stopping(stop)
            }
        }
        journal.record(
            JournalEntry(
                .stopBegun,
                "\(signal) received: stop run begun with a budget of \(settings.budget.humanReadable) (\(reason))",
                stop.journalFields + [
                    JournalField(.signal, signal.description), JournalField(.senderPID, sender),
                    JournalField(.budgetUsec, settings.budget.microseconds), JournalField(.sessionsTotal, sessionCount),
                    JournalField(.stopReason, reason),
                    JournalField(.syncUsec, loop.clock.now().duration(since: syncBegan).microseconds),
                ] + timing))
        guard let started else {
            finishStop(report: nil)
            return
        }
        started.statusLine.stop()  // the stop run's progress owns STATUS= now
        started.committer.registrations.summarise()
        started.runs.beginStopRun(
            id: stop.runID, budget: budget, onProgress: { [weak self] text in self?.notifier.send([.status(text)]) },
            completion: { [weak self] report in self?.finishStop(report: report) })
    }

    /// The stop's end: the socket closed, the store written (what is left kept for the next
    /// start), the journal flushed within what is left of the grace, then the run's record.
    private func finishStop(report: RunReport?) {
        guard case .stopping(let stop) = phase else { return }
        let budget = stop.budget
        var left = 0
        if let started {
            started.controlServer.close()
            started.controlServer.disconnectAll()
            let settled = started.committer.settle(
                timeout: Self.storeFlushTimeout, nextStartEndsUnsaved: stop.startRecorded)
            if settled.saved { InterruptedStopRun.recordFinished(in: started.committer.store, journal: journal) }
            left = settled.kept
        }
        watchdog.stop()
        let took = budget.elapsed
        let summary =
            left == 0
            ? "Stopped in \(took.humanReadable)"
            : "Stopped in \(took.humanReadable), \(HumanText.count(left, "session")) kept for the next start"
        notifier.send([.status(summary)])
        journal.record(
            JournalEntry(
                .stopped, summary,
                stop.journalFields + [
                    JournalField(.durationUsec, took.microseconds),
                    JournalField(.timeRemainingUsec, budget.timeRemaining.microseconds),
                    JournalField(.sessionsLeft, left),
                ],
                // Notice, not warning: warnings are the per-call entries' pool, which may be full.
                priority: left == 0 ? .info : .notice))
        // The store's settle may have used part of the grace already: keep a moment for the record.
        let lastFlush = budget.deadline.advanced(by: Self.exitGrace - Self.recordReserve)
        flushBeforeExit(
            until: min(max(loop.clock.now(), budget.deadline).advanced(by: Self.journalFlushLimit), lastFlush))
        if let started, let report {
            // After the flush, so the record counts every entry the journal could not take.
            let record = RunRecord(report, journalDropped: stop.journalDropped(by: journal))
            LastStopRunDocument.write(record, to: started.committer.store, journal: journal)
            started.metrics.runFinished(
                RunMetrics(report, finishedAt: record.finishedAt, journalDropped: record.journalDropped))
            started.metrics.writeNow()
        }
        started?.committer.close()
        let status: ExitStatus = left == 0 ? .success : .sessionsLeft
        stopDeadline?.settle(status: status.rawValue)
        phase = .finished(status)
    }
}
