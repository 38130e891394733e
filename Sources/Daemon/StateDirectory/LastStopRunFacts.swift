import JSON
import Runs
import Sessions
import Vocabulary

/// The last stop run's facts and counts (`last-stop-run.json`): what `status` shows as
/// `last_stop_run`, read at start. Compact JSON, members sorted, slashes escaped (as earlier
/// versions' `JSONEncoder` wrote it):
///
///     {"budget_usec":…,"calls":{"ended":…,…},"duration_usec":…,"expired":"…",
///      "finished_at_usec":…,"journal_dropped":…,"journal_entries":…,"kind":"stop",
///      "results_kept":…,"results_omitted":…,"run_id":"…","sessions_ended":…,
///      "sessions_left":…,"sessions_total":…,"started_at_usec":…}
///
/// `expired` (`time-up` or `second-signal`) only when the budget expired. The calls' results
/// are in ``LastStopRunResults``.
enum LastStopRunFacts {
    /// The document's name in the state directory.
    static let name = "last-stop-run.json"

    /// The facts of the last stop run, if the document is there and parses.
    static func read(from store: SessionStore) -> JSONValue? {
        store.readDocument(name).flatMap { try? StrictJSON.parse($0) }
    }

    /// The document's bytes for `record`.
    static func text(_ record: RunRecord) throws(JSONWriter.UnrepresentableNumber) -> [UInt8] {
        try JSONWriter.text(of: json(record), escapingSlashes: true)
    }

    /// The facts of `record`, as `status` shows them.
    static func json(_ record: RunRecord) -> JSONValue {
        var object: [String: JSONValue] = [
            "run_id": .string(record.id.description),
            "kind": .string(record.kind),
            "started_at_usec": .integer(Int64(clamping: record.startedAt)),
            "finished_at_usec": .integer(Int64(clamping: record.finishedAt)),
            "budget_usec": .integer(record.budget.microseconds),
            "duration_usec": .integer(record.duration.microseconds),
            "sessions_total": .integer(Int64(record.sessionsTotal)),
            "sessions_ended": .integer(Int64(record.sessionsEnded)),
            "sessions_left": .integer(Int64(record.sessionsLeft)),
            "calls": .object(record.callCounts.mapValues { .integer(Int64($0)) }),
            "journal_entries": .integer(Int64(record.journalEntries)),
            "journal_dropped": .integer(Int64(record.journalDropped)),
            "results_kept": .integer(Int64(record.results.count)),
            "results_omitted": .integer(Int64(record.resultsOmitted)),
        ]
        if let expiry = record.expiry { object["expired"] = .string(expiry) }
        if !record.origins.isEmpty { object["origins"] = .array(record.origins.map(\.json)) }
        return .object(object)
    }

    /// The run the facts are of (what the results file must name too).
    static func runID(in facts: [String: JSONValue]) -> RunID? {
        guard case .string(let text)? = facts["run_id"] else { return nil }
        return RunID(validating: text)
    }

    /// The record the facts describe, with the calls' `results`; nil when a member is missing or
    /// of the wrong type (`journal_entries`, `journal_dropped` and `results_omitted` count 0
    /// when missing).
    static func record(from facts: [String: JSONValue], results: [RunReport.CallResult]) -> RunRecord? {
        func integer(_ name: String) -> Int64? {
            if case .integer(let value)? = facts[name] { return value }
            return nil
        }
        guard let id = runID(in: facts), case .string(let kind)? = facts["kind"],
            case .object(let calls)? = facts["calls"],
            let startedAt = integer("started_at_usec"), let finishedAt = integer("finished_at_usec"),
            let budget = integer("budget_usec"), let duration = integer("duration_usec"),
            let total = integer("sessions_total"), let ended = integer("sessions_ended"),
            let left = integer("sessions_left")
        else { return nil }
        var counts: [String: Int] = [:]
        for (word, value) in calls {
            guard case .integer(let count) = value else { return nil }
            counts[word] = Int(count)
        }
        var expiry: String?
        if case .string(let text)? = facts["expired"] { expiry = text }
        var origins: [OriginReport] = []
        if case .array(let list)? = facts["origins"] { origins = list.compactMap(OriginReport.init(json:)) }
        var record = RunRecord(
            id: id, kind: kind, startedAt: UInt64(clamping: startedAt), finishedAt: UInt64(clamping: finishedAt),
            budget: .microseconds(budget), duration: .microseconds(duration), expiry: expiry,
            sessionsTotal: Int(total), sessionsEnded: Int(ended), sessionsLeft: Int(left), callCounts: counts,
            journalEntries: Int(integer("journal_entries") ?? 0), journalDropped: Int(integer("journal_dropped") ?? 0),
            results: results, resultsOmitted: Int(integer("results_omitted") ?? 0))
        record.origins = origins
        return record
    }
}
