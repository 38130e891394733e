import Basics
import Control
import Daemon

/// `session-cleanup end ID|--all [--json]`: ends sessions now, while the daemon runs.
/// Exits 0 when all were ended, 75 when some are kept (their outcomes are printed), 1 on a refusal.
enum EndVerb: Verb {
    static let description = VerbDescription(
        name: "end", summary: "end sessions now, while the daemon runs",
        arguments: [VerbArgument(usage: "ID|--all", completion: .session)],
        options: [
            VerbOption(name: "--all", help: "every session you may see (root: all)"),
            .json("the run's report"),
        ],
        isClient: true,
        details: "Calls every endpoint of the sessions, as a stop run would, and waits for the outcome. "
            + "Ended sessions leave the store; the others keep their outcome and are ended at the next stop.",
        exitStatus: "0 every session ended; 75 some were kept; 1 the daemon refused or could not be reached.",
        examples: ["session-cleanup end 3f2a9c0d5e7b1a44", "session-cleanup end --all --json"])

    static func run(_ options: Options) throws -> ExitStatus {
        let target: ControlRequest.EndTarget
        switch (options.has("--all"), options.positional.count) {
        case (true, 0): target = .all
        case (false, 1): target = .session(id: options.positional[0])
        default: throw UsageError("end takes one session ID or --all")
        }
        guard
            let response = try ControlVerbSupport.perform(
                .end(target), options, verb: "end", timeout: try replyTimeout(options))
        else { return .refused }
        let report = response.report ?? .object([:])
        if options.has("--json") {
            print(ControlVerbSupport.jsonText(report))
        } else {
            for line in RunReportText.lines(report) { print(line) }
        }
        // Like the daemon's own exit status: 75 when some sessions could not be ended now.
        if case .integer(let left)? = report["sessions_left"], left > 0 { return .sessionsLeft }
        return .success
    }

    /// How long to wait for the reply: the daemon answers once its run is over, and that run
    /// has `[Start] LeftoverBudgetSec=` (60 s by default; `status` says) — the client must not
    /// give up before the daemon does. Some margin covers recording and committing the outcomes.
    private static func replyTimeout(_ options: Options) throws -> Duration {
        let status = try ControlVerbSupport.perform(.status, options, verb: "end", startsDaemon: true)?.status
        guard case .integer(let budget)? = status?["leftover_budget_usec"], budget > 0 else { return .seconds(90) }
        return .microseconds(budget) + .seconds(30)
    }
}
