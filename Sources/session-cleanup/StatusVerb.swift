import Daemon

/// `session-cleanup status [--json]`: the daemon's state and its last stop run.
enum StatusVerb: Verb {
    static let description = VerbDescription(
        name: "status", summary: "the daemon's state, sessions and last stop run",
        options: [.json("the status")],
        isClient: true,
        details: "Durations are shown in human units and times in local time; --json keeps the exact numbers "
            + "(microseconds). Non-root users see the count of their own sessions only.",
        exitStatus: "0 the daemon answered; 1 it refused or could not be reached.",
        examples: ["session-cleanup status", "session-cleanup --user status --json"])

    static func run(_ options: Options) throws -> ExitStatus {
        guard options.positional.isEmpty else { throw UsageError("status takes no arguments") }
        guard let response = try ControlVerbSupport.perform(.status, options, verb: "status") else {
            return .refused
        }
        let status = response.status ?? .object([:])
        if options.has("--json") {
            print(ControlVerbSupport.jsonText(status))
        } else {
            for line in HumanReadable.lines(status) { print(line) }
        }
        return .success
    }
}
