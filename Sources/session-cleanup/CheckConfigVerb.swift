import SessionCleanup

/// `session-cleanup check-config`: validates like `ntpd -n`, so operators can check before a reload.
enum CheckConfigVerb {
    static func run(_ options: Options) throws -> ExitStatus {
        guard options.positional.isEmpty else { throw UsageError("check-config takes no arguments") }
        let paths = DaemonPaths.resolve(configOption: options.value("--config"))
        do {
            let (configuration, files) = try ConfigurationLoader.load(
                path: paths.configFile, required: paths.configRequired)
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
