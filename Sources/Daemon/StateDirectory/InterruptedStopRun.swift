import Basics
import JSON
import Journal
import Sessions

/// A stop run's start, made durable before its first call and removed once its outcomes are
/// committed. Found at the next start, it means the stop run was cut off (SIGKILL, the watchdog,
/// `TimeoutStopSec=`, a power cut) and the sessions it had not finished have no outcome: each gets
/// the outcome `interrupted`, durably, before `READY=1`, and is ended in the background after
/// it, like any leftover. Sessions registered after that start are not affected.
enum InterruptedStopRun {
    /// The document's name in the state directory.
    static let documentName = "stop-run-begun.json"
    /// The outcome given to the sessions an interrupted stop run did not finish.
    static let outcome = "interrupted"

    /// The space the record is written into at the stop, allocated at start: a disk that has
    /// filled up since can still take the record (the stop run's outcomes may not fit, and
    /// without the record the next start would take the sessions they belong to for untried).
    static let reserveName = "stop-run-begun.reserve"
    /// The reserve's size: the record padded with spaces (JSON whitespace) to it.
    static let reserveSize = 4096

    /// At start, after ``recover(_:journal:)``: keeps the space for the next stop's record. A
    /// failure is journaled: the stop then writes its record as a new file, which a full disk
    /// refuses.
    static func reserveSpace(in store: SessionStore, journal: any JournalSink) {
        do {
            try store.reserveDocument(reserveName, size: reserveSize)
        } catch {
            journal.record(
                JournalEntry(
                    .storeWriteFailed,
                    "No space was kept for the stop run's start record (on a full disk, a stop run's "
                        + "unrecorded sessions would wait for the next stop): \(error)",
                    [JournalField(.error, "\(error)")], priority: .warning))
        }
    }

    /// Records that a stop run of `sessions` begins now (one small file, synced with its
    /// directory): into the space reserved at start, else as a new file. A failure is journaled:
    /// the stop run goes on without the record. Returns whether the record is durable.
    @discardableResult
    static func recordBegun(sessions: Int, in store: SessionStore, journal: any JournalSink) -> Bool {
        do {
            var bytes = try document(sessions: sessions, begunAt: wallClockMicroseconds())
            do {
                if bytes.count < reserveSize {
                    bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: reserveSize - bytes.count))
                }
                try store.writeReservedDocument(reserveName, bytes, as: documentName)
            } catch {
                try store.writeDocument(
                    documentName, try document(sessions: sessions, begunAt: wallClockMicroseconds()))
            }
            return true
        } catch {
            journal.record(
                JournalEntry(
                    .storeWriteFailed,
                    "The stop run's start was not recorded (if it is cut off, its sessions wait for the "
                        + "next stop): \(error)", [JournalField(.error, "\(error)")], priority: .warning))
            return false
        }
    }

    /// The record: `{"begun_at_usec":…,"sessions":…}` (compact, members sorted).
    static func document(sessions: Int, begunAt: UInt64) throws(JSONWriter.UnrepresentableNumber) -> [UInt8] {
        let document: JSONValue = .object([
            "begun_at_usec": .integer(Int64(clamping: begunAt)), "sessions": .integer(Int64(sessions)),
        ])
        return try JSONWriter.text(of: document, escapingSlashes: true)
    }

    /// Removes the record once the stop run's outcomes are committed.
    static func recordFinished(in store: SessionStore, journal: any JournalSink) {
        guard store.readDocument(documentName) != nil else { return }
        do {
            try store.removeDocument(documentName)
        } catch {
            journal.record(
                JournalEntry(
                    .storeWriteFailed, "The stop run's start record was not removed: \(error)",
                    [JournalField(.error, "\(error)")], priority: .warning))
        }
    }

    /// At start: when the last stop run was cut off, gives its unfinished sessions the outcome
    /// `interrupted` and commits that before removing the record (so a second crash repeats this
    /// and nothing is forgotten). Returns how many sessions it marked.
    @discardableResult
    static func recover(_ committer: StoreCommitter, journal: any JournalSink) throws -> Int {
        let store = committer.store
        guard store.readDocument(documentName) != nil else { return 0 }
        let unfinished = store.sessions { $0.lastOutcome == nil }
        for session in unfinished { store.recordOutcome(id: session.id, outcome: outcome, attemptsDelta: 0) }
        try committer.commitNow()
        try store.removeDocument(documentName)
        journal.record(
            JournalEntry(
                .stopRunInterrupted,
                "The last stop run was cut off before it finished: \(HumanText.count(unfinished.count, "session")) had no outcome; "
                    + "they are ended in the background once ready", [JournalField(.sessionsTotal, unfinished.count)]))
        return unfinished.count
    }
}
