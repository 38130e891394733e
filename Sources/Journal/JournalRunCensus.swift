import Basics
import CSystemd
import Vocabulary

/// What the journal still holds of one run, read with libsystemd's sd-journal: how many of the
/// run's calls its entries account for (`CALLS=` on `call-finished` and `calls-ended`), and
/// which lifecycle entries are there. `session-cleanup report` compares it with the run's record
/// to say whether the journal is complete for the run.
package struct JournalRunCensus: Sendable, Equatable {
    /// Entries carrying the run's id.
    package var entries = 0
    /// Calls the call entries account for.
    package var callsJournaled = 0
    /// The `SESSION_CLEANUP_EVENT=` kinds present.
    package var events: Set<String> = []

    /// Reads the local journal for `run`. Throws when it cannot be opened or read; returns nil
    /// when no journal file is readable by this user (journald keeps them for root and the
    /// `systemd-journal` and `adm` groups).
    package static func read(run: RunID) throws -> JournalRunCensus? {
        var handle: UnsafeMutableRawPointer?
        let opened = csd_journal_reader_open(&handle)
        guard opened >= 0, let journal = handle else {
            throw SystemCallError("sd_journal_open", "the local journal", negativeErrno: opened)
        }
        defer { csd_journal_reader_close(journal) }
        guard csd_journal_reader_has_files(journal) > 0 else { return nil }
        let matched = csd_journal_reader_match(journal, "\(JournalField.Name.runID.rawValue)=\(run)")
        guard matched >= 0 else { throw SystemCallError("sd_journal_add_match", "\(run)", negativeErrno: matched) }
        var census = JournalRunCensus()
        while true {
            let next = csd_journal_reader_next(journal)
            guard next >= 0 else { throw SystemCallError("sd_journal_next", "\(run)", negativeErrno: next) }
            if next == 0 { break }
            census.entries += 1
            let event = field(JournalField.Name.event.rawValue, of: journal) ?? ""
            census.events.insert(event)
            if event == JournalEvent.callFinished.name || event == JournalEvent.callsEnded.name {
                census.callsJournaled += field(JournalField.Name.calls.rawValue, of: journal).flatMap { Int($0) } ?? 0
            }
        }
        return census
    }

    private static func field(_ name: String, of journal: UnsafeMutableRawPointer) -> String? {
        var value: UnsafeRawPointer?
        var length = 0
        guard csd_journal_reader_field(journal, name, &value, &length) >= 0, let value else { return nil }
        return String(decoding: UnsafeRawBufferPointer(start: value, count: length), as: UTF8.self)
    }

    /// Whether the journal has everything the run wrote: an entry for each of its `callsTotal`
    /// calls, and its summary (for a stop run, also `stop-begun` and `stopped`).
    package func isComplete(callsTotal: Int, kind: String) -> Bool {
        var needed: Set<String> = [JournalEvent.runFinished.name]
        if kind == RunKind.stop.rawValue {
            needed.formUnion([JournalEvent.stopBegun.name, JournalEvent.stopped.name])
        }
        return callsJournaled == callsTotal && needed.isSubset(of: events)
    }

    /// What is missing, for people: "" when complete.
    package func missing(callsTotal: Int, kind: String) -> String {
        var needed = [JournalEvent.runFinished.name]
        if kind == RunKind.stop.rawValue {
            needed = [JournalEvent.stopBegun.name] + needed + [JournalEvent.stopped.name]
        }
        var parts: [String] = []
        if callsJournaled != callsTotal { parts.append("entries for \(callsJournaled) of \(callsTotal) calls") }
        let absent = needed.filter { !events.contains($0) }
        if !absent.isEmpty { parts.append("no \(absent.joined(separator: ", ")) entry") }
        return parts.joined(separator: "; ")
    }
}
