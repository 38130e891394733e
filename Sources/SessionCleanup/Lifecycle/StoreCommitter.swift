/// The session store as the daemon uses it, and when its changes become durable.
///
/// Commit policy: every request handled in one turn of the loop shares one commit (group
/// commit: one `fdatasync` acknowledges them all); outcomes recorded by runs are coalesced to
/// one commit per ``runCommitInterval``; a full compaction waits until no run is ending
/// sessions, except for an empty store, which is compacted at once (keys of ended sessions must
/// not linger in the log). Also keeps the number of sessions per owner, for
/// `MaxSessionsPerUser=` and `status` without scanning the store.
final class StoreCommitter {
    /// Commits of store changes made by runs are coalesced to at most one per this interval.
    static let runCommitInterval: Duration = .milliseconds(100)

    /// The store; changes go through this type so owner counts and commits stay in step.
    let store: SessionStore
    /// Sessions per owner uid.
    private(set) var ownerCounts: [UInt32: Int] = [:]
    /// Whether a full compaction may run now; the daemon answers no while runs end sessions.
    var compactionAllowed: () -> Bool = { true }
    /// Called whenever the number of stored sessions changes (for `STATUS=`).
    var onSessionCountChanged: () -> Void = {}

    private let loop: EventLoop
    private let journal: any JournalSink
    /// Replies waiting for the next group commit.
    private var repliesAwaitingCommit: [(reply: (ControlResponse) -> Void, response: ControlResponse)] = []
    private var groupCommitTimer: EventLoop.TimerID?
    private var runCommitTimer: EventLoop.TimerID?

    /// Opens the store in `directory`, journaling what loading found (damage included).
    init(directory: String, loop: EventLoop, journal: any JournalSink) throws {
        let (store, report) = try SessionStore.open(directory: directory)
        self.store = store
        self.loop = loop
        self.journal = journal
        recordLoad(report)
        for session in store.allSessions { countOwner(session.ownerUID, by: 1) }
    }

    // MARK: Changes

    /// Stages `session`; durable at the next commit.
    func register(_ session: Session) throws {
        try store.register(session)
        countOwner(session.ownerUID, by: 1)
    }

    /// Stages the removal of the session `id`, if stored; returns it.
    @discardableResult
    func remove(_ id: SessionID) -> Session? {
        guard let removed = store.remove(id) else { return nil }
        countOwner(removed.ownerUID, by: -1)
        return removed
    }

    /// Records what a run did to one session: removed when ended at every endpoint; otherwise
    /// its outcome and attempts, without the endpoints that did end it (a server asked to end a
    /// session twice may well say no). With `configured` (a stop run), endpoints not in it are
    /// dropped from the session too, journaled: they cannot be called, and a session left with no
    /// endpoint leaves the store (see ``UnconfiguredEndpoints``). Committed with the next
    /// coalesced run commit.
    func apply(_ result: CleanupRun.SessionResult, droppingAllBut configured: Set<String>? = nil) {
        defer { scheduleRunCommit() }
        if result.ended {
            remove(result.id)
            return
        }
        guard let session = store.session(id: result.id) else { return }
        let left = session.endpoints.filter { !result.endedEndpoints.contains($0) }
        let dropped = configured.map { names in left.filter { !names.contains($0) } } ?? []
        if !dropped.isEmpty { recordDropped(session, dropped) }
        let kept = left.filter { !dropped.contains($0) }
        guard !kept.isEmpty else {
            remove(result.id)
            return
        }
        if kept != session.endpoints {
            var changed = session
            changed.endpoints = kept
            store.replace(changed)
        }
        store.recordOutcome(id: result.id, outcome: result.outcome.word, attemptsDelta: result.attempts)
    }

    private func recordDropped(_ session: Session, _ endpoints: [String]) {
        let names = endpoints.joined(separator: " ")
        journal.record(
            JournalEntry(
                .warning,
                "Session \(session.id): endpoint \(endpoints.joined(separator: ", ")) not configured any more, "
                    + "dropped from the session without a call",
                [
                    JournalField(.event, "endpoints-dropped"), JournalField(.sessionID, session.id.description),
                    JournalField(.endpoint, names), JournalField(.ownerUID, session.ownerUID),
                ]))
    }

    // MARK: Commits

    /// Sends `response` once the store's staged changes are durable (group commit).
    func commitThenReply(_ reply: @escaping (ControlResponse) -> Void, _ response: ControlResponse) {
        repliesAwaitingCommit.append((reply, response))
        guard groupCommitTimer == nil else { return }
        groupCommitTimer = loop.schedule(after: .zero) { [weak self] in
            guard let self else { return }
            self.groupCommitTimer = nil
            self.answerWaitingReplies(error: self.commit())
        }
    }

    /// Commits now whatever is staged and answers every reply waiting for a commit; the timers of
    /// pending commits are cancelled (nothing is left for them to do). Returns the commit's error.
    @discardableResult
    func commitNow() -> (any Error)? {
        if let groupCommitTimer { loop.cancel(groupCommitTimer) }
        groupCommitTimer = nil
        if let runCommitTimer { loop.cancel(runCommitTimer) }
        runCommitTimer = nil
        let error = commit()
        answerWaitingReplies(error: error)
        return error
    }

    /// Commits what is staged; returns the error it journaled, if any.
    @discardableResult
    func commit() -> (any Error)? {
        guard store.hasPendingChanges else { return nil }
        do {
            try store.commit()
            if store.count == 0 && store.statistics.logBytes > 0 {
                try store.compact()
            } else if compactionAllowed() {
                _ = try store.compactIfNeeded()
            }
            return nil
        } catch {
            journal.record(
                JournalEntry(
                    .error, "Session store not saved: \(error)",
                    [JournalField(.event, "store-write-failed"), JournalField(.error, "\(error)")]))
            return error
        }
    }

    /// Closes the store's files (after the last commit).
    func close() { store.close() }

    private func scheduleRunCommit() {
        guard runCommitTimer == nil else { return }
        runCommitTimer = loop.schedule(after: Self.runCommitInterval) { [weak self] in
            self?.runCommitTimer = nil
            self?.commit()
        }
    }

    private func answerWaitingReplies(error: (any Error)?) {
        let waiting = repliesAwaitingCommit
        repliesAwaitingCommit = []
        for (reply, response) in waiting {
            reply(error.map { .failure(.internal, "not saved: \($0)") } ?? response)
        }
    }

    private func countOwner(_ uid: UInt32, by delta: Int) {
        let count = ownerCounts[uid, default: 0] + delta
        ownerCounts[uid] = count > 0 ? count : nil
        onSessionCountChanged()
    }

    private func recordLoad(_ report: LoadReport) {
        for problem in report.problems {
            journal.record(
                JournalEntry(
                    .error, "Session store damaged, recovered what could be: \(problem)",
                    [
                        JournalField(.event, "store-damaged"), JournalField(.storeFile, problem.path),
                        JournalField(.error, problem.description),
                    ]))
        }
        if !report.preservedFiles.isEmpty {
            journal.record(
                JournalEntry(
                    .error, "Damaged store files kept for inspection: \(report.preservedFiles.joined(separator: ", "))",
                    [
                        JournalField(.event, "store-damaged"),
                        JournalField(.storeFile, report.preservedFiles.joined(separator: " ")),
                    ]))
        }
        journal.record(
            JournalEntry(
                .info,
                "Session store loaded: \(report.sessionCount) sessions in \(report.durationMicroseconds / 1000) ms",
                [
                    JournalField(.event, "store-loaded"), JournalField(.sessionsTotal, report.sessionCount),
                    JournalField(.durationUsec, report.durationMicroseconds),
                ]))
    }
}
