import Configuration
import Daemon
import EventLoop
import Glibc
import Journal
import Sessions
import Systemd

/// `session-cleanup daemon`: blocks the signals first, loads the configuration, runs.
enum DaemonVerb: Verb {
    static let description = VerbDescription(
        name: "daemon", summary: "run the daemon (the unit's ExecStart=)",
        options: [.config],
        details: "Keeps the registered sessions and, when stopped (SIGTERM or SIGINT), ends them all inside "
            + "[Stop] BudgetSec=; SIGUSR1 (the units' RestartKillSignal=) hands them over to the restarted daemon. "
            + "SIGHUP reloads the configuration. Under systemd it reports readiness and "
            + "progress with sd_notify and logs to the journal; by hand it logs to standard error. With --user "
            + "it is your own daemon, as the user unit runs it (systemctl --user start session-cleanup).",
        exitStatus: "0 stopped with every session ended; 75 stopped with sessions kept for the next start; "
            + "78 invalid configuration; 1 could not start.",
        examples: [
            "systemctl start session-cleanup          # the system daemon, as its unit runs it",
            "session-cleanup daemon --config ./test.conf",
            "session-cleanup --user daemon            # your own daemon in the foreground",
        ])

    /// Whether a failed start was the store's key: its credential missing or malformed, or the
    /// store holding sealed keys that the configured key (or none) cannot open — exit 78, a
    /// configuration to fix, not a fault of the host.
    static func isStoreKeyRefusal(_ error: any Error) -> Bool {
        if let error = error as? ConfigurationError { return DaemonConfigurationLoader.isStoreKeyProblem(error) }
        guard let error = error as? StoreError else { return false }
        return error.kind == .storeKeyMissing || error.kind == .storeKeyRejected
    }

    /// How long a failed start waits for systemd and the journal to take its last words.
    static let failureFlush: Duration = .seconds(1)

    static func run(_ options: Options) throws -> ExitStatus {
        guard options.positional.isEmpty else { throw UsageError("daemon takes no arguments") }
        // First, before anything can start a thread: every later thread inherits the mask.
        let signals = try SignalSource.open()
        let journal = Journal()
        let notifier = SystemdNotifier(journal: journal)
        let clock = SystemMonotonicClock()
        /// The last words of a start that failed: sent, within a bound, before exiting.
        func failed(_ entry: JournalEntry, _ status: [NotifyAssignment], _ exit: ExitStatus) -> ExitStatus {
            journal.record(entry)
            notifier.send(status)
            let deadline = clock.now().advanced(by: failureFlush)
            notifier.flush(until: deadline)
            journal.flush(until: deadline)
            return exit
        }
        let paths = DaemonPaths.resolve(options.instance, configOption: options.value("--config"))
        let configuration: Configuration
        let files: [String]
        var fallbackCause: String?
        do {
            (configuration, files) = try DaemonConfigurationLoader.load(paths)
        } catch {
            // Invalid files must not leave the stored sessions without a daemon: run, loudly, on
            // the last configuration that loaded (none: exit 78 as before). Not when the store's
            // key credential is missing: the last good configuration might write keys in clear.
            if DaemonConfigurationLoader.isStoreKeyProblem(error) {
                return failed(
                    JournalEntry(
                        .configInvalid, "Invalid configuration, not starting: \(error)",
                        [JournalField(.error, error.description)]),
                    [.status("Invalid configuration: \(error.summary)"), .errno(22)], .configurationInvalid)
            }
            do {
                let fallback = try LastGoodConfiguration.load(paths)
                (configuration, files) = (fallback.configuration, fallback.files)
                fallbackCause =
                    ([error.description] + fallback.problems.map { "and in the last good one: \($0)" })
                    .joined(separator: "; ")
            } catch let fallbackError {
                return failed(
                    JournalEntry(
                        .configInvalid,
                        "Invalid configuration, not starting (and no last good one to run on: \(fallbackError.summary)): "
                            + "\(error)",
                        [JournalField(.error, error.description)]),
                    [.status("Invalid configuration: \(error.summary)"), .errno(22)], .configurationInvalid)
            }
        }
        let loop = try EventLoop(clock: clock)
        journal.attach(to: loop)
        notifier.attach(to: loop)
        let daemon = Daemon(
            paths: paths, configuration: configuration, configurationFiles: files, fallbackCause: fallbackCause,
            dependencies: Daemon.Dependencies(
                loop: loop, notifier: notifier, journal: journal, watchdogInterval: try Watchdog.systemInterval(),
                stopDeadline: SystemdStopDeadlineKeeper { [journal] error in
                    journal.record(
                        JournalEntry(
                            .notifyFailed, "The stop's extension will not be renewed: \(error)",
                            [JournalField(.notifyState, "EXTEND_TIMEOUT_USEC="), JournalField(.error, error)]))
                }))
        do {
            try daemon.start(signals: signals)
        } catch {
            // A user who forgot --user tried to run the system daemon: say how to run their own.
            let hint =
                paths.instance == .system && getuid() != 0
                ? " (the system daemon's paths; your own daemon: session-cleanup --user daemon)" : ""
            return failed(
                JournalEntry(.startFailed, "Start-up failed: \(error)\(hint)", [JournalField(.error, "\(error)")]),
                [.status("Start-up failed: \(error)")],
                Self.isStoreKeyRefusal(error) ? .configurationInvalid : .startFailed)
        }
        let status = try daemon.run()
        // The store is closed and the journal flushed: exit now rather than tear down the
        // tables of a large store (seconds on a starved machine, after the stop's deadline).
        fflush(nil)
        _exit(status.rawValue)
    }
}
