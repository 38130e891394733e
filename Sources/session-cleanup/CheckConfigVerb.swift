import SessionCleanup

/// `session-cleanup check-config [--config PATH] [--no-host-checks]`: validates like `ntpd -n`,
/// so operators can check before a reload: every problem in every file, then (unless
/// `--no-host-checks`: only what the daemon itself refuses at start) what the configuration names
/// on this host — CA files, groups — and warnings. Exit 0 valid, 78 invalid.
enum CheckConfigVerb {
    static func run(_ options: Options) throws -> ExitStatus {
        guard options.positional.isEmpty else { throw UsageError("check-config takes no arguments") }
        let paths = DaemonPaths.resolve(configOption: options.value("--config"))
        do throws(ConfigurationError) {
            let loaded = try ConfigurationLoader.read(path: paths.configFile, required: paths.configRequired)
            let (configuration, files) = (loaded.configuration, loaded.files)
            if !options.flags.contains("--no-host-checks") {
                var findings = ConfigurationCheck.check(configuration, origins: loaded.origins)
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
            let read = files.isEmpty ? "no files (defaults)" : files.joined(separator: ", ")
            print("Configuration OK: \(read)")
            let stop = configuration.stop
            print(
                "  [Stop] budget \(stop.budget.humanReadable), minimum per request \(stop.minimumRequest.humanReadable), "
                    + "at most \(stop.maxConcurrentRequests) concurrent requests, \(stop.maxAttempts) attempts")
            for endpoint in configuration.endpoints {
                print(
                    "  [Endpoint] \(endpoint.name): \(endpoint.method) \(endpoint.url), timeout \(endpoint.timeout.humanReadable)"
                )
            }
            return .success
        } catch {
            for problem in error.problems { printError("session-cleanup: \(problem)") }
            let count = error.problems.count
            printError("session-cleanup: configuration invalid: \(count) problem\(count == 1 ? "" : "s")")
            return .configurationInvalid
        }
    }
}
