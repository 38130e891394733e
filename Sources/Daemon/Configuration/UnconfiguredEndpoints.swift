import Configuration
import JSON
import Journal
import Sessions

/// Stored sessions that name endpoints the configuration no longer has (an endpoint removed or
/// renamed). They are kept, so a reload that brings the endpoint back loses nothing, and reported
/// at start and at reload (journal), in `status` and in `list`. The next stop run drops those
/// endpoints from them (journaled per session) and ends them at the endpoints that remain; a
/// session left with none leaves the store. Never kept for ever in silence.
struct UnconfiguredEndpoints: Equatable {
    /// Stored sessions per endpoint name that is not configured.
    let sessionsByEndpoint: [String: Int]
    /// Sessions naming at least one of them.
    let sessionCount: Int

    /// Counts them in `sessions` against `configuration`.
    init<Sessions: Sequence<Session>>(_ sessions: Sessions, configuration: Configuration) {
        self.init(usage: sessions.lazy.map { ($0.endpoints, 1) }, configuration: configuration)
    }

    /// Counts them from how many sessions name each list of endpoints (``SessionStore/endpointUsage``):
    /// the time it takes grows with the distinct lists, not with the sessions.
    init<Usage: Sequence<([String], Int)>>(usage: Usage, configuration: Configuration) {
        let configured = Set(configuration.endpoints.map(\.name))
        var byEndpoint: [String: Int] = [:]
        var count = 0
        for (endpoints, sessions) in usage where !endpoints.allSatisfy(configured.contains) {
            count += sessions
            for name in endpoints where !configured.contains(name) { byEndpoint[name, default: 0] += sessions }
        }
        sessionsByEndpoint = byEndpoint
        sessionCount = count
    }

    /// Whether every stored session names only configured endpoints.
    var isEmpty: Bool { sessionCount == 0 }

    /// `auth-old (3), licence (1)`.
    var endpointList: String {
        sessionsByEndpoint.keys.sorted().map { "\($0) (\(sessionsByEndpoint[$0] ?? 0))" }.joined(separator: ", ")
    }

    /// For operators: what is wrong and what will happen.
    var note: String {
        "\(sessionCount) stored session\(sessionCount == 1 ? "" : "s") name endpoints that are not configured: "
            + "\(endpointList); the next stop run drops these endpoints from them (or restore the endpoints "
            + "and reload)"
    }

    /// `{"auth-old": 3}` for `status`.
    var json: JSONValue { .object(sessionsByEndpoint.mapValues { .integer(Int64($0)) }) }

    /// Journals the note (a warning), if there is anything to say.
    func record(in journal: any JournalSink) {
        guard !isEmpty else { return }
        journal.record(
            JournalEntry(
                .endpointsUnconfigured, note,
                [
                    JournalField(.sessionsTotal, sessionCount),
                    JournalField(.endpoint, sessionsByEndpoint.keys.sorted().joined(separator: " ")),
                ]))
    }
}
