import Basics
import Control
import EventLoop
import Glibc
import JSON
import Sessions
import Vocabulary

/// The daemon's answers to control requests: registration (acknowledged once durable), and
/// listing, removing, ending and counting sessions, each user seeing only their
/// own (root sees all).
final class SessionRequestHandler: ControlRequestHandler {
    /// What request handling needs of the daemon as a whole.
    struct DaemonContext {
        /// The daemon's phase, read at each request.
        let phase: () -> Daemon.Phase
        /// Reloads the configuration (the `reload` request).
        let reload: () -> Daemon.ReloadOutcome
        /// When the daemon started, for the uptime.
        let startedAt: MonotonicInstant
        /// The last stop run's summary kept in the state directory at start.
        let lastStopSummary: JSONValue?
    }

    private let committer: StoreCommitter
    private let runs: RunCoordinator
    private let configuration: ActiveConfiguration
    private let daemon: DaemonContext
    private let loop: EventLoop

    init(
        committer: StoreCommitter, runs: RunCoordinator, configuration: ActiveConfiguration, daemon: DaemonContext,
        loop: EventLoop
    ) {
        self.committer = committer
        self.runs = runs
        self.configuration = configuration
        self.daemon = daemon
        self.loop = loop
    }

    private var store: SessionStore { committer.store }

    /// Handles one request from `peer`; replies after the change is durable where there is one.
    func handle(
        _ request: ControlRequest, from peer: PeerCredentials, reply: ControlReply
    ) {
        switch request {
        case .register(let key, let endpoints, let label):
            register(key: key, endpoints: endpoints, label: label, peer: peer, reply: reply)
        case .unregister(let text):
            guard let session = visibleSession(text, to: peer, reply: reply) else { return }
            committer.unregister(session, by: peer.uid, reply: { reply($0) })
        case .list:
            let now = wallClockMicroseconds()
            let visible = peer.uid == 0 ? store.allSessions : store.sessions(ownedBy: peer.uid)
            let configured = Set(configuration.current.endpoints.map(\.name))
            reply(.sessions(visible.map { Self.info($0, now: now, configured: configured) }))
        case .status:
            reply(.status(status(for: peer)))
        case .reload:
            reload(for: peer, reply: reply)
        case .end(let target):
            guard case .running = daemon.phase() else {
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
        case .report(let runID):
            report(runID, for: peer, reply: reply)
        }
    }

    private func register(
        key: SessionKey, endpoints: [String], label: String?, peer: PeerCredentials,
        reply: ControlReply
    ) {
        guard daemon.phase().acceptsRegistrations else {
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

    /// The session `text` names, if `peer` may see it; otherwise replies with the error.
    private func visibleSession(
        _ text: String, to peer: PeerCredentials, reply: ControlReply
    ) -> Session? {
        guard let id = SessionID(validating: text) else {
            reply(.failure(.badRequest, "'\(text)' is not a session id (16 hex digits)"))
            return nil
        }
        // Another user's session is "not found": its existence is not theirs to learn.
        guard let session = store.session(id: id), peer.uid == 0 || session.ownerUID == peer.uid else {
            reply(.failure(.notFound, "no session \(id)"))
            return nil
        }
        return session
    }

    static func info(_ session: Session, now: UInt64, configured: Set<String>) -> ControlSessionInfo {
        ControlSessionInfo(
            id: session.id.description, label: session.label, endpoints: session.endpoints,
            ownerUID: session.ownerUID, registeredAt: session.registeredAt,
            ageSeconds: now > session.registeredAt ? (now - session.registeredAt) / 1_000_000 : 0,
            attempts: session.attempts, lastOutcome: session.lastOutcome,
            unconfiguredEndpoints: session.endpoints.filter { !configured.contains($0) })
    }

    /// `reload`, for root and the daemon's own user (`ExecReload=` runs as the service's user):
    /// answered once the new configuration is in force, or with why it was not applied.
    private func reload(for peer: PeerCredentials, reply: ControlReply) {
        guard peer.uid == 0 || peer.uid == geteuid() else {
            reply(.failure(.forbidden, "reload is for root and the daemon's own user (uid \(geteuid()))"))
            return
        }
        guard case .running = daemon.phase() else {
            reply(.failure(.stopping, "the daemon is stopping or restarting: nothing to reload"))
            return
        }
        switch daemon.reload() {
        case .applied(let files, let notes): reply(.reloaded(files: files, notes: notes))
        case .refused(let error): reply(.failure(.invalidConfiguration, "configuration not reloaded: \(error)"))
        }
    }

    private func status(for peer: PeerCredentials) -> JSONValue {
        let settings = configuration.current
        let visible = peer.uid == 0 ? store.count : store.count(ownedBy: peer.uid)
        var object: [String: JSONValue] = [
            "state": .string(daemon.phase().name),
            "version": .string(SessionCleanupVersion.string),
            "sessions": .integer(Int64(visible)),
            "endpoints": .array(settings.endpoints.map { .string($0.name) }),
            "budget_usec": .integer(settings.stop.budget.microseconds),
            "leftover_budget_usec": .integer(settings.start.leftoverBudget.microseconds),
            "uptime_usec": .integer(loop.clock.now().duration(since: daemon.startedAt).microseconds),
            "background_runs": .integer(Int64(runs.backgroundRuns.count)),
        ]
        if let progress = runs.stopRun?.progressText { object["progress"] = .string(progress) }
        let unconfigured =
            peer.uid == 0
            ? UnconfiguredEndpoints(
                usage: store.endpointUsage.lazy.map { ($0.key, $0.value) }, configuration: settings)
            : UnconfiguredEndpoints(store.sessions(ownedBy: peer.uid), configuration: settings)
        if !unconfigured.isEmpty { object["unconfigured_endpoints"] = unconfigured.json }
        if peer.uid == 0, let lastReport = runs.lastReport { object["last_run"] = lastReport.summaryJSON }
        if peer.uid == 0, let lastStopSummary = daemon.lastStopSummary { object["last_stop_run"] = lastStopSummary }
        return .object(object)
    }

    // MARK: Report

    /// `report`: the last stop run (kept in the state directory), or the run `text` names if it
    /// is that one or the last background run; as `peer` may see it.
    private func report(_ text: String?, for peer: PeerCredentials, reply: ControlReply) {
        guard case .running = daemon.phase() else {
            reply(.failure(.stopping, "the daemon is stopping; its report is kept for after the next start"))
            return
        }
        var wanted: RunID?
        if let text {
            guard let id = RunID(validating: text) else {
                reply(.failure(.badRequest, "'\(ControlRequest.printable(text))' is not a run id (32 hex digits)"))
                return
            }
            wanted = id
        }
        if let last = runs.lastReport, let wanted, last.id == wanted {
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
