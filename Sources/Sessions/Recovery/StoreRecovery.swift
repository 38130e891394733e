/// What opening a store must do to its files once they are read. Damaged data is always kept
/// aside before anything is replaced, and files are only ever replaced by rename.
struct RepairPlan: Equatable, Sendable {
    /// Hard-link the damaged snapshot aside.
    var preserveSnapshot = false
    /// Hard-link the damaged log aside.
    var preserveLog = false
    /// Copy these bytes of the log aside (a torn or cut tail).
    var preserveLogBytes: Range<Int>?
    /// Write a snapshot of the recovered state and a fresh log.
    var rewrite = false
    /// Keep the snapshot; start a fresh log continuing it (the old log held nothing newer).
    var freshLog = false
    /// Keep the log, overwriting these bytes (a torn or cut tail) with zeros.
    var clearLogBytes: Range<Int>?
    /// Keep the log, giving back the reserve that a cut took away.
    var restoreReserve = false
}

/// The state a store's files hold, and what must be done to them: the pure half of opening
/// (no I/O), so that every damage case can be tested and fuzzed on bytes alone.
struct RecoveredStore {
    var table = SessionTable()
    var report = LoadReport()
    var plan = RepairPlan()
    /// The last commit sequence number the recovered state contains.
    var lastSequence: UInt64 = 0
    /// The snapshot's last sequence, which a kept or fresh log continues.
    var snapshotSequence: UInt64 = 0
    /// Sessions in the snapshot, for a fresh log's header.
    var snapshotSessions = 0
    /// Where the next commit goes in a log that is kept.
    var logicalEnd = 0
}

/// Reads a snapshot and a log (either may be missing) into the state they hold
/// (docs/store-format.md, "Opening and recovery").
enum StoreRecovery {
    /// Full paths, for messages.
    struct Paths {
        var snapshot: String
        var log: String
    }

    /// Throws only when a file was written by a newer format: nothing is changed then.
    static func recover(snapshot: [UInt8]?, log: [UInt8]?, paths: Paths) throws(StoreError) -> RecoveredStore {
        try snapshot.withOptionalBytes { s throws(StoreError) in
            try log.withOptionalBytes { l throws(StoreError) in try recover(mapped: s, log: l, paths: paths) }
        }
    }

    /// Throws only when a file was written by a newer format: nothing is changed then.
    static func recover(mapped snapshot: UnsafeRawBufferPointer?, log: UnsafeRawBufferPointer?, paths: Paths)
        throws(StoreError) -> RecoveredStore
    {
        var recovery = Recovery(paths: paths)
        guard snapshot != nil || !(log?.isEmpty ?? true) else {
            recovery.state.report.createdNewStore = true
            recovery.state.plan.rewrite = true
            return recovery.state
        }
        var snapshotContents: SnapshotContents?
        if let snapshot { snapshotContents = try recovery.readSnapshot(snapshot) }
        if let log {
            try recovery.replayLog(log, snapshot: snapshotContents)
        } else {
            recovery.logMissing(snapshot: snapshotContents)
        }
        recovery.finish()
        return recovery.state
    }

    /// Applies one record; returns false when it refers to an unknown session (or is a marker).
    static func apply(_ record: StoreRecord, to table: inout SessionTable) -> Bool {
        switch record {
        case .register(let s):
            table.upsert(s)
            return true
        case .remove(let id):
            return table.delete(id)
        case .outcome(let id, let attempts, let lastOutcome):
            return table.update(id) {
                $0.attempts = attempts
                $0.lastOutcome = lastOutcome
            } != nil
        case .snapshotHeader, .snapshotEnd, .logHeader:
            return false
        }
    }
}

/// The steps of one recovery, sharing its state.
private struct Recovery {
    let paths: StoreRecovery.Paths
    var state = RecoveredStore()
    /// The snapshot's format version, when it says.
    private var snapshotFormat: UInt32?
    private var highestStamp: UInt64 = 0

    init(paths: StoreRecovery.Paths) { self.paths = paths }

    mutating func readSnapshot(_ bytes: UnsafeRawBufferPointer) throws(StoreError) -> SnapshotContents {
        let contents = SnapshotReader.read(bytes, into: &state.table)
        if let u = contents.unknownTag { throw Self.unsupported(paths.snapshot, offset: u.offset, tag: u.tag) }
        if let version = contents.formatVersion, version > StoreFormat.version {
            throw Self.newerFormat(paths.snapshot, version)
        }
        snapshotFormat = contents.formatVersion
        state.report.snapshotSessions = state.table.count
        state.snapshotSessions = state.table.count
        state.snapshotSequence = contents.stamp ?? 0
        highestStamp = max(highestStamp, contents.highestStamp)
        if !contents.isIntact {
            problem(
                .corruptSnapshot, paths.snapshot, offset: contents.damage.first?.start,
                frame: contents.damage.first?.frameNumber,
                bytes: contents.damage.reduce(0) { $0 + ($1.end - $1.start) },
                "snapshot failed validation (" + contents.reasons.prefix(8).joined(separator: "; ")
                    + (contents.reasons.count > 8 ? "; …" : "")
                    + "); kept the \(contents.sessionsFound) sessions of its intact frames")
            state.plan.preserveSnapshot = true
            state.plan.rewrite = true
        }
        return contents
    }

    mutating func logMissing(snapshot: SnapshotContents?) {
        guard snapshot != nil else { return }
        // A new store's log is written before its snapshot, so a snapshot without a log is
        // always damage, even a new one's.
        problem(
            .missingLog, paths.log,
            "log missing; changes committed after the snapshot (sequence \(state.snapshotSequence)) may be lost")
        state.plan.rewrite = true
    }

    mutating func replayLog(_ raw: UnsafeRawBufferPointer, snapshot: SnapshotContents?) throws(StoreError) {
        let log = LogReader.read(raw, formatHint: snapshotFormat)
        if let u = log.unknownTag { throw Self.unsupported(paths.log, offset: u.offset, tag: u.tag) }
        if let version = log.header?.formatVersion, version > StoreFormat.version {
            throw Self.newerFormat(paths.log, version)
        }
        for frame in log.frames { highestStamp = max(highestStamp, frame.stamp) }
        let format1 = snapshotFormat == 1 || (snapshotFormat == nil && log.isFormat1)
        if format1 {
            replayFormat1(raw, log, snapshot: snapshot)
        } else if log.isFormat1 {
            // A format 2 snapshot next to a format 1 log: the conversion wrote the snapshot (which
            // holds everything the old log did) and stopped before replacing the log.
            state.report.staleLogFramesSkipped = log.frames.count
            state.plan.freshLog = true
        } else {
            replayFormat2(raw, log, snapshot: snapshot)
        }
        reportDamage(log)
    }

    /// Format 2: the commit sequence tells exactly which frames the snapshot holds, and what is
    /// missing.
    private mutating func replayFormat2(_ raw: UnsafeRawBufferPointer, _ log: LogContents, snapshot: SnapshotContents?)
    {
        let base = log.header?.snapshotSequence ?? log.frames.first.flatMap { $0.stamp == 0 ? nil : $0.stamp - 1 }
        if snapshot == nil, let header = log.header, header.snapshotSequence == 0, header.snapshotSessions == 0,
            log.frames.isEmpty, log.damage.isEmpty, log.end == .clean
        {
            // A new store's log, written before its snapshot: the first start stopped between the two.
            state.report.createdNewStore = true
            state.plan.rewrite = true
        } else if snapshot == nil {
            var detail = "snapshot missing"
            if let header = log.header {
                detail +=
                    "; the log continues its commit \(header.snapshotSequence), when it held "
                    + "\(header.snapshotSessions) sessions: those not changed since are lost"
            }
            problem(.missingSnapshot, paths.snapshot, detail)
            state.plan.rewrite = true
        } else if let base, base > state.snapshotSequence {
            problem(
                .missingCommits, paths.snapshot,
                "the snapshot holds commits up to \(state.snapshotSequence) but the log continues from "
                    + "\(base): commits \(state.snapshotSequence + 1)…\(base) are lost (an older snapshot?)")
            state.plan.rewrite = true
        } else if let header = log.header, base == state.snapshotSequence, snapshot?.isIntact == true,
            header.snapshotSessions != UInt64(state.snapshotSessions)
        {
            problem(
                .missingCommits, paths.snapshot,
                "the log was started on a snapshot of \(header.snapshotSessions) sessions at commit "
                    + "\(header.snapshotSequence); this snapshot has \(state.snapshotSessions)")
            state.plan.rewrite = true
        }
        let snapshotSequence = snapshot == nil ? nil : state.snapshotSequence
        var expected = base.flatMap(Self.successor)
        var applied = 0
        let damageEnds = Set(log.damage.map(\.end))
        for frame in log.frames {
            if let expected, frame.stamp != expected {
                if frame.stamp > expected && damageEnds.contains(frame.offset) {
                    // The missing commits were in the damaged bytes just before: reported as such.
                    state.plan.rewrite = true
                } else if frame.stamp > expected {
                    problem(
                        .missingCommits, paths.log, offset: frame.offset,
                        "commits \(expected)…\(frame.stamp - 1) are missing before this frame")
                    state.plan.rewrite = true
                } else {
                    problem(
                        .corruptLogRecord, paths.log, offset: frame.offset, bytes: frame.size,
                        "frame repeats commit \(frame.stamp) (expected \(expected)); skipped")
                    state.plan.rewrite = true
                    continue
                }
            }
            expected = Self.successor(frame.stamp)
            if let snapshotSequence, frame.stamp <= snapshotSequence {
                state.report.staleLogFramesSkipped += 1
                continue
            }
            applyFrame(raw, frame)
            applied += 1
        }
        state.report.logFramesApplied = applied
        state.logicalEnd = log.logicalEnd
        state.lastSequence = max(state.snapshotSequence, log.frames.last?.stamp ?? base ?? 0)
        if state.report.staleLogFramesSkipped > 0 {
            // The last compaction replaced the snapshot but not yet the log.
            if applied > 0 { state.plan.rewrite = true } else { state.plan.freshLog = true }
        }
        if expected == nil && base != nil { state.plan.rewrite = true }  // sequence exhausted: renumber
    }

    /// Format 1: frames carry the generation of the snapshot they follow; older ones are stale.
    /// The store is then rewritten in format 2.
    private mutating func replayFormat1(_ raw: UnsafeRawBufferPointer, _ log: LogContents, snapshot: SnapshotContents?)
    {
        let generation = snapshot?.stamp
        var newer = 0
        for frame in log.frames {
            if let generation {
                if frame.stamp < generation {
                    state.report.staleLogFramesSkipped += 1
                    continue
                }
                if frame.stamp > generation { newer += 1 }
            }
            applyFrame(raw, frame)
            state.report.logFramesApplied += 1
        }
        if snapshot == nil, !log.frames.isEmpty {
            problem(
                .missingSnapshot, paths.snapshot,
                "snapshot missing but the log holds \(log.frames.count) committed frames; sessions from "
                    + "before the last compaction may be lost")
        }
        if newer > 0, let generation {
            problem(
                .missingCommits, paths.log,
                "\(newer) log frames are newer than snapshot generation \(generation) (the snapshot they "
                    + "followed is gone); applied them")
        }
        state.report.convertedFromFormat = 1
        state.plan.rewrite = true
    }

    private mutating func applyFrame(_ raw: UnsafeRawBufferPointer, _ frame: StoreFrame.Scanned) {
        do throws(DecodeError) {
            try StoreFrame.forEachRecord(raw, frame) { record in
                if StoreRecovery.apply(record, to: &state.table) {
                    state.report.logRecordsApplied += 1
                } else {
                    state.report.orphanRecords += 1
                }
            }
        } catch {
            // Unreachable: the scan walked every record of this frame already.
            state.report.orphanRecords += 1
        }
    }

    private mutating func reportDamage(_ log: LogContents) {
        for d in log.damage {
            problem(
                .corruptLogRecord, paths.log, offset: d.start, frame: d.frameNumber, bytes: d.end - d.start,
                "\(d.reason); skipped to the next intact frame at byte \(d.end)")
            state.plan.preserveLog = true
            state.plan.rewrite = true
        }
        switch log.end {
        case .clean:
            break
        case .torn(let range):
            problem(
                .truncatedLogTail, paths.log, offset: range.lowerBound, frame: log.frames.count + 1,
                bytes: range.count, "the last write was torn (never acknowledged); cleared it")
            state.plan.preserveLogBytes = range
            state.plan.clearLogBytes = range
            state.report.droppedTailBytes = range.count
        case .cut(let damaged):
            problem(
                .truncatedLog, paths.log, offset: damaged.lowerBound, bytes: damaged.count,
                "the log ends without its reserve of zero bytes after commit \(log.frames.last?.stamp ?? 0): "
                    + "it was cut, and commits after that point may be lost")
            if !damaged.isEmpty { state.plan.preserveLogBytes = damaged }
            state.plan.clearLogBytes = damaged
            state.plan.restoreReserve = true
            state.report.droppedTailBytes = damaged.count
        }
        if log.header == nil, !log.isFormat1 {
            // The header was damaged, or the log was cut before it ended (to nothing, say): a
            // log without one must not be appended to, since the next open would take the first
            // commit for the header and skip it. A fresh log gets a new header.
            if !log.frames.isEmpty || !log.damage.isEmpty {
                state.plan.rewrite = true
            } else {
                state.plan.freshLog = true
            }
        }
    }

    /// Settles the sequence numbers and what the rewrite needs.
    mutating func finish() {
        state.lastSequence = max(state.lastSequence, state.snapshotSequence)
        if snapshotFormat == 1 {
            state.report.convertedFromFormat = 1
            state.plan.rewrite = true
        }
        if max(state.lastSequence, highestStamp) >= StoreFormat.sequenceRenumberThreshold {
            state.plan.rewrite = true
        }
        if state.table.count == 0 && state.report.logFramesApplied > 0 {
            state.plan.rewrite = true  // ended sessions' keys must not linger in the log
        }
        if state.plan.rewrite {
            // A rewrite replaces both files, so the whole state moves to one sequence number
            // above everything seen, and absurd numbers (damage, forgery) start again from 0.
            state.lastSequence = max(state.lastSequence, highestStamp)
            if state.lastSequence >= StoreFormat.sequenceRenumberThreshold {
                state.lastSequence = 0
                state.report.renumbered = true
            }
            state.plan.freshLog = false
            state.plan.clearLogBytes = nil
            state.plan.restoreReserve = false
            state.snapshotSequence = state.lastSequence
            state.snapshotSessions = state.table.count
            state.report.rewroteSnapshot = true
        } else if state.plan.freshLog {
            state.lastSequence = state.snapshotSequence
        }
        state.report.lastSequence = state.lastSequence
        state.report.sessionCount = state.table.count
    }

    static func successor(_ sequence: UInt64) -> UInt64? {
        let (next, overflow) = sequence.addingReportingOverflow(1)
        return overflow ? nil : next
    }

    private mutating func problem(
        _ kind: StoreProblem.Kind, _ path: String, offset: Int? = nil, frame: Int? = nil, bytes: Int = 0,
        _ detail: String
    ) {
        state.report.problems.append(
            StoreProblem(
                kind: kind, path: path, offset: offset, frameNumber: frame, bytesAffected: bytes, detail: detail))
    }

    static func unsupported(_ path: String, offset: Int, tag: UInt8) -> StoreError {
        StoreError(
            kind: .unsupportedFormat,
            message: "\(path) holds record type \(tag) at byte \(offset), which this version does not "
                + "understand (written by a newer session-cleanup?); refusing to open",
            path: path, offset: offset)
    }

    static func newerFormat(_ path: String, _ version: UInt32) -> StoreError {
        StoreError(
            kind: .unsupportedFormat,
            message: "\(path) has format version \(version); this version reads up to \(StoreFormat.version); "
                + "refusing to open",
            path: path, offset: 0)
    }
}
