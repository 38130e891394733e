import Basics
import JSON

/// A run's report (`end`'s reply; the same summary `status` shows for the last run) for people:
/// one sentence, a table of the calls, then whatever else the report holds.
enum RunReportText {
    /// Members the sentence and the table use up.
    private static let used: Set<String> = [
        "sessions_total", "sessions_ended", "sessions_left", "duration_usec", "results", "calls",
        // `end` knows which run it asked for: the kind adds nothing for people (--json keeps it).
        "kind",
    ]

    /// The report as lines.
    static func lines(_ report: JSONValue, now: UInt64 = wallClockMicroseconds()) -> [String] {
        guard case .object(let members) = report else { return HumanReadable.lines(report, now: now) }
        var lines: [String] = []
        let total = integer(members["sessions_total"])
        let ended = integer(members["sessions_ended"])
        let left = integer(members["sessions_left"])
        if total == 0 {
            lines.append("No sessions to end.")
        } else {
            var sentence = "Ended \(ended) of \(HumanText.count(total, "session"))"
            if let duration = members["duration_usec"], case .integer(let us) = duration {
                sentence += " in \(HumanText.duration(microseconds: us))"
            }
            if left > 0 {
                sentence += "; \(HumanText.count(left, "session")) kept, to be ended at the next stop"
            }
            lines.append(sentence + ".")
        }
        if case .object(let calls)? = members["calls"], !calls.isEmpty {
            let parts = calls.keys.sorted().map { "\(integer(calls[$0])) \($0)" }
            lines.append("Calls: " + parts.joined(separator: ", ") + ".")
        }
        if case .array(let results)? = members["results"], !results.isEmpty {
            var rows = [["SESSION", "ENDPOINT", "OUTCOME", "ATTEMPTS", "DETAIL"]]
            for case .object(let call) in results {
                var detail: [String] = []
                if case .integer(let status)? = call["http_status"] { detail.append("HTTP \(status)") }
                if case .string(let error)? = call["error"] { detail.append(error) }
                rows.append([
                    text(call["id"]), text(call["endpoint"]), text(call["outcome"]), text(call["attempts"]),
                    detail.joined(separator: ": "),
                ])
            }
            lines += [""] + TextTable.lines(rows)
        }
        let rest = members.filter { !used.contains($0.key) }
        if !rest.isEmpty { lines += [""] + HumanReadable.lines(.object(rest), now: now) }
        return lines
    }

    private static func integer(_ value: JSONValue?) -> Int {
        if case .integer(let number)? = value { return Int(clamping: number) }
        return 0
    }

    private static func text(_ value: JSONValue?) -> String {
        switch value {
        case .string(let text)?: return text
        case .integer(let number)?: return String(number)
        default: return "-"
        }
    }
}
