import Basics
import Endpoints
import EventLoop
import Journal
import Sessions
import Vocabulary

/// What one run writes to the journal, and how much, so that every outcome is findable at any
/// scale under journald's per-unit rate limit:
///
/// - a call that did not end its session gets an entry of its own (`call-finished`, warning),
///   always;
/// - calls that ended their sessions are journaled in groups of up to ``batchSize`` per endpoint
///   and status (`calls-ended`, info), one `SESSION_ID=` field per session — journald keeps
///   every value of a repeated field, so `journalctl SESSION_ID=…` still finds each — written
///   when a group is full, after a second, and before the summary;
/// - the summary (`run-finished`) counts every call by outcome; `CALLS=` on the call entries
///   adds up to its `CALLS_TOTAL=`, and `JOURNAL_DROPPED=` says how many entries of the run the
///   journal could not take.
///
/// It also says when the run's budget expired (`expired`). Every entry carries the run's
/// `SESSION_CLEANUP_RUN_ID=` and `RUN_KIND=`.
final class RunJournal {
    /// Ended calls per `calls-ended` entry: far below journald's 1,024 fields per entry, and
    /// 100,000 ended calls make 200 entries.
    static let batchSize = 500
    /// How long ended calls may wait for their group to fill.
    static let batchDelay: Duration = .seconds(1)

    private struct BatchKey: Hashable {
        let endpoint: String
        let status: Int
    }

    private let id: RunID
    private let kind: RunKind
    private let journal: any JournalSink
    private let loop: EventLoop
    private let droppedAtStart: Int
    /// One group per endpoint and status, kept (emptied) once written, so that the next group
    /// of the same key needs no new entry.
    private struct Group {
        let key: BatchKey
        /// The endpoint's URL (key redacted: the same for every session).
        let url: String?
        var sessions: [SessionID] = []
    }

    // Touched for every ended call; exclusivity is not checked at run time for them (issue 10's
    // instruction count): confined to the loop's thread, and the journal is written outside
    // every access to them.
    @exclusivity(unchecked) private var groups: [Group] = []
    private var groupIndex: [BatchKey: Int] = [:]
    /// The group the last ended call went to: calls in a row mostly share one, found without a hash.
    @exclusivity(unchecked) private var lastGroup = -1
    /// Groups with calls waiting, in the order their first call arrived, so entries come out in
    /// that order.
    @exclusivity(unchecked) private var batchOrder: [Int] = []
    @exclusivity(unchecked) private var batchTimer: EventLoop.TimerID?

    /// Call entries (`call-finished` and `calls-ended`) the journal accepted.
    private(set) var entriesWritten = 0

    init(run id: RunID, kind: RunKind, journal: any JournalSink, loop: EventLoop) {
        self.id = id
        self.kind = kind
        self.journal = journal
        self.loop = loop
        droppedAtStart = journal.droppedEntries
        runFields = [JournalField(.runID, id.description), JournalField(.runKind, kind.rawValue)]
    }

    /// The fields every entry of the run carries.
    let runFields: [JournalField]

    /// Entries of any kind the journal dropped since the run began.
    var entriesDropped: Int { journal.droppedEntries - droppedAtStart }

    /// Journals one call's outcome by the rules above. The session's `label` is read only for an
    /// entry of its own (an ended call's group names none; reading it costs ~600 instructions).
    func callFinished(
        session: SessionID, label: @autoclosure () -> String?, endpoint: String, url: String?, outcome: CallOutcome,
        attempts: Int, duration: Duration
    ) {
        if case .ended(let status) = outcome {
            addToBatch(session, BatchKey(endpoint: endpoint, status: status), url: url)
            return
        }
        var fields = runFields
        fields += [
            JournalField(.sessionID, session), JournalField(.endpoint, endpoint),
            JournalField(.outcome, outcome.word), JournalField(.calls, 1), JournalField(.attempts, attempts),
            JournalField(.durationUsec, duration.microseconds),
        ]
        if let url { fields.append(JournalField(.url, url)) }
        if let status = outcome.httpStatus { fields.append(JournalField(.httpStatus, status)) }
        if let cause = outcome.cause { fields.append(JournalField(.error, cause)) }
        if let label = label() { fields.append(JournalField(.sessionLabel, label)) }
        var message = "Session \(session) \(outcome.word) at \(endpoint)"
        if let status = outcome.httpStatus { message += " (HTTP \(status))" }
        if let cause = outcome.cause { message += ": \(cause)" }
        if journal.record(JournalEntry(.callFinished, message, fields)) { entriesWritten += 1 }
    }

    /// The budget expired for `reason` (a `budget` in all, `timeRemaining` left of it) with
    /// `callsLeft` of `callsTotal` calls unfinished: what is in flight is cancelled next.
    func budgetExpired(
        _ reason: RunExpiryReason, callsLeft: Int, callsTotal: Int, budget: Duration, timeRemaining: Duration
    ) {
        journal.record(
            JournalEntry(
                .expired,
                "Budget expired (\(reason.rawValue)) with \(callsLeft) of \(callsTotal) calls "
                    + "unfinished: cancelling what is in flight",
                runFields + [
                    JournalField(.budgetUsec, budget.microseconds),
                    JournalField(.timeRemainingUsec, timeRemaining.microseconds),
                ]))
    }

    /// A client-credentials grant at `source` gave a token, used for `validity` (of its
    /// `lifetime`, nil when the provider did not say). Never the token.
    func tokenObtained(_ source: TokenSource, lifetime: Duration?, validity: Duration) {
        var text = "Access token obtained from \(source.origin)"
        if let scope = source.scope { text += " for scope \(scope)" }
        text +=
            lifetime.map { ", valid \($0.humanReadable); used for \(validity.humanReadable)" }
            ?? ", no expiry given; used for \(validity.humanReadable)"
        var fields =
            runFields + [JournalField(.tokenOrigin, source.origin), JournalField(.validityUsec, validity.microseconds)]
        if let scope = source.scope { fields.append(JournalField(.tokenScope, scope)) }
        journal.record(JournalEntry(.tokenObtained, text, fields))
    }

    /// A client-credentials grant at `source` gave no token (`failure`); `calls` calls waiting
    /// for it failed with it.
    func tokenFailed(_ source: TokenSource, _ failure: TokenReply.Failure, calls: Int) {
        var fields =
            runFields + [
                JournalField(.tokenOrigin, source.origin), JournalField(.error, failure.description),
                JournalField(.callsWaiting, calls),
            ]
        if let scope = source.scope { fields.append(JournalField(.tokenScope, scope)) }
        journal.record(
            JournalEntry(
                .tokenFailed,
                "No access token from \(source.origin): \(failure.cause); \(HumanText.count(calls, "call")) waiting for it failed",
                fields))
    }

    /// Writes every group of ended calls still waiting.
    func flush() {
        if let batchTimer { loop.cancel(batchTimer) }
        batchTimer = nil
        for group in batchOrder { writeBatch(group) }
        batchOrder = []
    }

    /// Writes the run's summary (`run-finished`), after the last groups of ended calls.
    func summarise(_ report: RunReport) {
        flush()
        for origin in report.origins { summarise(origin) }
        let counts = report.callCounts
        var text = "\(kind.rawValue) run: \(report.sessionsEnded) of \(report.sessionsTotal) sessions ended"
        text += " in \(report.duration.humanReadable)"
        if report.sessionsLeft > 0 { text += ", \(report.sessionsLeft) kept for a later attempt" }
        let dropped = entriesDropped
        if dropped > 0 {
            text += "; \(dropped) journal entries were dropped (see session-cleanup report \(id))"
        }
        journal.record(
            JournalEntry(
                .runFinished, text,
                runFields + [
                    JournalField(.sessionsTotal, report.sessionsTotal),
                    JournalField(.sessionsEnded, report.sessionsEnded),
                    JournalField(.sessionsLeft, report.sessionsLeft),
                    JournalField(.callsTotal, report.calls.count),
                    JournalField(.callsEnded, counts["ended"] ?? 0),
                    JournalField(.callsRejected, counts["rejected"] ?? 0),
                    JournalField(.callsFailed, counts["failed"] ?? 0),
                    JournalField(.callsUnconfirmed, counts["unconfirmed"] ?? 0),
                    JournalField(.callsExpired, counts["expired"] ?? 0),
                    JournalField(.callsNotStarted, counts["not-started"] ?? 0),
                    JournalField(.durationUsec, report.duration.microseconds),
                    JournalField(.budgetUsec, report.budget.microseconds),
                    JournalField(.journalEntries, entriesWritten),
                    JournalField(.journalDropped, dropped),
                ],
                // Notice, not warning: warnings are the per-call entries' pool, which may be full.
                priority: report.sessionsLeft > 0 ? .notice : .info))
    }

    /// An origin's adaptive limit: how far it went and why it was cut (`origin-limit`).
    private func summarise(_ origin: OriginReport) {
        let cuts = origin.timeouts + origin.overloaded + origin.refused + origin.resets + origin.unacknowledged
        journal.record(
            JournalEntry(
                .originLimit, "\(kind.rawValue) run: \(origin.text)",
                runFields + [
                    JournalField(.origin, origin.origin),
                    JournalField(.limitHighest, origin.highestLimit),
                    JournalField(.limitFinal, origin.finalLimit),
                    JournalField(.latencyLowestUsec, origin.lowestLatency?.microseconds ?? 0),
                    JournalField(.latencyMedianUsec, origin.medianLatency?.microseconds ?? 0),
                    JournalField(.cutsTimeout, origin.timeouts),
                    JournalField(.cutsOverloaded, origin.overloaded),
                    JournalField(.cutsRefused, origin.refused),
                    JournalField(.cutsReset, origin.resets),
                    JournalField(.cutsUnacknowledged, origin.unacknowledged),
                    JournalField(.cutsSlow, origin.slowRounds),
                ],
                priority: cuts > 0 ? .notice : .info))
    }

    // MARK: Groups of ended calls

    private func addToBatch(_ session: SessionID, _ key: BatchKey, url: String?) {
        let group: Int
        if lastGroup >= 0, groups[lastGroup].key == key {
            group = lastGroup
        } else if let known = groupIndex[key] {
            group = known
        } else {
            group = groups.count
            groups.append(Group(key: key, url: url))
            groupIndex[key] = group
        }
        lastGroup = group
        if groups[group].sessions.isEmpty { batchOrder.append(group) }
        groups[group].sessions.append(session)
        if groups[group].sessions.count >= Self.batchSize {
            writeBatch(group)
            batchOrder.removeAll { $0 == group }
        } else if batchTimer == nil {
            batchTimer = loop.schedule(after: Self.batchDelay) { [weak self] in
                self?.batchTimer = nil
                self?.flush()
            }
        }
    }

    private func writeBatch(_ group: Int) {
        let sessions = groups[group].sessions
        guard !sessions.isEmpty else { return }
        groups[group].sessions.removeAll(keepingCapacity: true)
        let key = groups[group].key
        var fields = runFields
        fields.reserveCapacity(fields.count + 4 + sessions.count)
        fields += [
            JournalField(.endpoint, key.endpoint), JournalField(.outcome, "ended"),
            JournalField(.httpStatus, key.status), JournalField(.calls, sessions.count),
        ]
        if let url = groups[group].url { fields.append(JournalField(.url, url)) }
        for session in sessions { fields.append(JournalField(.sessionID, session)) }
        let message =
            sessions.count == 1
            ? "Session \(sessions[0]) ended at \(key.endpoint) (HTTP \(key.status))"
            : "\(HumanText.count(sessions.count, "session")) ended at \(key.endpoint) (HTTP \(key.status))"
        if journal.record(JournalEntry(.callsEnded, message, fields)) { entriesWritten += 1 }
    }
}
