/// The two kinds of change (see ``SessionStore``): client changes, staged until durable, and run
/// results, applied at once. Each stages its record for the next commit (`SessionStore+Commit`).
extension SessionStore {
    // MARK: Client changes

    /// Registers `session`; `done` runs once it is durable (nil) or has failed. Throws at once,
    /// and stages nothing, for a duplicate id or a session too large to store.
    package func register(_ session: Session, done: @escaping Completion) throws(StoreError) {
        try checkOpen()
        try checkWritable()
        guard !contains(session.id) else {
            throw StoreError(
                kind: .duplicateSession, message: "session \(session.id) is already registered in \(directoryPath)")
        }
        var w = ByteWriter()
        StoreRecord.register(session).encode(into: &w, sealingWith: storeKey)
        guard w.bytes.count <= StoreFormat.maxEncodedSessionBytes else {
            throw StoreError(
                kind: .sessionTooLarge,
                message: "session \(session.id) encodes to \(w.bytes.count) bytes, more than the limit of "
                    + "\(StoreFormat.maxEncodedSessionBytes)")
        }
        commits.stage(CommitQueue.ClientChange(change: .register(session), record: w.bytes, done: done))
        requestSubmit()
    }

    /// Forgets the session `id` without ending it; `done` runs once that is durable (nil) or
    /// has failed. Returns the session, or nil (and does nothing) if it is not registered.
    @discardableResult
    package func unregister(_ id: SessionID, done: @escaping Completion) -> Session? {
        guard !isClosed, let session = table[id] else { return nil }
        if let readOnlyCause {
            done(readOnlyCause)
            return session
        }
        var w = ByteWriter()
        StoreRecord.remove(id).encode(into: &w)
        commits.stage(CommitQueue.ClientChange(change: .unregister(session), record: w.bytes, done: done))
        if unregistering[id] == nil { unregistering[id] = false }
        requestSubmit()
        return session
    }

    /// The unregistration of `id` became durable (`durable`) or failed. Failed: the run results
    /// held back meanwhile are true of a session that stays, so its current state is written.
    func unregistrationSettled(_ id: SessionID, durable: Bool) {
        guard let heldBack = unregistering.removeValue(forKey: id) else { return }
        guard !durable, heldBack, let session = table[id] else { return }
        commits.stage(.register(session), isRemoval: false)
    }

    /// Whether a run result for `id` must not be written now: an unregistration of it is staged
    /// or being written (the result still applies in memory, and is written if that fails).
    private func holdsBack(_ id: SessionID) -> Bool {
        guard unregistering[id] != nil else { return false }
        unregistering[id] = true
        return true
    }

    // MARK: Run results

    /// A run ended the session at every endpoint: it leaves the store. Returns whether it was
    /// there (nothing is done if not).
    @discardableResult
    package func recordEnded(_ id: SessionID) -> Bool {
        guard !isClosed, table.delete(id) else { return false }
        commits.stage(.remove(id), isRemoval: true)
        requestSubmit()
        return true
    }

    /// Stores a new version of a registered session (same id), e.g. with fewer endpoints left.
    /// Returns false (and does nothing) if it is not registered.
    @discardableResult
    package func replace(_ session: Session) -> Bool {
        guard !isClosed, table.contains(session.id) else { return false }
        table.upsert(session)
        if holdsBack(session.id) { return true }
        commits.stage(.register(session), isRemoval: false)
        requestSubmit()
        return true
    }

    /// Records the outcome of an end attempt: sets `lastOutcome` and adds `attemptsDelta` to
    /// `attempts`. Returns the updated session, or nil (and does nothing) if absent.
    @discardableResult
    package func recordOutcome(id: SessionID, outcome: String, attemptsDelta: Int) -> Session? {
        guard !isClosed,
            let s = table.update(
                id,
                {
                    $0.attempts = $0.attempts &+ attemptsDelta
                    $0.lastOutcome = outcome
                })
        else { return nil }
        if holdsBack(id) { return s }
        commits.stage(.outcome(id, attempts: s.attempts, lastOutcome: outcome), isRemoval: false)
        requestSubmit()
        return s
    }
}
