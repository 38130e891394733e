import Basics
import Daemon
import Glibc
import JSON
import Journal
import Vocabulary

/// `session-cleanup report [--json] [--no-journal] [RUN_ID]`: what a run did (default: the last
/// stop run, kept by the daemon across restarts), as the caller may see it; and, for root,
/// whether the journal still has every entry of the run (read with sd-journal).
enum ReportVerb: Verb {
    static let description = VerbDescription(
        name: "report", summary: "what the last stop run did, call by call",
        arguments: [VerbArgument(usage: "[RUN_ID]", isOptional: true)],
        options: [
            .json("the report"),
            VerbOption(name: "--no-journal", help: "do not read the journal to check that it is complete for the run"),
        ],
        isClient: true,
        details: "Without RUN_ID, the last stop run (the daemon keeps its result in the state directory, "
            + "so also after a restart); RUN_ID (SESSION_CLEANUP_RUN_ID= in the journal) names it or the last "
            + "background run. Shows counts by outcome, the time taken against the budget, the slowest calls, "
            + "the calls not ended grouped by cause and the sessions kept. A user sees only their own sessions; "
            + "for root the journal is read too (sd-journal), to say whether it has an entry for every call of "
            + "the run and its stop-begun, run-finished and stopped entries.",
        exitStatus: "0 the report was shown (also of a stopped daemon: read from its state directory, nothing "
            + "is started); 1 no such run is kept, or the daemon refused or could not be reached.",
        examples: ["session-cleanup report", "session-cleanup report --json 0d84469d75f79a7bd0deef3849bf6dec"])

    static func run(_ options: Options) throws -> ExitStatus {
        guard options.positional.count <= 1 else { throw UsageError("report takes at most one RUN_ID") }
        let runID = options.positional.first
        if let runID, RunID(validating: runID) == nil {
            throw UsageError("'\(runID)' is not a run id (32 lowercase hexadecimal digits)")
        }
        var report: [String: JSONValue]
        if let stopped = StoppedDaemon.find(options, target: DaemonTarget(options, verb: "report"), verb: "report") {
            guard let kept = stoppedReport(stopped, runID: runID) else { return .refused }
            report = kept
        } else {
            guard let response = try ControlVerbSupport.perform(.report(runID: runID), options, verb: "report") else {
                return .refused
            }
            guard case .object(let sent)? = response.report else {
                printError("session-cleanup: the daemon sent no report")
                return .refused
            }
            report = sent
        }
        if !options.has("--no-journal") { report["journal_check"] = journalCheck(report) }
        if options.has("--json") {
            print(ControlVerbSupport.jsonText(JSONValue.object(report)))
        } else {
            for line in humanLines(report) { print(line) }
        }
        return .success
    }

    /// The last stop run's report of a stopped daemon, read from its state directory (said on
    /// stderr, so that `--json` stays one document); nil, with the reason printed, when there is none.
    private static func stoppedReport(_ stopped: StoppedDaemon, runID: String?) -> [String: JSONValue]? {
        let report: JSONValue?
        do {
            report = try StoppedDaemonDocuments.lastStopReport(in: stopped.stateDirectory, visibleTo: getuid())
        } catch {
            printError(
                "session-cleanup report: \(stopped.sentence); its state directory cannot be read: \(error) "
                    + "(root and the service's user can read it)")
            return nil
        }
        guard case .object(let members)? = report else {
            printError("session-cleanup report: \(stopped.sentence); no stop run has been recorded yet")
            return nil
        }
        if let runID, case .string(let id)? = members["run_id"], id != runID {
            printError(
                "session-cleanup report: \(stopped.sentence); run \(runID) is not kept (the last stop run is \(id)); "
                    + "journalctl SESSION_CLEANUP_RUN_ID=\(runID) shows its entries")
            return nil
        }
        printError(
            "session-cleanup report: \(stopped.sentence); the last stop run is read from \(stopped.stateDirectory), "
                + "nothing was started.")
        return members
    }

    /// `{"complete": …, "calls_journaled": …, "entries": …, "missing": …}`, or why there is none.
    private static func journalCheck(_ report: [String: JSONValue]) -> JSONValue {
        guard case .string(let scope)? = report["scope"], scope == "all" else {
            return .object(["checked": false, "reason": "only root compares the whole run with the journal"])
        }
        guard case .string(let idText)? = report["run_id"], let id = RunID(validating: idText),
            case .string(let kind)? = report["kind"], case .object(let calls)? = report["calls"],
            case .integer(let total)? = calls["total"]
        else { return .object(["checked": false, "reason": "the report names no run"]) }
        do {
            guard let census = try JournalRunCensus.read(run: id) else {
                return .object(["checked": false, "reason": "no journal file is readable by this user"])
            }
            return .object([
                "checked": true, "complete": .bool(census.isComplete(callsTotal: Int(total), kind: kind)),
                "entries": .integer(Int64(census.entries)), "calls_journaled": .integer(Int64(census.callsJournaled)),
                "missing": .string(census.missing(callsTotal: Int(total), kind: kind)),
            ])
        } catch {
            return .object(["checked": false, "reason": .string("\(error)")])
        }
    }

    // MARK: For people

    static func humanLines(_ report: [String: JSONValue]) -> [String] {
        func integer(_ value: JSONValue?) -> Int64 {
            if case .integer(let number)? = value { return number }
            return 0
        }
        func string(_ value: JSONValue?) -> String {
            if case .string(let text)? = value { return text }
            return "-"
        }
        func object(_ value: JSONValue?) -> [String: JSONValue] {
            if case .object(let members)? = value { return members }
            return [:]
        }
        func array(_ value: JSONValue?) -> [JSONValue] {
            if case .array(let items)? = value { return items }
            return []
        }
        func seconds(_ usec: Int64) -> String { HumanText.duration(microseconds: usec) }

        var lines: [String] = []
        let scope = string(report["scope"])
        lines.append(
            "Run \(string(report["run_id"])) (\(string(report["kind"]))), finished "
                + HumanText.moment(epochMicroseconds: UInt64(clamping: integer(report["finished_at_usec"])))
                + (scope == "all" ? "" : " — your sessions only (\(scope))"))
        var timing =
            "Took \(seconds(integer(report["duration_usec"]))) of a \(seconds(integer(report["budget_usec"]))) budget"
        if case .string(let expiry)? = report["expired"] { timing += "; the budget expired (\(expiry))" }
        lines.append(timing)
        let sessions = object(report["sessions"])
        lines.append(
            "Sessions: \(integer(sessions["total"])) — \(integer(sessions["ended"])) ended, "
                + "\(integer(sessions["kept"])) kept for the next start")
        let calls = object(report["calls"])
        let words = ["ended", "rejected", "failed", "unconfirmed", "expired", "not-started"]
        lines.append(
            "Calls: \(integer(calls["total"])) — "
                + words.map { "\(integer(calls[$0])) \($0 == "not-started" ? "not started" : $0)" }.joined(
                    separator: ", "))
        let slowest = array(report["slowest"]).map(object)
        if !slowest.isEmpty {
            lines.append("")
            lines.append("Slowest calls:")
            lines += indented(
                [["SESSION", "ENDPOINT", "OUTCOME", "TOOK", "ATTEMPTS"]]
                    + slowest.map {
                        [
                            string($0["id"]), string($0["endpoint"]), string($0["outcome"]),
                            seconds(integer($0["duration_usec"])), String(integer($0["attempts"])),
                        ]
                    })
        }
        let failures = array(report["failures"]).map(object)
        if !failures.isEmpty {
            lines.append("")
            lines.append("Not ended, by cause:")
            lines += indented(
                [["CALLS", "OUTCOME", "ENDPOINT", "CAUSE", "E.G."]]
                    + failures.map {
                        [
                            String(integer($0["calls"])), string($0["outcome"]), string($0["endpoint"]),
                            string($0["error"]),
                            array($0["sessions"]).map { string($0) }.prefix(2).joined(separator: ","),
                        ]
                    })
        }
        let origins = array(report["origins"]).map(object)
        if !origins.isEmpty {
            lines.append("")
            lines.append("Calls in flight per origin (adaptive limit), and what cut it:")
            lines += indented(
                [
                    [
                        "ORIGIN", "LIMIT", "AT END", "LOWEST", "MEDIAN", "TIMEOUTS", "503/429", "REFUSED", "RESET",
                        "UNACKED", "SLOW",
                    ]
                ]
                    + origins.map {
                        let cuts = object($0["cuts"])
                        return [
                            string($0["origin"]), String(integer($0["limit_highest"])),
                            String(integer($0["limit_final"])), seconds(integer($0["latency_lowest_usec"])),
                            seconds(integer($0["latency_median_usec"])),
                        ]
                            + ["timeout", "overloaded", "refused", "reset", "unacknowledged", "slow"].map {
                                String(integer(cuts[$0]))
                            }
                    })
        }
        let kept = array(report["kept"]).map(object)
        if !kept.isEmpty {
            lines.append("")
            let shown = kept.count < Int(integer(sessions["kept"])) ? " (the first \(kept.count))" : ""
            lines.append("Sessions kept\(shown): " + kept.map { string($0["id"]) }.joined(separator: " "))
        }
        lines.append("")
        let journal = object(report["journal"])
        var journalLine =
            "Journal: the run wrote \(integer(journal["entries"])) call entries; "
            + "\(integer(journal["dropped"])) entries could not be journaled"
        let check = object(report["journal_check"])
        if case .bool(true)? = check["checked"] {
            if case .bool(true)? = check["complete"] {
                journalLine += "; the journal is complete for this run (\(integer(check["calls_journaled"])) calls)"
            } else {
                journalLine += "; the journal is incomplete for this run: \(string(check["missing"]))"
            }
        } else if !check.isEmpty {
            journalLine += " (journal not checked: \(string(check["reason"])))"
        }
        lines.append(journalLine)
        if integer(report["results_omitted"]) > 0 {
            lines.append(
                "(\(integer(report["results_omitted"])) results of ended calls were not kept: the record is bounded)")
        }
        return lines
    }

    private static func indented(_ rows: [[String]]) -> [String] { TextTable.lines(rows).map { "  " + $0 } }
}
