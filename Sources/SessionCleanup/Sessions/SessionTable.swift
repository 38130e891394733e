/// In-memory set of sessions: a dense array plus an id → position index. Compared with a
/// `[SessionID: Session]` dictionary this keeps the ~100-byte `Session` values packed (the
/// hash table, which runs at most 75% full in power-of-two sizes, holds only 16-byte entries).
/// Removal swaps the last element into the hole, so array order is arbitrary.
struct SessionTable {
    private(set) var sessions: [Session] = []
    private var index: [SessionID: Int] = [:]

    init(minimumCapacity: Int = 0) {
        sessions.reserveCapacity(minimumCapacity)
        index.reserveCapacity(minimumCapacity)
    }

    var count: Int { sessions.count }

    subscript(id: SessionID) -> Session? {
        guard let i = index[id] else { return nil }
        return sessions[i]
    }

    func contains(_ id: SessionID) -> Bool { index[id] != nil }

    /// Inserts or replaces.
    mutating func upsert(_ session: Session) {
        if let i = index[session.id] {
            sessions[i] = session
        } else {
            index[session.id] = sessions.count
            sessions.append(session)
        }
    }

    /// Removes and returns the session, if present.
    @discardableResult
    mutating func remove(_ id: SessionID) -> Session? {
        guard let i = index.removeValue(forKey: id) else { return nil }
        let last = sessions.count - 1
        if i != last {
            sessions.swapAt(i, last)
            index[sessions[i].id] = i
        }
        return sessions.removeLast()
    }

    /// Changes a session in place; returns the updated value, or nil if absent.
    @discardableResult
    mutating func update(_ id: SessionID, _ change: (inout Session) -> Void) -> Session? {
        guard let i = index[id] else { return nil }
        change(&sessions[i])
        return sessions[i]
    }
}
