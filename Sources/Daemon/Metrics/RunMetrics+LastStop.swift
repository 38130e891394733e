import JSON
import Metrics

extension RunMetrics {
    /// The last stop run's figures from its facts (`last-stop-run.json`, read at start), so that
    /// the metrics file keeps them after the restart. Without calls by endpoint: the facts count
    /// calls by outcome only, and the results are read only when `report` asks. Nil when the
    /// facts lack a member.
    init?(lastStopFacts facts: JSONValue) {
        guard case .object(let members) = facts, case .string(let kind)? = members["kind"],
            case .integer(let duration)? = members["duration_usec"],
            case .integer(let budget)? = members["budget_usec"],
            case .integer(let finished)? = members["finished_at_usec"]
        else { return nil }
        var dropped: Int64 = 0
        if case .integer(let count)? = members["journal_dropped"] { dropped = count }
        self.init(
            kind: kind, outcomes: [:], duration: .microseconds(duration), budget: .microseconds(budget),
            journalComplete: dropped == 0, finishedAt: UInt64(clamping: finished))
    }
}
