import Configuration
import Journal
import Runs
import Systemd

extension Daemon {
    /// SIGTERM, SIGUSR1 or SIGINT while running: a restart of the unit hands every session over
    /// to the next process; anything else is a stop run (``TerminationDecision``). The budget starts at the signal, so asking
    /// systemd counts against it.
    func terminate(signal: DaemonSignal, sender: Int32) {
        started?.sleep.daemonStopping()  // the stop run, or the next daemon, has the sessions now
        let settings = configuration.current.stop
        let budget = StopBudget(total: settings.budget, minimumRequest: settings.minimumRequest, clock: loop.clock)
        let received = loop.clock.now()
        let decision = TerminationDecision.decide(
            signal: signal, onRestart: settings.onRestart, ownUnit: ServiceManagerUnit.ofThisProcess,
            ask: serviceManager.askAboutOwnUnit)
        let answered = loop.clock.now()
        let checked = nextStartAccepts(decision)
        let timing = [
            JournalField(.queryUsec, answered.duration(since: received).microseconds),
            JournalField(.checkUsec, loop.clock.now().duration(since: answered).microseconds),
        ]
        switch checked {
        case .handOver(let unit, let jobType):
            beginHandOver(signal: signal, sender: sender, unit: unit, jobType: jobType, since: received, timing: timing)
        case .stop(let reason):
            beginStop(signal: signal, sender: sender, budget: budget, reason: reason, timing: timing)
        }
    }

    /// A hand-over only to a process that will start: with a configuration the binary on disk
    /// refuses and no last good configuration to run on (or a credential the unit no longer
    /// loads), the restarted daemon would exit 78 and leave the sessions with no daemon to end
    /// them, so the restart becomes a stop run.
    private func nextStartAccepts(_ decision: TerminationDecision) -> TerminationDecision {
        guard case .handOver = decision else { return decision }
        let problem: String
        do {
            try DaemonConfigurationLoader.checkCredentials(of: configuration.current, in: paths.credentialsDirectory)
            switch NextStartCheck.run(
                configFile: paths.configFile, required: paths.configRequired, instance: paths.instance)
            {
            case .valid: return decision
            case .unknown(let why):
                journal.record(
                    JournalEntry(
                        .nextStartUnchecked,
                        "Could not check the configuration for the restarted daemon (\(why)); handing over",
                        [JournalField(.error, why)]))
                return decision
            case .invalid(let why):
                // The next process runs on the last good configuration (saved by this one).
                if (try? LastGoodConfiguration.load(paths)) != nil {
                    journal.record(
                        JournalEntry(
                            .nextStartFallback,
                            "The restarted daemon would refuse its configuration (\(Self.firstLine(why))); handing over: "
                                + "it runs on the last good configuration",
                            [JournalField(.error, why)]))
                    return decision
                }
                problem = why
            }
        } catch {
            problem = error.description
        }
        return .stop(
            reason: "a restart, but the restarted daemon would refuse its configuration (\(problem)), "
                + "so the sessions are ended now")
    }
}
