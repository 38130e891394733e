extension SessionStore {
    /// Number of sessions (durable, with run results applied).
    package var count: Int { table.count }

    /// The session with `id`, if present.
    package func session(id: SessionID) -> Session? { table[id] }

    /// Whether a session with `id` is present, or being registered.
    package func contains(_ id: SessionID) -> Bool {
        table.contains(id) || commits.pendingRegistrations.contains { $0.id == id }
    }

    /// All sessions ordered by `registeredAt`, then id (a sorted copy: O(n log n)), made at its
    /// final size and sorted in place. A run uses ``sessionList`` instead, which copies nothing.
    package var allSessions: [Session] {
        var all: [Session] = []
        all.reserveCapacity(table.count)
        for session in table.frozen { all.append(session) }
        all.sort(by: Self.registrationOrder)
        return all
    }

    /// The same sessions in the same order as a list that shares the store's memory (what a stop
    /// run works from): 4 bytes per session, where ``allSessions`` copies every session.
    package var sessionList: SessionList { table.listInRegistrationOrder() }

    /// The sessions `predicate` picks, ordered by `registeredAt`, then id. Picks first, sorts
    /// after, so that a few sessions out of many cost little.
    package func sessions(where predicate: (Session) -> Bool) -> [Session] {
        var picked = table.frozen.filter(predicate)
        picked.sort(by: Self.registrationOrder)
        return picked
    }

    private static func registrationOrder(_ a: Session, _ b: Session) -> Bool {
        (a.registeredAt, a.id.rawValue) < (b.registeredAt, b.id.rawValue)
    }

    /// Sessions registered by `uid`, ordered by `registeredAt`.
    package func sessions(ownedBy uid: UInt32) -> [Session] { sessions { $0.ownerUID == uid } }

    /// How many sessions name each distinct list of endpoints: questions about endpoints answered
    /// in the time of the few lists, not of the many sessions.
    package var endpointUsage: [[String]: Int] { table.endpointUsage }

    /// Sessions `uid` holds.
    package func count(ownedBy uid: UInt32) -> Int { table.count(ownedBy: uid) }

    /// Sessions `uid` holds or is registering: what `MaxSessionsPerUser=` limits.
    package func heldCount(ownedBy uid: UInt32) -> Int {
        table.count(ownedBy: uid) + commits.pendingRegistrations.filter { $0.ownerUID == uid }.count
    }

    /// Sessions on disk once what is in flight is settled: `count` plus the removals of ended
    /// sessions not yet written. What a stop must report as kept while writes fail.
    package var durableCount: Int { table.count + commits.unwrittenRemovals }

    /// True while changes are staged or being written.
    package var hasUnsavedChanges: Bool { commits.hasUnsavedChanges }
}
