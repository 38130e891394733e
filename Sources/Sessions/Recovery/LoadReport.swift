/// Something found wrong while opening a store. The daemon logs every problem loudly.
package struct StoreProblem: Sendable, Equatable, CustomStringConvertible {
    /// What kind of damage was found.
    package enum Kind: Sendable, Equatable {
        /// The last write to the log was torn (a crash or power cut during a commit that was
        /// therefore never acknowledged); its bytes were kept aside and cleared.
        case truncatedLogTail
        /// The log ends without the reserve of zero bytes it always keeps: it was cut, at a
        /// frame boundary or inside a frame, and commits after the cut may be lost.
        case truncatedLog
        /// A damaged region with intact frames after it; the log was kept aside and every
        /// intact frame before and after the damage was applied.
        case corruptLogRecord
        /// The snapshot failed validation; it was kept aside and every intact session kept.
        case corruptSnapshot
        /// The snapshot is missing although the log says there was one.
        case missingSnapshot
        /// The log is missing although the snapshot says the store was in use.
        case missingLog
        /// Commit sequence numbers are missing: a gap between frames, or a snapshot older than
        /// the log continuing it. What those commits changed is lost; the rest was applied.
        case missingCommits
        /// The snapshot and the log say different things about the same commits (the log was
        /// started on another snapshot, or the frames the snapshot claims to hold name sessions it
        /// lacks, or lacks sessions it holds): both were kept aside and every session either
        /// holds was kept.
        case filesDisagree
    }

    /// What kind of damage was found.
    package let kind: Kind
    /// The file the problem is in.
    package let path: String
    /// Byte offset of the damage in `path`, if meaningful.
    package let offset: Int?
    /// 0-based frame number at the damage, if meaningful.
    package let frameNumber: Int?
    /// Number of bytes that could not be used.
    package let bytesAffected: Int
    /// Human-readable detail (never contains session keys).
    package let detail: String

    init(kind: Kind, path: String, offset: Int? = nil, frameNumber: Int? = nil, bytesAffected: Int = 0, detail: String)
    {
        self.kind = kind
        self.path = path
        self.offset = offset
        self.frameNumber = frameNumber
        self.bytesAffected = bytesAffected
        self.detail = detail
    }

    /// One line for the log.
    package var description: String {
        var s = "\(kind) in \(path)"
        if let offset { s += " at byte \(offset)" }
        if let frameNumber { s += " (frame \(frameNumber))" }
        if bytesAffected > 0 { s += ", \(bytesAffected) bytes affected" }
        return s + ": " + detail
    }
}

/// What `SessionStore.open` found and did.
package struct LoadReport: Sendable, CustomStringConvertible {
    /// Sessions present after loading.
    package var sessionCount = 0
    /// The last commit sequence number the loaded state contains.
    package var lastSequence: UInt64 = 0
    /// Sessions read from the snapshot.
    package var snapshotSessions = 0
    /// Log frames (one per commit) applied on top of the snapshot.
    package var logFramesApplied = 0
    /// Log records applied on top of the snapshot.
    package var logRecordsApplied = 0
    /// Log frames skipped because the snapshot already contains them (crash during compaction).
    package var staleLogFramesSkipped = 0
    /// Remove/outcome records for ids that were not present (only after damage).
    package var orphanRecords = 0
    /// Bytes of a torn or cut log tail that were cleared.
    package var droppedTailBytes = 0
    /// Damage found; empty when the store was clean.
    package var problems: [StoreProblem] = []
    /// Files damaged data was preserved in (`<name>.corrupt-<timestamp>`); never deleted.
    package var preservedFiles: [String] = []
    /// True when `open` rewrote the snapshot and started a fresh log.
    package var rewroteSnapshot = false
    /// True when the directory held no store and a new one was created.
    package var createdNewStore = false
    /// Set when the files were in an older format and were rewritten in the current one.
    package var convertedFromFormat: UInt32?
    /// True when sequence numbers had reached absurd values (only a damaged or forged file gets
    /// there) and were renumbered from 0 by the rewrite.
    package var renumbered = false
    /// True when the files held session keys in clear and were rewritten with every key
    /// sealed (a store key was given): ``sessionCount`` keys are now sealed.
    package var keysSealed = false
    /// Wall-clock time spent in `open`, in microseconds.
    package var durationMicroseconds: UInt64 = 0

    /// True when nothing was wrong.
    package var isClean: Bool { problems.isEmpty }

    /// Multi-line summary suitable for the journal.
    package var description: String {
        var lines = [
            "loaded \(sessionCount) sessions up to commit \(lastSequence) (snapshot: \(snapshotSessions) sessions; "
                + "log: \(logFramesApplied) frames, \(logRecordsApplied) records applied, "
                + "\(staleLogFramesSkipped) stale frames skipped) in \(durationMicroseconds) µs"
        ]
        if createdNewStore { lines.append("created a new, empty store") }
        if let convertedFromFormat { lines.append("converted from format \(convertedFromFormat)") }
        if keysSealed { lines.append("sealed the keys of \(sessionCount) sessions stored in clear") }
        if renumbered { lines.append("commit sequence numbers renumbered from 0") }
        if droppedTailBytes > 0 { lines.append("cleared \(droppedTailBytes) bytes of torn or cut log tail") }
        if orphanRecords > 0 { lines.append("\(orphanRecords) records referred to unknown sessions") }
        for p in problems { lines.append("PROBLEM: \(p)") }
        for f in preservedFiles { lines.append("damaged data preserved in \(f)") }
        if rewroteSnapshot { lines.append("rewrote snapshot and started a fresh log") }
        return lines.joined(separator: "\n")
    }
}
