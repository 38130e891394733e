import SessionCleanup

/// `session-cleanup daemon`: blocks the signals first, loads the configuration, runs.
enum DaemonVerb {
    static func run(_ options: Options) throws -> ExitStatus {
        guard options.positional.isEmpty else { throw UsageError("daemon takes no arguments") }
        // First, before anything can start a thread: every later thread inherits the mask.
        let signals = try SignalSource.open()
        let journal = Journal()
        let notifier = SystemdNotifier()
        let paths = DaemonPaths.resolve(configOption: options.value("--config"))
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
            journal.record(
                JournalEntry(
                    .error, "Start-up failed: \(error)",
                    [JournalField(.event, "start-failed"), JournalField(.error, "\(error)")]))
            notifier.send([.status("Start-up failed: \(error)")])
            return .startFailed
        }
        return try daemon.run()
    }
}
