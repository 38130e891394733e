import Basics
import Daemon
import Glibc

/// `session-cleanup list`: the caller's sessions (root: everyone's), with what became of their
/// last attempt, filtered if asked. Keys never appear: the protocol does not carry them back.
enum ListVerb: Verb {
    /// Outcome words `--outcome` accepts; `none` is "never attempted".
    static let outcomes = ["ended", "rejected", "failed", "unconfirmed", "expired", "not-started", "none"]

    static let description = VerbDescription(
        name: "list", summary: "list your sessions (root: everyone's); keys are never shown",
        options: [
            VerbOption(
                name: "--outcome", value: "OUTCOME",
                help: "only sessions whose last attempt came to OUTCOME: \(outcomes.joined(separator: ", ")) "
                    + "(none: never attempted)",
                completion: .words(outcomes)),
            VerbOption(
                name: "--endpoint", value: "NAME", help: "only sessions ended at endpoint NAME",
                completion: .endpoint),
            .json("the sessions"),
        ],
        isClient: true,
        details: "ATTEMPTS and LAST OUTCOME say what the last stop run (or end) did: a session listed after a "
            + "stop run is one that run could not end. An endpoint marked * is no longer configured.",
        exitStatus: "0 the daemon answered; 3 it is stopped (nothing is started to answer); 1 it refused or could "
            + "not be reached.",
        examples: [
            "session-cleanup list", "session-cleanup list --outcome failed --endpoint auth",
            "session-cleanup list --json",
        ])

    static func run(_ options: Options) throws -> ExitStatus {
        guard options.positional.isEmpty else { throw UsageError("list takes no arguments") }
        let outcome = options.value("--outcome")
        if let outcome, !outcomes.contains(outcome) {
            throw UsageError("--outcome takes one of \(outcomes.joined(separator: ", ")), not '\(outcome)'")
        }
        let endpoint = options.value("--endpoint")
        if let stopped = StoppedDaemon.find(options, target: DaemonTarget(options, verb: "list"), verb: "list") {
            printError("session-cleanup list: " + stopped.sentence + "; its sessions are listed while it runs.")
            for line in stopped.advice { printError(line) }
            return .notRunning
        }
        guard let response = try ControlVerbSupport.perform(.list, options, verb: "list") else { return .refused }
        let all = response.sessions ?? []
        let sessions = all.filter { session in
            (outcome == nil || (session.lastOutcome ?? "none") == outcome)
                && (endpoint == nil || session.endpoints.contains(endpoint ?? ""))
        }
        if options.has("--json") {
            print(ControlVerbSupport.jsonText(sessions))
            return .success
        }
        let filtered = outcome != nil || endpoint != nil
        guard !sessions.isEmpty else {
            print(
                filtered
                    ? "No sessions match (\(HumanText.count(all.count, "session")) in all)." : "No sessions registered."
            )
            return .success
        }
        var unconfiguredSeen = false
        let now = wallClockMicroseconds()
        var rows = [["ID", "LABEL", "ENDPOINTS", "OWNER", "REGISTERED", "ATTEMPTS", "LAST OUTCOME"]]
        for session in sessions {
            let unconfigured = session.unconfiguredEndpoints ?? []
            let endpoints = session.endpoints.map { name -> String in
                guard unconfigured.contains(name) else { return name }
                unconfiguredSeen = true
                return name + "*"
            }
            rows.append([
                session.id, session.label ?? "-", endpoints.joined(separator: ","), userName(session.ownerUID),
                HumanText.relative(epochMicroseconds: session.registeredAt, now: now), String(session.attempts),
                session.lastOutcome ?? "-",
            ])
        }
        for line in TextTable.lines(rows) { print(line) }
        print("")
        print(
            filtered
                ? "\(sessions.count) of \(HumanText.count(all.count, "session")) match."
                : HumanText.count(sessions.count, "session") + ".")
        if unconfiguredSeen {
            print("* not configured (any more): calls to it fail until an [Endpoint] with that Name= is back.")
        }
        return .success
    }

    /// `alice`, or the number when the uid has no name here.
    static func userName(_ uid: UInt32) -> String {
        AccountLookup.userName(uid_t(uid)) ?? String(uid)
    }
}
