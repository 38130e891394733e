import Glibc
import SessionCleanup

/// `session-cleanup daemon`: blocks the signals first, loads the configuration, runs.
enum DaemonVerb: Verb {
    static let description = VerbDescription(
        name: "daemon", summary: "run the daemon (the unit's ExecStart=)",
        options: [.config],
        details: "Keeps the registered sessions and, when stopped (SIGTERM or SIGINT), ends them all inside "
            + "[Stop] BudgetSec=. SIGHUP reloads the configuration. Under systemd it reports readiness and "
            + "progress with sd_notify and logs to the journal; by hand it logs to standard error. With --user "
            + "it is your own daemon, as the user unit runs it (systemctl --user start session-cleanup).",
        exitStatus: "0 stopped with every session ended; 75 stopped with sessions kept for the next start; "
            + "78 invalid configuration; 1 could not start.",
        examples: [
            "systemctl start session-cleanup          # the system daemon, as its unit runs it",
            "session-cleanup daemon --config ./test.conf",
            "session-cleanup --user daemon            # your own daemon in the foreground",
        ])

    static func run(_ options: Options) throws -> ExitStatus {
        guard options.positional.isEmpty else { throw UsageError("daemon takes no arguments") }
        // First, before anything can start a thread: every later thread inherits the mask.
        let signals = try SignalSource.open()
        let journal = Journal()
        let notifier = SystemdNotifier()
        let paths = DaemonPaths.resolve(options.instance, configOption: options.value("--config"))
        let configuration: Configuration
        let files: [String]
        do {
            (configuration, files) = try DaemonConfigurationLoader.load(paths)
        } catch {
            journal.record(
                JournalEntry(
                    .error, "Invalid configuration, not starting: \(error)",
                    [JournalField(.event, "config-invalid"), JournalField(.error, error.description)]))
            notifier.send([.status("Invalid configuration: \(error.summary)"), .errno(22)])
            return .configurationInvalid
        }
        let loop = try EventLoop()
        let daemon = Daemon(
            paths: paths, configuration: configuration, configurationFiles: files,
            dependencies: Daemon.Dependencies(
                loop: loop, notifier: notifier, journal: journal, watchdogInterval: try Watchdog.systemInterval()))
        do {
            try daemon.start(signals: signals)
        } catch {
            // A user who forgot --user tried to run the system daemon: say how to run their own.
            let hint =
                paths.instance == .system && getuid() != 0
                ? " (the system daemon's paths; your own daemon: session-cleanup --user daemon)" : ""
            journal.record(
                JournalEntry(
                    .error, "Start-up failed: \(error)\(hint)",
                    [JournalField(.event, "start-failed"), JournalField(.error, "\(error)")]))
            notifier.send([.status("Start-up failed: \(error)")])
            return .startFailed
        }
        return try daemon.run()
    }
}
