import Basics
import CSystemd
import EventLoop
import Glibc

/// The journal as the daemon writes it, never waiting for it: native entries on journald's
/// socket when stderr is systemd's journal stream, otherwise readable lines on stderr (a
/// terminal, a container, a test).
///
/// Each entry is written at once if the destination has room; otherwise it waits in a bounded
/// ``JournalQueue`` that the event loop drains when the descriptor becomes writable. When the
/// queue is full the entry is dropped and counted — never waited for — and the count goes out
/// with the next entry that gets through (`JOURNAL_DROPPED=`) and in each run's summary. At
/// exit, ``flush(until:idleLimit:)`` waits a bounded time for the rest.
///
/// An entry journald's socket refuses for good (journald gone, a memfd for a large entry that
/// could not be made) goes out as an stderr line instead — that entry alone: the queue is kept,
/// and the next entry tries the journal again (reconnecting when journald was restarted).
package final class Journal: JournalSink {
    /// Where entries go.
    package enum Destination: Sendable {
        /// journald's native protocol on `socketPath` (nil: `/run/systemd/journal/socket`).
        case native(socketPath: String?)
        /// `<N>message [FIELD=value …]` lines on stderr.
        case standardError
    }

    /// The identifier entries carry (`SYSLOG_IDENTIFIER=`).
    package let identifier: String
    private let transport: any JournalTransport
    private let native: Bool
    /// Where an entry journald refused goes instead.
    private lazy var standardError = StandardErrorTransport()
    private var queue: JournalQueue
    private weak var loop: EventLoop?
    private var watched: Int32?
    /// Bytes of the head entry already written (streams only).
    private var headOffset = 0
    /// Dropped since the last entry that got into the queue or out of the door.
    private var unreported = 0
    /// Entries queued since the last attempt to drain during a burst.
    private var queuedSinceDrain = 0

    /// Entries dropped so far: the queue was full, or neither journald nor stderr took them.
    package private(set) var droppedEntries = 0
    /// Entries written so far (to the destination).
    package private(set) var writtenEntries = 0
    /// Entries journald's socket refused that went out as stderr lines instead.
    package private(set) var standardErrorEntries = 0
    /// Entries waiting to be written.
    package var pendingEntries: Int { queue.count }

    /// Creates the journal; `destination` defaults to native when stderr is connected to
    /// journald (and its socket can be reached), else stderr.
    package init(
        identifier: String = "session-cleanup", destination: Destination? = nil,
        limits: JournalQueue.Limits = JournalQueue.Limits()
    ) {
        self.identifier = identifier
        queue = JournalQueue(limits: limits)
        let chosen = destination ?? (csd_stderr_is_journal() == 1 ? .native(socketPath: nil) : .standardError)
        if case .native(let path) = chosen, let socket = try? NativeJournalTransport(path: path) {
            transport = socket
            native = true
        } else {
            transport = StandardErrorTransport()
            native = false
        }
    }

    /// From now on, waiting entries are written whenever the destination becomes writable.
    package func attach(to loop: EventLoop) {
        self.loop = loop
        drain()
    }

    /// Records `entry`: written now, queued, or — when the queue is full — dropped and counted.
    @discardableResult
    package func record(_ entry: JournalEntry) -> Bool {
        while true {
            let bytes =
                native
                ? JournalEncoding.native(entry, identifier: identifier, dropped: unreported)
                : JournalEncoding.line(entry, dropped: unreported)
            guard queue.isEmpty else {
                drainDuringBurst()
                return enqueue(bytes, essential: !entry.event.isBulk)
            }
            switch writeNow(bytes) {
            case .written:
                unreported = 0
                return true
            case .blocked:
                return enqueue(bytes, essential: !entry.event.isBulk)
            case .failed:
                // journald refused this entry: this one goes to stderr; the next tries journald again.
                if native, writeToStandardError(JournalEncoding.line(entry, dropped: unreported)) {
                    unreported = 0
                    return true
                }
                droppedEntries += 1
                unreported += 1
                return false
            }
        }
    }

    /// How long ``flush(until:)`` waits for a journal that takes nothing before giving up.
    package static let flushIdleLimit: Duration = .milliseconds(500)

    /// Waits, at most until `deadline`, for the waiting entries to be written, giving up after
    /// ``flushIdleLimit`` without progress (see ``flush(until:idleLimit:clock:)``).
    @discardableResult
    package func flush(until deadline: MonotonicInstant) -> Int {
        flush(until: deadline, idleLimit: Self.flushIdleLimit, clock: SystemMonotonicClock())
    }

    /// Waits, at most until `deadline`, for the waiting entries to be written, giving up early
    /// when the destination has taken nothing for `idleLimit`. What is still waiting then is
    /// dropped, counted, and said on stderr (without waiting). Returns how many entries this
    /// call dropped. Blocks: for the last moments before exit, when nothing else is left to do.
    @discardableResult
    package func flush(until deadline: MonotonicInstant, idleLimit: Duration, clock: any MonotonicClock) -> Int {
        var lastProgress = clock.now()
        while !queue.isEmpty {
            let before = queue.count
            drain()
            let now = clock.now()
            if queue.count < before { lastProgress = now }
            guard !queue.isEmpty else { break }
            let giveUp = min(deadline, lastProgress.advanced(by: idleLimit))
            guard now < giveUp, let fd = transport.pollDescriptor else { break }
            let wait = Int32(clamping: giveUp.duration(since: now).millisecondsRoundedUp)
            if csd_wait_writable(fd, wait) < 0 { break }
        }
        let dropped = queue.removeAll()
        headOffset = 0
        droppedEntries += dropped
        unreported += dropped
        disarmWritability()
        if dropped > 0 {
            reportOnStandardError(
                "the journal took nothing for \(idleLimit.humanReadable): "
                    + "\(HumanText.count(dropped, "entry", plural: "entries")) \(dropped == 1 ? "was" : "were") not journaled "
                    + "(\(droppedEntries) since start); session-cleanup report has every outcome")
        }
        return dropped
    }

    /// Writes one line straight to stderr without waiting (nothing if it has no room): the last
    /// word when the journal itself could not take the last entries.
    package func reportOnStandardError(_ text: String) {
        let line = Array("<\(JournalPriority.error.rawValue)>session-cleanup: \(text)\n".utf8)
        _ = line.withUnsafeBytes { StandardErrorTransport().write($0) }
    }

    // MARK: Writing

    private enum Attempt {
        case written, blocked, failed
    }

    /// Writes a whole entry now if the destination takes it (a stream may take part of it:
    /// the rest is queued to go next).
    private func writeNow(_ bytes: [UInt8]) -> Attempt {
        var offset = 0
        while offset < bytes.count {
            switch write(bytes, from: offset) {
            case .wrote(let count):
                offset += count
            case .wouldBlock:
                guard offset > 0 else { return .blocked }
                _ = queue.push(bytes, essential: true)
                queue.holdNext()
                headOffset = offset
                armWritability()
                return .written
            case .failed:
                // Half a line already went out: the rest is lost with the stream.
                return offset > 0 ? .written : .failed
            }
        }
        writtenEntries += 1
        return .written
    }

    /// While entries come faster than the loop turns (a run finishing thousands of calls in one
    /// go), journald keeps reading on its own core: hand it what it has room for now and then,
    /// rather than only when the loop next sees the socket writable.
    private func drainDuringBurst() {
        queuedSinceDrain += 1
        guard queuedSinceDrain >= Self.burstDrainInterval else { return }
        queuedSinceDrain = 0
        drain()
    }

    /// Entries queued between two attempts to drain in a burst (each attempt is one `send`).
    static let burstDrainInterval = 32

    private func enqueue(_ bytes: [UInt8], essential: Bool) -> Bool {
        guard queue.push(bytes, essential: essential) else {
            droppedEntries += 1
            unreported += 1
            return false
        }
        unreported = 0
        armWritability()
        return true
    }

    /// Writes queued entries until the destination has no room or the queue is empty.
    private func drain() {
        while let bytes = queue.next {
            switch write(bytes, from: headOffset) {
            case .wrote(let count):
                headOffset += count
                guard headOffset >= bytes.count else {
                    queue.holdNext()
                    continue
                }
                headOffset = 0
                queue.removeNext()
                writtenEntries += 1
            case .wouldBlock:
                armWritability()
                return
            case .failed:
                // This entry alone goes to stderr (re-encoded); the rest stay queued for journald.
                let onStandardError =
                    native && headOffset == 0 && writeToStandardError(JournalEncoding.line(fromNative: bytes))
                headOffset = 0
                queue.removeNext()
                if !onStandardError {
                    droppedEntries += 1
                    unreported += 1
                }
            }
        }
        disarmWritability()
    }

    private func write(_ bytes: [UInt8], from offset: Int) -> JournalWrite {
        bytes.withUnsafeBytes { raw in
            let rest = UnsafeRawBufferPointer(rebasing: raw[offset...])
            let result = transport.write(rest)
            if case .failed(let error) = result, error == ECONNREFUSED || error == ENOTCONN, transport.reconnect() {
                // journald was restarted and bound a new socket at the same path.
                disarmWritability()
                return transport.write(rest)
            }
            return result
        }
    }

    /// Writes one whole line to stderr without waiting (journald's stream, when it still works):
    /// false when stderr has no room or fails (nothing half written is retried).
    private func writeToStandardError(_ line: [UInt8]) -> Bool {
        var offset = 0
        while offset < line.count {
            let result = line.withUnsafeBytes { raw in
                standardError.write(UnsafeRawBufferPointer(rebasing: raw[offset...]))
            }
            guard case .wrote(let count) = result else { return false }
            offset += count
        }
        standardErrorEntries += 1
        return true
    }

    // MARK: Writability

    private func armWritability() {
        guard let loop, let fd = transport.pollDescriptor, watched != fd else { return }
        disarmWritability()
        do {
            try loop.watch(fd, readable: false, writable: true) { [weak self] _ in self?.drain() }
            watched = fd
        } catch {
            // Not pollable (cannot happen for sockets and pipes): drain on the next turn instead.
            loop.schedule(after: .milliseconds(10)) { [weak self] in self?.drain() }
        }
    }

    private func disarmWritability() {
        guard let fd = watched else { return }
        loop?.unwatch(fd)
        watched = nil
    }
}
