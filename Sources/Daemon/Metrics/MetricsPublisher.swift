import Basics
import Configuration
import EventLoop
import Journal
import Metrics
import Vocabulary

/// Keeps node_exporter's textfile (`[Metrics] TextfileDirectory=`) up to date: after each run,
/// and when the set of sessions changes — coalesced, at most one write per
/// ``coalescingInterval``, so a burst of registrations costs one write. Nothing when the key is
/// not set. A failed write is journaled once, until one succeeds.
final class MetricsPublisher {
    /// The shortest time between two writes of changes.
    static let coalescingInterval: Duration = .seconds(1)

    private let loop: EventLoop
    private let journal: any JournalSink
    private let directory: () -> String?
    private let sessionsByEndpoint: () -> [String: Int]
    /// The last run of each kind, by kind.
    private var lastRuns: [String: RunMetrics] = [:]
    /// A write is scheduled.
    private var pending = false
    private var lastWrite: MonotonicInstant?
    private var failureJournaled = false

    /// A publisher writing where `directory` says (read at each write: a reload may change
    /// it), with the sessions `sessionsByEndpoint` counts.
    init(
        loop: EventLoop, journal: any JournalSink, directory: @escaping () -> String?,
        sessionsByEndpoint: @escaping () -> [String: Int]
    ) {
        self.loop = loop
        self.journal = journal
        self.directory = directory
        self.sessionsByEndpoint = sessionsByEndpoint
    }

    /// Sessions were registered, unregistered or ended.
    func sessionsChanged() { scheduleWrite() }

    /// A run finished: its figures replace the last run of its kind's.
    func runFinished(_ run: RunMetrics) {
        lastRuns[run.kind] = run
        scheduleWrite()
    }

    /// Writes at once (the stop's end: the process exits next, the file stays for node_exporter).
    func writeNow() {
        pending = false
        guard let directory = directory() else { return }
        lastWrite = loop.clock.now()
        let text = MetricsText.text(sessionsByEndpoint: sessionsByEndpoint(), lastRuns: Array(lastRuns.values))
        do {
            try MetricsTextfile(directory: directory).replace(with: text)
            failureJournaled = false
        } catch {
            guard !failureJournaled else { return }
            failureJournaled = true
            journal.record(
                JournalEntry(
                    .metricsWriteFailed, "The metrics file was not written: \(error)",
                    [JournalField(.error, "\(error)")]))
        }
    }

    private func scheduleWrite() {
        guard !pending, directory() != nil else { return }
        pending = true
        let now = loop.clock.now()
        let due = lastWrite.map { $0.advanced(by: Self.coalescingInterval) } ?? now
        let delay = due > now ? due.duration(since: now) : .zero
        _ = loop.schedule(after: delay) { [weak self] in
            guard let self, self.pending else { return }
            self.writeNow()
        }
    }
}
