/// Something found wrong while opening a store. The daemon should log every problem loudly.
public struct StoreProblem: Sendable, Equatable, CustomStringConvertible {
    /// What kind of damage was found.
    public enum Kind: Sendable, Equatable {
        /// The log ended inside a frame (a write torn by a crash or power cut, or a damaged
        /// last frame); the bytes after the last good frame were cut off.
        case truncatedLogTail
        /// A damaged region with good frames after it; the log was moved aside and every good
        /// frame before and after the damage was kept.
        case corruptLogRecord
        /// The snapshot failed validation; it was moved aside and all good sessions kept.
        case corruptSnapshot
        /// The snapshot is missing although the log holds committed changes.
        case missingSnapshot
        /// The log is missing although a snapshot exists (changes since the last compaction
        /// may be lost).
        case missingLog
        /// Log frames carry a generation newer than the snapshot's (the snapshot they were
        /// based on is gone); they were applied anyway.
        case generationMismatch
    }

    /// What kind of damage was found.
    public let kind: Kind
    /// The file the problem is in.
    public let path: String
    /// Byte offset of the damage in `path`, if meaningful.
    public let offset: Int?
    /// 0-based frame number at the damage, if meaningful.
    public let frameNumber: Int?
    /// Number of bytes that could not be used.
    public let bytesAffected: Int
    /// Human-readable detail (never contains session keys).
    public let detail: String

    /// One line for the log.
    public var description: String {
        var s = "\(kind) in \(path)"
        if let offset { s += " at byte \(offset)" }
        if let frameNumber { s += " (frame \(frameNumber))" }
        if bytesAffected > 0 { s += ", \(bytesAffected) bytes affected" }
        return s + ": " + detail
    }
}

/// What `SessionStore.open` found and did.
public struct LoadReport: Sendable, CustomStringConvertible {
    /// Sessions present after loading.
    public var sessionCount = 0
    /// Generation of the snapshot now on disk.
    public var generation: UInt64 = 0
    /// Sessions read from the snapshot.
    public var snapshotSessions = 0
    /// Log frames (one per commit) applied on top of the snapshot.
    public var logFramesApplied = 0
    /// Log records applied on top of the snapshot.
    public var logRecordsApplied = 0
    /// Log frames skipped because the snapshot already contains them (crash during compaction).
    public var staleLogFramesSkipped = 0
    /// Remove/outcome records for ids that were not present (only after damage).
    public var orphanRecords = 0
    /// Bytes cut off the end of the log (torn tail).
    public var droppedTailBytes = 0
    /// Damage found; empty when the store was clean.
    public var problems: [StoreProblem] = []
    /// Files damaged data was preserved in (`<name>.corrupt-<timestamp>`); never deleted.
    public var preservedFiles: [String] = []
    /// True when `open` had to rewrite the snapshot (after damage or a missing file).
    public var rewroteSnapshot = false
    /// True when the directory held no store and a new one was created.
    public var createdNewStore = false
    /// Wall-clock time spent in `open`, in microseconds.
    public var durationMicroseconds: UInt64 = 0

    /// True when nothing was wrong.
    public var isClean: Bool { problems.isEmpty }

    /// Multi-line summary suitable for the journal.
    public var description: String {
        var lines = [
            "loaded \(sessionCount) sessions (snapshot generation \(generation): \(snapshotSessions) sessions; "
                + "log: \(logFramesApplied) frames, \(logRecordsApplied) records applied, "
                + "\(staleLogFramesSkipped) stale frames skipped) in \(durationMicroseconds) µs"
        ]
        if createdNewStore { lines.append("created a new, empty store") }
        if droppedTailBytes > 0 { lines.append("dropped \(droppedTailBytes) bytes of torn log tail") }
        if orphanRecords > 0 { lines.append("\(orphanRecords) records referred to unknown sessions") }
        for p in problems { lines.append("PROBLEM: \(p)") }
        for f in preservedFiles { lines.append("damaged data preserved in \(f)") }
        if rewroteSnapshot { lines.append("rewrote snapshot and started a fresh log") }
        return lines.joined(separator: "\n")
    }
}
