/// The work beside the commits, both done by writing a snapshot of the table and then a new log:
/// compaction, when the log grows too long (``CompactionSchedule``), and recovery, the rewrite
/// from memory after a failed sync or a deleted directory (``StoreHealth``).
extension SessionStore {
    // MARK: Compaction

    /// Starts a compaction if one is due (nothing is being committed).
    func compactIfNeeded() {
        guard
            compaction.isDue(
                sessions: table.count, logBytes: statistics.logBytes, snapshotBytes: statistics.snapshotBytes,
                healthy: health.isHealthy, now: StoreClock.monotonicMicroseconds())
        else { return }
        startCompaction()
    }

    private func startCompaction() {
        // The snapshot holds what is durable plus run results (true facts, replayed harmlessly
        // by the frames that carry them); client changes in flight enter the table only once
        // durable, so they stay out of it.
        let purpose = SnapshotPurpose(
            kind: .compaction, lastSequence: statistics.sequence, logOffset: statistics.logBytes, sessions: table.count,
            startedAt: StoreClock.monotonicMicroseconds())
        compaction.started()
        writer.writeSnapshot(table.frozen, purpose: purpose, directory: directory, path: directoryPath)
    }

    /// At the end of a stop that ended every session: the log still holds their commits, and so
    /// their keys. Replaces both files by empty ones (a rewrite of nothing, a few small writes,
    /// so it is allowed while stopping) and waits for it, at most `timeoutMilliseconds`. Returns
    /// whether the files now hold no key.
    @discardableResult
    package func eraseIfEmpty(timeoutMilliseconds: Int) -> Bool {
        let deadline = StoreClock.monotonicMicroseconds() + UInt64(max(0, timeoutMilliseconds)) * 1000
        var started = false
        while !isClosed && StoreClock.monotonicMicroseconds() < deadline {
            if compaction.isIdle {
                guard table.count == 0, !hasUnsavedChanges, health.isHealthy else { return false }
                if statistics.logBytes <= CompactionSchedule.emptyLogBytes { return true }
                if started { return false }  // it ran and failed
                started = true
                startCompaction()
            }
            if writer.waitForCompletion(milliseconds: 100) { processCompletions() }
        }
        return false
    }

    private func compactionFailed(_ error: StoreError) {
        compaction.failed(now: StoreClock.monotonicMicroseconds())
        onEvent?(.compactionFailed(error))
    }

    // MARK: Recovery

    /// Starts the rewrite from memory, if it is not running and its retry delay has passed;
    /// client changes that arrive meanwhile fail at once ("not saved") rather than wait.
    func recover() {
        switch health.nextRewrite(now: StoreClock.monotonicMicroseconds()) {
        case .none:
            return
        case .wait(let reason):
            failStagedClients(with: reason)
        case .start:
            // The new snapshot must lie above every number the abandoned log may hold.
            let purpose = SnapshotPurpose(
                kind: .rewrite, lastSequence: commits.lastSequence, logOffset: 0, sessions: table.count,
                startedAt: StoreClock.monotonicMicroseconds())
            // After the directory was deleted or moved, the rewrite goes to the path (made again).
            let sameDirectory = directory.whereabouts() == nil
            writer.writeSnapshot(
                table.frozen, purpose: purpose, directory: sameDirectory ? directory : nil, path: directoryPath)
        }
    }

    private func recoveryFailed(_ error: StoreError) {
        health.rewriteFailed(error, now: StoreClock.monotonicMicroseconds())
        onEvent?(.recoveryFailed(error))
        failStagedClients(with: error)
    }

    private func failStagedClients(with reason: StoreError) {
        let waiting = commits.takeStagedClients()
        for client in waiting {
            if case .unregister(let s) = client.change { unregistrationSettled(s.id, durable: false) }
        }
        let error = StoreError(
            kind: .recovering,
            message: "not saved: the session store is recovering from an earlier failure (\(reason.message)); "
                + "try again", path: reason.path, errnoCode: reason.errnoCode)
        for client in waiting { client.done(error) }
    }

    // MARK: The writer's answers

    /// A snapshot (of a compaction or a rewrite) was written, or not.
    func snapshotWritten(_ purpose: SnapshotPurpose, _ result: Result<StoreWriter.SnapshotWritten, StoreError>) {
        switch (purpose.kind, result) {
        case (.compaction, .success(let written)):
            statistics.snapshotBytes = written.bytes
            if compaction.snapshotWritten(sessions: purpose.sessions, healthy: health.isHealthy) {
                writer.switchLog(purpose: purpose, directory: directory)
            }
        case (.compaction, .failure(let error)):
            compactionFailed(error)
        case (.rewrite, .success(let written)):
            statistics.snapshotBytes = written.bytes
            directory = written.directory
            health.rewroteSnapshot(directoryRecreated: written.directoryRecreated)
            writer.switchLog(purpose: purpose, directory: written.directory)
        case (.rewrite, .failure(let error)):
            recoveryFailed(error)
        }
    }

    /// The log was switched (after a compaction's or a rewrite's snapshot), or not.
    func logSwitched(_ purpose: SnapshotPurpose, _ result: Result<Int, AppendFailure>) {
        switch (purpose.kind, result) {
        case (.compaction, .success(let logBytes)):
            compaction.finished()
            statistics.logBytes = logBytes
            statistics.compactions += 1
            onEvent?(
                .compacted(
                    sessions: purpose.sessions, snapshotBytes: statistics.snapshotBytes,
                    microseconds: StoreClock.monotonicMicroseconds() - purpose.startedAt))
        case (.compaction, .failure(.notWritten(let error))):
            compactionFailed(error)  // the old log, still in place, holds everything after the snapshot
        case (.compaction, .failure(let failure)):
            compaction.finished()
            health.lost(failure.error)
            onEvent?(.commitFailed(failure.error, recovering: true))
        case (.rewrite, .success(let logBytes)):
            let recreated = health.recovered()
            statistics.logBytes = logBytes
            statistics.sequence = purpose.lastSequence
            statistics.rewrites += 1
            onEvent?(.recovered(sessions: purpose.sessions, directoryRecreated: recreated))
        case (.rewrite, .failure(let failure)):
            recoveryFailed(failure.error)
        }
    }
}
