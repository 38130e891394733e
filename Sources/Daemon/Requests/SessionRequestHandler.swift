import Basics
import Control
import EventLoop
import JSON
import Sessions
import Vocabulary

/// The daemon's answers to the control requests about sessions: registration (acknowledged once
/// durable), and listing, removing, ending and counting sessions and reading run reports, each
/// user seeing only their own (root sees all). ``Daemon`` routes each request here, with its
/// ``DaemonState`` as it is at that moment; `reload` is the daemon's own. Answers go back only
/// through the request's ``ControlReply``.
final class SessionRequestHandler {
    private let committer: StoreCommitter
    private let runs: RunCoordinator
    private let configuration: ActiveConfiguration
    private let loop: EventLoop
    /// When the daemon started, for the uptime.
    private let startedAt: MonotonicInstant
    /// The last stop run's summary kept in the state directory at start.
    private let lastStopSummary: JSONValue?
    /// Where the sleep lock is (`[Sleep] EndSessions=yes`), for `status`; nil when it is off.
    var sleepLock: () -> String? = { nil }

    /// Answers from `committer`'s store, `runs` and the `configuration` in force.
    init(
        committer: StoreCommitter, runs: RunCoordinator, configuration: ActiveConfiguration, loop: EventLoop,
        startedAt: MonotonicInstant, lastStopSummary: JSONValue?
    ) {
        self.committer = committer
        self.runs = runs
        self.configuration = configuration
        self.loop = loop
        self.startedAt = startedAt
        self.lastStopSummary = lastStopSummary
    }

    private var store: SessionStore { committer.store }

    /// `register`: keeps a new session of `peer`'s (unless `state` takes no registrations),
    /// answered with its id once it is durable.
    func register(
        key: SessionKey, endpoints: [String], label: String?, for peer: PeerCredentials, in state: DaemonState,
        reply: ControlReply
    ) {
        guard state.acceptsRegistrations else {
            reply(.failure(.stopping, "the daemon is stopping and takes no new sessions"))
            return
        }
        let settings = configuration.current
        let unknown = endpoints.filter { settings.endpoint(named: $0) == nil }
        guard unknown.isEmpty, !endpoints.isEmpty else {
            let configured = settings.endpoints.map(\.name).joined(separator: ", ")
            reply(
                .failure(
                    .badRequest,
                    endpoints.isEmpty
                        ? "name at least one endpoint (configured: \(configured))"
                        : "unknown endpoint '\(unknown[0])' (configured: \(configured.isEmpty ? "none" : configured))"))
            return
        }
        guard key.exposedSecret.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
            reply(.failure(.badRequest, "the key must not contain control characters"))
            return
        }
        let perUser = settings.control.maxSessionsPerUser
        if peer.uid != 0, store.heldCount(ownedBy: peer.uid) >= perUser {
            reply(
                .failure(
                    .limit, "uid \(peer.uid) already holds \(perUser) sessions ([Control] MaxSessionsPerUser=)"))
            return
        }
        var id = SessionID.random()
        while store.contains(id) { id = SessionID.random() }
        let session = Session(
            id: id, key: key, endpoints: endpoints, ownerUID: peer.uid, label: label,
            registeredAt: wallClockMicroseconds())
        do {
            try committer.register(session, reply: { reply($0) }, response: .registered(id: id.description))
        } catch {
            reply(.failure(.internal, "not registered: \(error)"))
        }
    }

    /// `unregister`: forgets the session `text` names, if `peer` may see it; answered once that
    /// is durable.
    func unregister(_ text: String, for peer: PeerCredentials, reply: ControlReply) {
        guard let session = visibleSession(text, to: peer, reply: reply) else { return }
        committer.unregister(session, by: peer.uid, reply: { reply($0) })
    }

    /// `list`: the sessions `peer` may see, never their keys.
    func list(for peer: PeerCredentials, reply: ControlReply) {
        let now = wallClockMicroseconds()
        let visible = peer.uid == 0 ? store.allSessions : store.sessions(ownedBy: peer.uid)
        let configured = Set(configuration.current.endpoints.map(\.name))
        reply(.sessions(visible.map { Self.info($0, now: now, configured: configured) }))
    }

    /// `end`: ends `target` now in a background run (only while `state` is running); answered
    /// with what became of each session once every run involved has finished.
    func end(_ target: ControlRequest.EndTarget, for peer: PeerCredentials, in state: DaemonState, reply: ControlReply)
    {
        guard state == .running else {
            reply(.failure(.stopping, "the daemon is stopping: its stop run ends every session"))
            return
        }
        let sessions: [Session]
        switch target {
        case .all:
            sessions = peer.uid == 0 ? store.allSessions : store.sessions(ownedBy: peer.uid)
        case .session(let text):
            guard let session = visibleSession(text, to: peer, reply: reply) else { return }
            sessions = [session]
        }
        runs.endInBackground(sessions, kind: .onDemand, reply: { reply($0) })
    }

    /// The session `text` names, if `peer` may see it; otherwise replies with the error.
    private func visibleSession(_ text: String, to peer: PeerCredentials, reply: ControlReply) -> Session? {
        guard let id = SessionID(validating: text) else {
            // Never quoted: an error does not send the request's text back (docs/control-protocol.md).
            reply(.failure(.badRequest, "field 'id' is not a session id (16 lowercase hex digits)"))
            return nil
        }
        // Another user's session is "not found": its existence is not theirs to learn.
        guard let session = store.session(id: id), peer.uid == 0 || session.ownerUID == peer.uid else {
            reply(.failure(.notFound, "no session \(id)"))
            return nil
        }
        return session
    }

    /// `session` as `list` shows it, `now` microseconds since the epoch; `configured`: the endpoint
    /// names configured now.
    static func info(_ session: Session, now: UInt64, configured: Set<String>) -> ControlSessionInfo {
        ControlSessionInfo(
            id: session.id.description, label: session.label, endpoints: session.endpoints,
            ownerUID: session.ownerUID, registeredAt: session.registeredAt,
            ageSeconds: now > session.registeredAt ? (now - session.registeredAt) / 1_000_000 : 0,
            attempts: session.attempts, lastOutcome: session.lastOutcome,
            unconfiguredEndpoints: session.endpoints.filter { !configured.contains($0) })
    }

    /// `status`: the daemon's `state`, counts and settings, and for root the last runs.
    func status(for peer: PeerCredentials, in state: DaemonState, reply: ControlReply) {
        reply(.status(statusObject(for: peer, in: state)))
    }

    private func statusObject(for peer: PeerCredentials, in state: DaemonState) -> JSONValue {
        let settings = configuration.current
        let visible = peer.uid == 0 ? store.count : store.count(ownedBy: peer.uid)
        var object: [String: JSONValue] = [
            "state": .string(state.rawValue),
            "version": .string(SessionCleanupVersion.string),
            "sessions": .integer(Int64(visible)),
            "endpoints": .array(settings.endpoints.map { .string($0.name) }),
            "budget_usec": .integer(settings.stop.budget.microseconds),
            "leftover_budget_usec": .integer(settings.start.leftoverBudget.microseconds),
            "uptime_usec": .integer(loop.clock.now().duration(since: startedAt).microseconds),
            "background_runs": .integer(Int64(runs.backgroundRuns.count)),
        ]
        if let cause = store.readOnlyCause { object["degraded"] = .string(cause.message) }
        if let cause = configuration.fallbackCause {
            object["configuration_fallback"] = .string("the files are invalid, running on the last good one: \(cause)")
        }
        if let progress = runs.stopRun?.progressText { object["progress"] = .string(progress) }
        if let sleepLock = sleepLock() { object["sleep_lock"] = .string(sleepLock) }
        let unconfigured =
            peer.uid == 0
            ? UnconfiguredEndpoints(
                usage: store.endpointUsage.lazy.map { ($0.key, $0.value) }, configuration: settings)
            : UnconfiguredEndpoints(store.sessions(ownedBy: peer.uid), configuration: settings)
        if !unconfigured.isEmpty { object["unconfigured_endpoints"] = unconfigured.json }
        if peer.uid == 0, let lastReport = runs.lastReport { object["last_run"] = lastReport.summaryJSON }
        if peer.uid == 0, let lastStopSummary { object["last_stop_run"] = lastStopSummary }
        return .object(object)
    }

    // MARK: Report

    /// `report`: the last stop run (kept in the state directory), or the run `text` names if it
    /// is that one or the last background run (for anyone but root, only one with a call of
    /// theirs); as `peer` may see it.
    func report(_ text: String?, for peer: PeerCredentials, in state: DaemonState, reply: ControlReply) {
        guard state == .running else {
            reply(.failure(.stopping, "the daemon is stopping; its report is kept for after the next start"))
            return
        }
        var wanted: RunID?
        if let text {
            guard let id = RunID(validating: text) else {
                reply(.failure(.badRequest, "field 'run_id' is not a run id (32 lowercase hex digits)"))
                return
            }
            wanted = id
        }
        // The background run is its callers' business: one with no call of `peer`'s answers
        // below exactly as a run not kept (the same store read, the same words).
        if let last = runs.lastReport, let wanted, last.id == wanted,
            peer.uid == 0 || last.calls.contains(where: { $0.ownerUID == peer.uid })
        {
            reply(.ended(report: RunRecord(last).report(visibleTo: peer.uid)))
            return
        }
        guard let record = LastStopRunDocument.readRecord(from: store), wanted == nil || record.id == wanted else {
            let which = wanted.map { "run \($0) is not kept" } ?? "no stop run has been recorded yet"
            reply(
                .failure(
                    .notFound,
                    "\(which) (the daemon keeps the last stop run and the last background run)"
                        + (wanted.map { "; journalctl SESSION_CLEANUP_RUN_ID=\($0) shows its entries" } ?? "")))
            return
        }
        reply(.ended(report: record.report(visibleTo: peer.uid)))
    }
}
