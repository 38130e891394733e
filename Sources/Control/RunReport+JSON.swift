import Basics
import JSON
import Vocabulary

/// How a run's report appears in control replies (`status`, `end`) and the last stop run's
/// summary document: counts and timing, never a key.
extension RunReport {
    /// Kind, session counts, duration, calls per outcome, and why the budget expired.
    package var summaryJSON: JSONValue {
        var object: [String: JSONValue] = [
            "kind": .string(kind.rawValue),
            "sessions_total": .integer(Int64(sessionsTotal)),
            "sessions_ended": .integer(Int64(sessionsEnded)),
            "sessions_left": .integer(Int64(sessionsLeft)),
            "duration_usec": .integer(duration.microseconds),
            "calls": .object(callCounts.mapValues { .integer(Int64($0)) }),
        ]
        if let expiry { object["expired"] = .string(expiry.rawValue) }
        return .object(object)
    }

    /// The summary plus every call's result (session id, endpoint, outcome, attempts, status, error).
    package var detailedJSON: JSONValue {
        guard case .object(var object) = summaryJSON else { return summaryJSON }
        object["results"] = .array(
            calls.map { call in
                var entry: [String: JSONValue] = [
                    "id": .string(call.sessionID.description), "endpoint": .string(call.endpoint),
                    "outcome": .string(call.outcome.word), "attempts": .integer(Int64(call.attempts)),
                ]
                if let status = call.outcome.httpStatus { entry["http_status"] = .integer(Int64(status)) }
                if let cause = call.outcome.cause { entry["error"] = .string(cause) }
                return .object(entry)
            })
        return .object(object)
    }
}
