import Basics
import JSON
import Sessions
import Vocabulary

/// `session-cleanup report`: a run's record as one user may see it — counts by outcome, time
/// taken against the budget, the slowest calls, failures grouped by cause, sessions kept.
extension RunRecord {
    /// Slowest calls shown.
    static let slowestShown = 10
    /// Failure groups shown (the largest first).
    static let failureGroupsShown = 20
    /// Sessions kept that are listed by id.
    static let keptShown = 100
    /// Session ids listed per failure group.
    static let idsPerGroup = 5

    /// The report as `uid` may see it: root sees every call; anyone else only the calls of the
    /// sessions they registered, with counts over those alone.
    package func report(visibleTo uid: UInt32) -> JSONValue {
        let everything = uid == 0
        let visible = everything ? results : results.filter { $0.ownerUID == uid }
        var counts = callCounts
        var sessions = (total: sessionsTotal, ended: sessionsEnded, kept: sessionsLeft)
        if !everything {
            counts = [:]
            for call in visible { counts[call.outcome.word, default: 0] += 1 }
            sessions = Self.sessionCounts(visible)
        }
        var object: [String: JSONValue] = [
            "run_id": .string(id.description),
            "kind": .string(kind),
            "started_at_usec": .integer(Int64(clamping: startedAt)),
            "finished_at_usec": .integer(Int64(clamping: finishedAt)),
            "budget_usec": .integer(budget.microseconds),
            "duration_usec": .integer(duration.microseconds),
            "scope": .string(everything ? "all" : "uid \(uid)"),
            "sessions": .object([
                "total": .integer(Int64(sessions.total)), "ended": .integer(Int64(sessions.ended)),
                "kept": .integer(Int64(sessions.kept)),
            ]),
            "calls": .object(
                counts.mapValues { .integer(Int64($0)) }.merging(
                    ["total": .integer(Int64(counts.values.reduce(0, +)))], uniquingKeysWith: { $1 })),
            "slowest": .array(Self.slowest(visible).map(Self.json)),
            "failures": .array(Self.failureGroups(visible)),
            "kept": .array(Self.kept(visible)),
            "journal": .object([
                "entries": .integer(Int64(journalEntries)), "dropped": .integer(Int64(journalDropped)),
            ]),
            "results_omitted": .integer(Int64(resultsOmitted)),
        ]
        if let expiry { object["expired"] = .string(expiry) }
        // The origins are the servers' story, not a user's: every user sees them.
        if !origins.isEmpty { object["origins"] = .array(origins.map(\.json)) }
        return .object(object)
    }

    private static func sessionCounts(_ calls: [RunReport.CallResult]) -> (total: Int, ended: Int, kept: Int) {
        var allEnded: [SessionID: Bool] = [:]
        for call in calls { allEnded[call.sessionID] = (allEnded[call.sessionID] ?? true) && call.outcome.isEnded }
        let ended = allEnded.values.count { $0 }
        return (allEnded.count, ended, allEnded.count - ended)
    }

    private static func slowest(_ calls: [RunReport.CallResult]) -> [RunReport.CallResult] {
        var top: [RunReport.CallResult] = []
        for call in calls where call.attempts > 0 {
            guard top.count < slowestShown || call.duration > top[top.count - 1].duration else { continue }
            let index = top.firstIndex { call.duration > $0.duration } ?? top.count
            top.insert(call, at: index)
            if top.count > slowestShown { top.removeLast() }
        }
        return top
    }

    private static func json(_ call: RunReport.CallResult) -> JSONValue {
        var object: [String: JSONValue] = [
            "id": .string(call.sessionID.description), "endpoint": .string(call.endpoint),
            "outcome": .string(call.outcome.word), "attempts": .integer(Int64(call.attempts)),
            "duration_usec": .integer(call.duration.microseconds),
        ]
        if let status = call.outcome.httpStatus { object["http_status"] = .integer(Int64(status)) }
        if let cause = call.outcome.cause { object["error"] = .string(cause) }
        return .object(object)
    }

    /// Calls that did not end their session, grouped by endpoint, outcome and cause.
    private static func failureGroups(_ calls: [RunReport.CallResult]) -> [JSONValue] {
        struct Key: Hashable {
            let endpoint: String
            let outcome: String
            let cause: String
        }
        var groups: [Key: (count: Int, ids: [String])] = [:]
        var order: [Key] = []
        for call in calls where !call.outcome.isEnded {
            let key = Key(endpoint: call.endpoint, outcome: call.outcome.word, cause: call.outcome.cause ?? "")
            if groups[key] == nil { order.append(key) }
            var group = groups[key] ?? (0, [])
            group.count += 1
            if group.ids.count < idsPerGroup { group.ids.append(call.sessionID.description) }
            groups[key] = group
        }
        // Largest first; ties in the order they first occurred.
        let ranked = order.enumerated().sorted {
            let a = groups[$0.element]?.count ?? 0
            let b = groups[$1.element]?.count ?? 0
            return a != b ? a > b : $0.offset < $1.offset
        }
        return ranked.prefix(failureGroupsShown).map { _, key in
            let group = groups[key] ?? (0, [])
            return .object([
                "endpoint": .string(key.endpoint), "outcome": .string(key.outcome), "error": .string(key.cause),
                "calls": .integer(Int64(group.count)), "sessions": .array(group.ids.map { .string($0) }),
            ])
        }
    }

    /// The sessions kept (some endpoint not ended), each with the first of its calls that did
    /// not end it.
    private static func kept(_ calls: [RunReport.CallResult]) -> [JSONValue] {
        var seen = Set<SessionID>()
        var listed: [JSONValue] = []
        for call in calls where !call.outcome.isEnded && seen.insert(call.sessionID).inserted {
            guard listed.count < keptShown else { break }
            var object: [String: JSONValue] = [
                "id": .string(call.sessionID.description), "endpoint": .string(call.endpoint),
                "outcome": .string(call.outcome.word),
            ]
            if let cause = call.outcome.cause { object["error"] = .string(cause) }
            listed.append(.object(object))
        }
        return listed
    }
}
