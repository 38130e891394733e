import Basics
import Control
import EventLoop
import Glibc
import Journal
import Runs
import Sessions

/// The session store as the daemon uses it: opened at start (what loading found journaled), its
/// writer's results collected on the event loop, its changes made from control requests and
/// runs, and what it suffers — failed commits, recovery, compactions — journaled.
///
/// The commit policy lives in ``SessionStore``: a change from a client is answered once it is
/// durable (or "not saved", and then it is nowhere); what is staged while a commit is being
/// written goes into the next one (group commit); compaction runs in the background and never
/// while stopping. The loop never waits for the disk, except at the two edges of a stop.
///
/// The flow is one-way: this type changes the store, then asks it whether a commit is wanted
/// (``SessionStore/takeCommitRequest()``) and schedules ``SessionStore/submitStaged()`` on the
/// loop itself; the store never calls back to ask for one.
final class StoreCommitter {
    /// The store; changes go through this type so that replies and journal entries follow them.
    let store: SessionStore
    /// Called whenever the number of stored sessions changes (for `STATUS=`).
    var onSessionCountChanged: () -> Void = {}
    /// Registrations and unregistrations that took effect, journaled at debug with a periodic
    /// summary.
    let registrations: RegistrationJournal

    /// How long a stop run's results wait, once the first is staged, before they are committed
    /// together with what follows them. Without it, a fast run hands the writer a commit per
    /// loop turn of a few milliseconds, and those fdatasyncs were a fifth of the stop run's CPU
    /// (issue 10). The cost: a crash within this window ends those sessions again after the next
    /// start. Registrations are refused by then; an unregistration's answer may wait this long.
    static let stopRunCommitDelay: Duration = .milliseconds(25)

    private let loop: EventLoop
    private let journal: any JournalSink
    /// The store's events for the journal, write failures coalesced.
    private let failures: StoreFailureJournal

    /// Opens the store for writing, or read-only when the directory cannot be written.
    private static func open(_ directory: String, storeKey: StoreKey?) throws(StoreError) -> (SessionStore, LoadReport)
    {
        do {
            return try SessionStore.open(directory: directory, storeKey: storeKey)
        } catch {
            // Only a directory that cannot be written, not damage or a lock.
            let code = error.errnoCode
            guard error.kind == .io, code == EROFS || code == EACCES || code == EPERM else { throw error }
            return try SessionStore.openReadOnly(directory: directory, cause: error, storeKey: storeKey)
        }
    }
    private var isClosed = false
    /// `.zero` until the stop begins, then ``stopRunCommitDelay``.
    private var commitDelay: Duration = .zero

    /// Opens the store in `directory`, journaling what loading found (damage included), and
    /// starts collecting its writer's results on `loop`. A directory that cannot be written (a
    /// read-only file system, or one this user may not write) is opened read-only: the daemon
    /// runs degraded (``SessionStore/readOnlyCause``) rather than leave the stored sessions
    /// without anyone to end them.
    /// `storeKey` seals the session keys in the files (nil: they are stored in clear).
    init(directory: String, storeKey: StoreKey? = nil, loop: EventLoop, journal: any JournalSink) throws {
        let (store, report) = try Self.open(directory, storeKey: storeKey)
        self.store = store
        self.loop = loop
        self.journal = journal
        failures = StoreFailureJournal(journal: journal, loop: loop)
        registrations = RegistrationJournal(journal: journal, loop: loop, sessionsHeld: { [store] in store.count })
        for entry in report.journalEntries { journal.record(entry) }
        if let cause = store.readOnlyCause {
            journal.record(
                JournalEntry(
                    .storeReadOnly, "Running degraded: \(cause.message)",
                    [JournalField(.error, cause.message), JournalField(.sessionsTotal, store.count)]))
        }
        store.onEvent = { [failures] event in failures.record(event) }
        store.waitsForSubmit = true
        try loop.watch(store.completionDescriptor) { [weak self, store] _ in
            store.processCompletions()
            self?.scheduleCommitIfWanted()
        }
    }

    /// Everything staged in one turn of the loop (the requests of every ready client, the
    /// results of every finished call) goes into one commit: one fdatasync for them all; while
    /// stopping, everything staged within `commitDelay`. Called after every change to the store
    /// and every batch of the writer's results (which may start the next commit, a compaction or
    /// a rewrite).
    private func scheduleCommitIfWanted() {
        guard store.takeCommitRequest() else { return }
        loop.schedule(after: commitDelay) { [weak store] in store?.submitStaged() }
    }

    // MARK: Changes

    /// Registers `session`: `reply` gets `response` once it is durable — and only then is it
    /// journaled as registered — or "not saved" (and the session is then not kept anywhere).
    func register(
        _ session: Session, reply: @escaping (ControlResponse) -> Void, response: ControlResponse
    ) throws {
        try store.register(session) { [weak self] error in
            if let error {
                reply(.failure(.internal, "\(error)"))
                return
            }
            self?.onSessionCountChanged()
            self?.registrations.registered(session)
            reply(response)
        }
        scheduleCommitIfWanted()
    }

    /// Forgets the session `id` without ending it; `reply` gets `.success` once that is durable
    /// (journaled as unregistered then).
    func unregister(_ session: Session, by uid: UInt32, reply: @escaping (ControlResponse) -> Void) {
        store.unregister(session.id) { [weak self] error in
            if let error {
                reply(.failure(.internal, "\(error)"))
                return
            }
            self?.onSessionCountChanged()
            self?.registrations.unregistered(session, by: uid)
            reply(.success)
        }
        scheduleCommitIfWanted()
    }

    /// Records what a run did to one session: removed when ended at every endpoint; otherwise
    /// its outcome and attempts, without the endpoints that did end it (a server asked to end a
    /// session twice may well say no). With `configured` (a stop run), endpoints not in it are
    /// dropped from the session too, journaled: they cannot be called, and a session left with no
    /// endpoint leaves the store (see ``UnconfiguredEndpoints``). Written by the store's next
    /// commit, retried until durable.
    func apply(_ result: CleanupRun.SessionResult, droppingAllBut configured: Set<String>? = nil) {
        defer { scheduleCommitIfWanted() }
        if result.ended {
            if store.recordEnded(result.id) { onSessionCountChanged() }
            return
        }
        guard let session = store.session(id: result.id) else { return }
        let left = session.endpoints.filter { !result.endedEndpoints.contains($0) }
        let dropped = configured.map { names in left.filter { !names.contains($0) } } ?? []
        if !dropped.isEmpty { recordDropped(session, dropped) }
        let kept = left.filter { !dropped.contains($0) }
        guard !kept.isEmpty else {
            if store.recordEnded(result.id) { onSessionCountChanged() }
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
                .endpointsDropped,
                "Session \(session.id): endpoint \(endpoints.joined(separator: ", ")) not configured any more, "
                    + "dropped from the session without a call",
                [
                    JournalField(.sessionID, session.id), JournalField(.endpoint, names),
                    JournalField(.ownerUID, session.ownerUID),
                ]))
    }

    /// Waits (blocking the loop, so only where that is meant: at start, before `READY=1`) until
    /// what is staged is durable; throws if it could not be written.
    func commitNow(timeout: Duration = .seconds(10)) throws {
        let saved = store.flush(timeoutMilliseconds: Int(timeout.millisecondsRoundedUp))
        scheduleCommitIfWanted()
        guard !saved else { return }
        throw StoreError(
            kind: .syncFailed, message: "the session store in \(store.directoryPath) could not save its changes",
            path: store.directoryPath)
    }

    // MARK: Stopping

    /// A stop begins: no more compaction, and registrations already being written are waited
    /// for (briefly: one fdatasync, normally), so that they are answered and in the stop run.
    /// From now on results are committed at most every ``stopRunCommitDelay`` (and all at once
    /// by ``settle(timeout:)``).
    func beginStop() {
        store.beginShutdown()
        store.flush(timeoutMilliseconds: 1_000)
        commitDelay = Self.stopRunCommitDelay
        scheduleCommitIfWanted()
    }

    /// Makes durable what the runs recorded, waiting at most `timeout` (before exit). Returns the
    /// sessions the files hold — more than `store.count` when removals of ended sessions could
    /// not be written (they are ended again after the next start, and the stop must not claim
    /// otherwise) — and whether everything was saved. `nextStartEndsUnsaved`: whether the stop
    /// run's start is on disk, so that the next start ends what this stop could not record
    /// (``InterruptedStopRun``); the journal says which.
    func settle(timeout: Duration, nextStartEndsUnsaved: Bool = true) -> (kept: Int, saved: Bool) {
        let began = loop.clock.now()
        let saved = store.flush(timeoutMilliseconds: Int(timeout.millisecondsRoundedUp))
        if saved && store.count == 0 {
            // Every session ended: their keys must not wait on disk for the next start.
            let left = timeout - loop.clock.now().duration(since: began)
            store.eraseIfEmpty(timeoutMilliseconds: Int(max(.zero, left).millisecondsRoundedUp))
        }
        scheduleCommitIfWanted()
        let kept = store.durableCount
        failures.flush()
        if !saved {
            let unsaved = kept - store.count
            journal.record(
                JournalEntry(
                    .storeWriteFailed,
                    "Session store not saved before exit: \(unsaved) ended sessions are still in it; "
                        + (nextStartEndsUnsaved
                            ? "every session without a saved outcome will be ended (again) after the next start"
                            : store.readOnlyCause != nil
                                ? "the state directory is read-only, so the stored sessions are ended (again) at "
                                    + "the next stop"
                                : "the stop run's start could not be recorded either, so sessions without a saved "
                                    + "outcome are ended at the next stop, not after the next start"),
                    [
                        JournalField(.error, "changes not durable within \(timeout.humanReadable) of the stop's end"),
                        JournalField(.sessionsLeft, kept),
                    ]))
        }
        return (kept, saved)
    }

    /// Stops collecting results and closes the store's files.
    package func close() {
        guard !isClosed else { return }
        isClosed = true
        loop.unwatch(store.completionDescriptor)
        store.close()
    }
}
