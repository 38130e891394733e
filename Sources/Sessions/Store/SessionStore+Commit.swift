/// Committing: what is staged goes to the writer as one commit, and the writer's answer
/// acknowledges or fails the client changes it carried.
///
/// By default a change starts a commit at once (if none is in flight). An owner that turns an
/// event loop sets ``waitsForSubmit``: a change then only stages, the owner asks
/// ``takeCommitRequest()`` after its changes and calls ``submitStaged()`` at the end of the
/// loop's turn. The flow is one-way: the store never calls its owner to ask for a commit.
extension SessionStore {
    /// Whether a change waits for ``submitStaged()`` (set by an owner that turns an event loop,
    /// so that every change made in one turn shares one commit). Off: a commit starts at once.
    package var waitsForSubmit: Bool {
        get { commitRequest.waitsForOwner }
        set { commitRequest.waitsForOwner = newValue }
    }

    /// With ``waitsForSubmit``: whether the owner should arrange a ``submitStaged()`` —
    /// something was staged, or a commit finished, since the last one. True once per
    /// submission: the first time it is asked. Ask after every change and every
    /// ``processCompletions()`` or ``flush(timeoutMilliseconds:)``.
    package func takeCommitRequest() -> Bool { commitRequest.take() }

    /// Hands what is staged to the writer (see ``waitsForSubmit``); also starts a compaction
    /// or a rewrite that is due.
    package func submitStaged() {
        commitRequest.submitted()
        submit()
    }

    /// Something was staged or a commit finished: submit now, or note it for the owner.
    func requestSubmit() {
        if commitRequest.staged() { submit() }
    }

    /// Hands what is staged to the writer as one commit, unless one is in flight (it then goes
    /// into the next) or the store must recover first; with nothing to commit, compacts if due.
    func submit() {
        guard !isClosed, !commits.isCommitting, readOnlyCause == nil else { return }
        guard health.isHealthy else {
            recover()
            return
        }
        guard commits.isCommitDue(at: StoreClock.monotonicMicroseconds()) else {
            compactIfNeeded()
            return
        }
        writer.append(commits.startCommit())
    }

    /// The writer's answer to the commit in flight.
    func appended(_ result: Result<Int, AppendFailure>) {
        switch result {
        case .success(let logBytes):
            guard let batch = commits.commitSucceeded() else { return }
            statistics.sequence = commits.lastSequence
            statistics.logBytes = logBytes
            statistics.commits += 1
            statistics.recordsCommitted += batch.records
            for client in batch.clients {
                switch client.change {
                case .register(let s): table.upsert(s)
                case .unregister(let s):
                    table.remove(s.id)
                    unregistrationSettled(s.id, durable: true)
                }
            }
            for client in batch.clients { client.done(nil) }
        case .failure(let failure):
            let nothingWritten: Bool
            if case .notWritten = failure { nothingWritten = true } else { nothingWritten = false }
            guard
                let clients = commits.commitFailed(
                    nothingWritten: nothingWritten, now: StoreClock.monotonicMicroseconds())
            else { return }
            statistics.failedCommits += 1
            let error = failure.error
            if nothingWritten {
                onEvent?(.commitFailed(error, recovering: false))
            } else {
                health.lost(error)
                onEvent?(.commitFailed(error, recovering: true))
            }
            let notSaved = StoreError(
                kind: error.kind, message: "not saved: \(error.message)", path: error.path, offset: error.offset,
                errnoCode: error.errnoCode)
            for client in clients {
                if case .unregister(let s) = client.change { unregistrationSettled(s.id, durable: false) }
            }
            for client in clients { client.done(notSaved) }
        }
    }
}
