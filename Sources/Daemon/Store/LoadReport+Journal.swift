import Basics
import Journal
import Sessions

extension LoadReport {
    /// What opening the store found, for the journal: each problem, the files kept aside for
    /// inspection, then how many sessions were loaded and how long it took.
    var journalEntries: [JournalEntry] {
        var entries = problems.map { problem in
            JournalEntry(
                .storeDamaged, "Session store damaged, recovered what could be: \(problem)",
                [JournalField(.storeFile, problem.path), JournalField(.error, problem.description)])
        }
        if !preservedFiles.isEmpty {
            entries.append(
                JournalEntry(
                    .storeDamaged,
                    "Damaged store files kept for inspection: \(preservedFiles.joined(separator: ", "))",
                    [JournalField(.storeFile, preservedFiles.joined(separator: " "))]))
        }
        entries.append(
            JournalEntry(
                .storeLoaded,
                "Session store loaded: \(HumanText.count(sessionCount, "session")) in \(durationMicroseconds / 1000) ms"
                    + (keysSealed
                        ? "; it held session keys in clear: rewrote it with the keys of "
                            + "\(HumanText.count(sessionCount, "session")) sealed, the clear files retired" : ""),
                [
                    JournalField(.sessionsTotal, sessionCount),
                    JournalField(.durationUsec, durationMicroseconds),
                ]))
        return entries
    }
}
