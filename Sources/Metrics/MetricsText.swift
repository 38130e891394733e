import Basics

/// The metrics file's text, in the Prometheus text exposition format that node_exporter's
/// textfile collector reads (`# HELP`, `# TYPE`, one sample a line, sorted for stable diffs).
///
///     session_cleanup_sessions{endpoint="auth"} 3
///     session_cleanup_last_run_calls{kind="stop",endpoint="auth",outcome="ended"} 2
///     session_cleanup_last_run_duration_seconds{kind="stop"} 0.125
///
/// One series per run kind: the last stop run stays next to the last leftover run. Endpoint
/// names are the configuration's; nothing of a session (id, key, label) or a URL is written.
package enum MetricsText {
    /// The file's text for `sessions` (held, by endpoint) and the last run of each kind.
    package static func text(sessionsByEndpoint sessions: [String: Int], lastRuns: [RunMetrics]) -> String {
        var out = ""
        family(&out, "sessions", "gauge", "Sessions held, by the endpoint that is to end them.")
        for endpoint in sessions.keys.sorted() {
            sample(&out, "sessions", [("endpoint", endpoint)], Double(sessions[endpoint] ?? 0))
        }
        let runs = lastRuns.sorted { $0.kind < $1.kind }
        family(&out, "last_run_calls", "gauge", "Calls of the last run of each kind, by endpoint and outcome.")
        for run in runs {
            for endpoint in run.outcomes.keys.sorted() {
                let outcomes = run.outcomes[endpoint] ?? [:]
                for outcome in outcomes.keys.sorted() {
                    sample(
                        &out, "last_run_calls", [("kind", run.kind), ("endpoint", endpoint), ("outcome", outcome)],
                        Double(outcomes[outcome] ?? 0))
                }
            }
        }
        family(&out, "last_run_duration_seconds", "gauge", "How long the last run of each kind took.")
        for run in runs { sample(&out, "last_run_duration_seconds", [("kind", run.kind)], seconds(run.duration)) }
        family(&out, "last_run_budget_seconds", "gauge", "The budget of the last run of each kind.")
        for run in runs { sample(&out, "last_run_budget_seconds", [("kind", run.kind)], seconds(run.budget)) }
        family(
            &out, "last_run_journal_complete", "gauge",
            "1 when the journal took every entry of the last run of each kind, else 0.")
        for run in runs {
            sample(&out, "last_run_journal_complete", [("kind", run.kind)], run.journalComplete ? 1 : 0)
        }
        family(
            &out, "last_run_timestamp_seconds", "gauge", "When the last run of each kind finished (Unix time).")
        for run in runs {
            sample(&out, "last_run_timestamp_seconds", [("kind", run.kind)], Double(run.finishedAt) / 1_000_000)
        }
        return out
    }

    private static func seconds(_ duration: Duration) -> Double { Double(duration.microseconds) / 1_000_000 }

    private static func family(_ out: inout String, _ name: String, _ type: String, _ help: String) {
        out += "# HELP session_cleanup_\(name) \(help)\n# TYPE session_cleanup_\(name) \(type)\n"
    }

    private static func sample(_ out: inout String, _ name: String, _ labels: [(String, String)], _ value: Double) {
        out += "session_cleanup_\(name)"
        if !labels.isEmpty {
            out += "{" + labels.map { "\($0.0)=\"\(escaped($0.1))\"" }.joined(separator: ",") + "}"
        }
        out += " \(number(value))\n"
    }

    /// A whole number without a fraction (`3`), else Swift's shortest exact form (`0.125`).
    private static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    /// A label value as the format wants it: backslash, double quote and newline escaped.
    static func escaped(_ value: String) -> String {
        var text = ""
        for character in value {
            switch character {
            case "\\": text += "\\\\"
            case "\"": text += "\\\""
            case "\n": text += "\\n"
            default: text.append(character)
            }
        }
        return text
    }
}
