import Basics
import Configuration
import Daemon

/// `session-cleanup check-config [--config PATH] [--no-host-checks]`: validates like `ntpd -n`,
/// so operators can check before a reload: every problem in every file, then (unless
/// `--no-host-checks`: only what the daemon itself refuses at start) what the configuration names
/// on this host — CA files, groups — and warnings. Exit 0 valid, 78 invalid.
enum CheckConfigVerb: Verb {
    static let description = VerbDescription(
        name: "check-config", summary: "validate the configuration and exit",
        options: [
            .config,
            VerbOption(
                name: "--no-host-checks",
                help: "check only what the daemon itself refuses at start, not what the configuration names "
                    + "on this host (CA files, groups, credentials)"),
        ],
        details: "Reads the main file and its drop-ins (PATH.d/*.conf, in name order) exactly as the daemon "
            + "would, then checks what they name on this host, and prints what it found, or every problem "
            + "with its file and line.",
        exitStatus: "0 valid; 78 invalid.",
        examples: [
            "session-cleanup check-config && systemctl reload session-cleanup",
            "session-cleanup check-config --config /etc/session-cleanup/session-cleanup.conf",
        ])

    static func run(_ options: Options) throws -> ExitStatus {
        guard options.positional.isEmpty else { throw UsageError("check-config takes no arguments") }
        let paths = DaemonPaths.resolve(options.instance, configOption: options.value("--config"))
        do throws(ConfigurationError) {
            let loaded = try ConfigurationLoader.read(path: paths.configFile, required: paths.configRequired)
            let (configuration, files) = (loaded.configuration, loaded.files)
            // What the daemon refuses at start, host checks or not.
            var refused: [ConfigurationProblem] = []
            do {
                try LibcurlSupportCheck.check(configuration)
            } catch {
                refused = error.problems
            }
            if options.has("--no-host-checks") {
                if !refused.isEmpty { throw ConfigurationError(refused) }
            } else {
                var findings = ConfigurationCheck.check(configuration, origins: loaded.origins)
                findings.problems += refused
                for warning in findings.warnings { printError("session-cleanup: warning: \(warning)") }
                if let credentials = paths.credentialsDirectory {  // under the unit: its credentials
                    do {
                        try DaemonConfigurationLoader.checkCredentials(of: configuration, in: credentials)
                    } catch {
                        findings.problems += error.problems
                    }
                }
                if !findings.problems.isEmpty { throw ConfigurationError(findings.problems) }
            }
            let sleep = SleepCheck.summary(configuration, askLogind: !options.has("--no-host-checks"))
            for warning in sleep?.warnings ?? [] { printError("session-cleanup: warning: \(warning)") }
            let read = files.isEmpty ? "no files (defaults)" : files.joined(separator: ", ")
            print("Configuration OK: \(read)")
            let stop = configuration.stop
            print(
                "  [Stop] budget \(HumanText.duration(microseconds: stop.budget.microseconds)), minimum per request "
                    + "\(HumanText.duration(microseconds: stop.minimumRequest.microseconds)), at most "
                    + "\(HumanText.count(stop.maxConcurrentRequests, "concurrent request")), "
                    + HumanText.count(stop.maxAttempts, "attempt"))
            print(storeLine(configuration.store))
            for endpoint in configuration.endpoints {
                print(
                    "  [Endpoint] \(endpoint.name): \(endpoint.method) \(endpoint.url), timeout "
                        + HumanText.duration(microseconds: endpoint.timeout.microseconds))
            }
            if let sleep { print(sleep.line) }
            if configuration.endpoints.isEmpty { print(noEndpointHint(paths)) }
            return .success
        } catch {
            for problem in error.problems { printError("session-cleanup: \(problem)") }
            let count = error.problems.count
            printError("session-cleanup: configuration invalid: \(HumanText.count(count, "problem"))")
            return .configurationInvalid
        }
    }

    /// How the store keeps session keys at rest.
    static func storeLine(_ store: StoreSettings) -> String {
        guard let name = store.keyCredential else {
            return "  [Store] session keys stored in clear, protected by the files' mode 0600 in a 0700 directory "
                + "(KeyCredential= seals them)"
        }
        return "  [Store] session keys sealed (AES-256-GCM) with the key in credential '\(name)'"
    }

    /// What to do when nothing can be registered yet: where an `[Endpoint]` goes, and how to apply it.
    static func noEndpointHint(_ paths: DaemonPaths) -> String {
        let user = paths.instance == .user
        return """
              No [Endpoint] yet: sessions can be registered only once one is configured, e.g. in
              \(paths.configFile).d/50-auth.conf:
                  [Endpoint]
                  Name=auth
                  URL=https://auth.example.com/user/{session}/endsession
              then: session-cleanup\(user ? " --user" : "") check-config && systemctl\(user ? " --user" : "") reload session-cleanup
              (see session-cleanup.conf(5))
            """
    }
}
