/// The daemon's answers to control requests: registration with group commit, and listing,
/// removing and ending sessions, each user seeing only their own (root sees all).
extension Daemon: ControlRequestHandler {
    /// Handles one request from `peer`; replies after the change is durable where there is one.
    public func handle(
        _ request: ControlRequest, from peer: PeerCredentials, reply: @escaping (ControlResponse) -> Void
    ) {
        guard let store else {
            reply(.failure(.internal, "the session store is not open"))
            return
        }
        switch request {
        case .register(let key, let endpoints, let label):
            register(key: key, endpoints: endpoints, label: label, peer: peer, store: store, reply: reply)
        case .unregister(let text):
            guard let session = visibleSession(text, to: peer, in: store, reply: reply) else { return }
            store.remove(session.id)
            countOwner(session.ownerUID, by: -1)
            journal.record(
                JournalEntry(
                    .info, "Session \(session.id) unregistered by uid \(peer.uid) without being ended",
                    [
                        JournalField(.event, "unregistered"), JournalField(.sessionID, session.id.description),
                        JournalField(.peerUID, peer.uid),
                    ]))
            commitThenReply(reply, .success)
        case .list:
            let now = wallClockMicroseconds()
            let visible = peer.uid == 0 ? store.allSessions : store.sessions(ownedBy: peer.uid)
            reply(.sessions(visible.map { Self.info($0, now: now) }))
        case .status:
            reply(.status(status(for: peer, store: store)))
        case .end(let target):
            guard case .running = phase else {
                reply(.failure(.stopping, "the daemon is stopping: its stop run ends every session"))
                return
            }
            let sessions: [Session]
            switch target {
            case .all:
                sessions = peer.uid == 0 ? store.allSessions : store.sessions(ownedBy: peer.uid)
            case .session(let text):
                guard let session = visibleSession(text, to: peer, in: store, reply: reply) else { return }
                sessions = [session]
            }
            endInBackground(sessions, kind: .onDemand, reply: reply)
        }
    }

    private func register(
        key: SessionKey, endpoints: [String], label: String?, peer: PeerCredentials, store: SessionStore,
        reply: @escaping (ControlResponse) -> Void
    ) {
        guard case .running = phase else {
            reply(.failure(.stopping, "the daemon is stopping and takes no new sessions"))
            return
        }
        let unknown = endpoints.filter { configuration.endpoint(named: $0) == nil }
        guard unknown.isEmpty, !endpoints.isEmpty else {
            let configured = configuration.endpoints.map(\.name).joined(separator: ", ")
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
        if peer.uid != 0, ownerCounts[peer.uid, default: 0] >= configuration.control.maxSessionsPerUser {
            reply(
                .failure(
                    .limit,
                    "uid \(peer.uid) already holds \(configuration.control.maxSessionsPerUser) sessions "
                        + "([Control] MaxSessionsPerUser=)"))
            return
        }
        var id = SessionID.random()
        while store.contains(id) { id = SessionID.random() }
        let session = Session(
            id: id, key: key, endpoints: endpoints, ownerUID: peer.uid, label: label,
            registeredAt: wallClockMicroseconds())
        do {
            try store.register(session)
        } catch {
            reply(.failure(.internal, "not registered: \(error)"))
            return
        }
        countOwner(peer.uid, by: 1)
        var fields = [
            JournalField(.event, "registered"), JournalField(.sessionID, id.description),
            JournalField(.ownerUID, peer.uid), JournalField(.endpoint, endpoints.joined(separator: " ")),
        ]
        if let label { fields.append(JournalField(.sessionLabel, label)) }
        journal.record(JournalEntry(.info, "Session \(id) registered by uid \(peer.uid)", fields))
        commitThenReply(reply, .registered(id: id.description))
    }

    /// The session `text` names, if `peer` may see it; otherwise replies with the error.
    private func visibleSession(
        _ text: String, to peer: PeerCredentials, in store: SessionStore, reply: (ControlResponse) -> Void
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

    static func info(_ session: Session, now: UInt64) -> ControlSessionInfo {
        ControlSessionInfo(
            id: session.id.description, label: session.label, endpoints: session.endpoints,
            ownerUID: session.ownerUID, registeredAt: session.registeredAt,
            ageSeconds: now > session.registeredAt ? (now - session.registeredAt) / 1_000_000 : 0,
            attempts: session.attempts, lastOutcome: session.lastOutcome)
    }

    private func status(for peer: PeerCredentials, store: SessionStore) -> JSONValue {
        let visible = peer.uid == 0 ? store.count : ownerCounts[peer.uid, default: 0]
        var object: [String: JSONValue] = [
            "state": .string(phaseName),
            "version": .string(SessionCleanupVersion.string),
            "sessions": .integer(Int64(visible)),
            "endpoints": .array(configuration.endpoints.map { .string($0.name) }),
            "budget_usec": .integer(configuration.stop.budget.microseconds),
            "uptime_usec": .integer(loop.clock.now().duration(since: startedAt).microseconds),
            "background_runs": .integer(Int64(backgroundRuns.count)),
        ]
        if let progress = stopRun?.progressText { object["progress"] = .string(progress) }
        if peer.uid == 0, let lastReport { object["last_run"] = Self.summary(lastReport) }
        if peer.uid == 0, let lastStopSummary { object["last_stop_run"] = lastStopSummary }
        return .object(object)
    }

    static func summary(_ report: RunReport) -> JSONValue {
        var object: [String: JSONValue] = [
            "kind": .string(report.kind.rawValue),
            "sessions_total": .integer(Int64(report.sessionsTotal)),
            "sessions_ended": .integer(Int64(report.sessionsEnded)),
            "sessions_left": .integer(Int64(report.sessionsLeft)),
            "duration_usec": .integer(report.duration.microseconds),
            "calls": .object(report.callCounts.mapValues { .integer(Int64($0)) }),
        ]
        if let expiry = report.expiry { object["expired"] = .string(expiry.rawValue) }
        return .object(object)
    }

    static func json(_ report: RunReport) -> JSONValue {
        guard case .object(var object) = summary(report) else { return summary(report) }
        object["results"] = .array(
            report.calls.map { call in
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
