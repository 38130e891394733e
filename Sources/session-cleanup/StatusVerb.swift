import SessionCleanup

/// `session-cleanup status [--json]`: the daemon's state and its last stop run.
enum StatusVerb {
    static func run(_ options: Options) throws -> ExitStatus {
        guard options.positional.isEmpty else { throw UsageError("status takes no arguments") }
        guard let response = try ControlVerbSupport.perform(.status, options) else { return .refused }
        let status = response.status ?? .object([:])
        if options.flags.contains("--json") {
            print(ControlVerbSupport.jsonText(status))
        } else {
            for line in ControlVerbSupport.humanLines(status) { print(line) }
        }
        return .success
    }
}
