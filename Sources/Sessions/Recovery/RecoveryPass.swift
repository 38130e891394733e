/// One recovery's steps over a snapshot and a log, sharing its state: the snapshot read, the
/// log replayed (format 2 here; format 1 in `RecoveryPass+Format1`), its damage reported
/// (`RecoveryPass+LogDamage`), the sequence numbers settled.
struct RecoveryPass {
    /// The files' paths, for messages.
    let paths: StoreRecovery.Paths
    /// The key sealed session keys are opened with; nil: none configured.
    let storeKey: StoreKey?
    /// The session keys the snapshot's records held (``StoreRecovery`` settles them).
    var snapshotKeys = KeyTally()
    /// The session keys the log's applied records held.
    var logKeys = KeyTally()
    /// What the pass has found so far.
    var state = RecoveredStore()
    /// The snapshot's format version, when it says.
    private var snapshotFormat: UInt32?
    /// The highest sequence number seen anywhere, intact or not (a rewrite numbers above it).
    private var highestStamp: UInt64 = 0
    /// What the log's frames older than the snapshot say that it does not hold.
    private var staleCheck = StaleFramesCheck()

    /// See ``checkSnapshotHolds(_:_:)``.
    private struct StaleFramesCheck {
        /// Sessions those frames leave registered that the snapshot lacks, put back.
        var restored: [SessionID] = []
        /// Sessions those frames removed that the snapshot holds (kept).
        var removedButHeld = 0
        /// Where those frames begin, and their first and last commit.
        var frames: (offset: Int, first: UInt64, last: UInt64)?
    }

    /// A pass over the files at `paths`.
    init(paths: StoreRecovery.Paths, storeKey: StoreKey? = nil) {
        self.paths = paths
        self.storeKey = storeKey
    }

    /// Reads the snapshot into the table; throws for a newer format.
    mutating func readSnapshot(_ bytes: UnsafeRawBufferPointer) throws(StoreError) -> SnapshotContents {
        let contents = SnapshotReader.read(bytes, into: &state.table, opening: storeKey)
        snapshotKeys = contents.keys
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

    /// The log is missing: damage, when a snapshot is there.
    mutating func logMissing(snapshot: SnapshotContents?) {
        guard snapshot != nil else { return }
        // A new store's log is written before its snapshot, so a snapshot without a log is
        // always damage, even a new one's.
        problem(
            .missingLog, paths.log,
            "log missing; changes committed after the snapshot (sequence \(state.snapshotSequence)) may be lost")
        state.plan.rewrite = true
    }

    /// Replays the log over what the snapshot held; throws for a newer format.
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
            problem(.missingSnapshot, paths.snapshot, detail + "; the log kept aside")
            state.plan.preserveLog = true
            state.plan.rewrite = true
        } else if let base, base > state.snapshotSequence {
            problem(
                .missingCommits, paths.snapshot,
                "the snapshot holds commits up to \(state.snapshotSequence) but the log continues from "
                    + "\(base): commits \(state.snapshotSequence + 1)…\(base) are lost (an older snapshot?); "
                    + "both files kept aside")
            keepBothAside()
        } else if let header = log.header, base == state.snapshotSequence, snapshot?.isIntact == true,
            header.snapshotSessions != UInt64(state.snapshotSessions)
        {
            problem(
                .filesDisagree, paths.snapshot,
                "the log was started on a snapshot of \(header.snapshotSessions) sessions at commit "
                    + "\(header.snapshotSequence); this snapshot has \(state.snapshotSessions); both files kept "
                    + "aside, every session of both kept")
            keepBothAside()
        }
        let snapshotSequence = snapshot == nil ? nil : state.snapshotSequence
        var expected = base.flatMap(Self.successor)
        var applied = 0
        var stale: [StoreFrame.Scanned] = []
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
                stale.append(frame)
                continue
            }
            if !stale.isEmpty {
                checkSnapshotHolds(raw, stale)
                stale = []
            }
            applyFrame(raw, frame)
            applied += 1
        }
        if !stale.isEmpty { checkSnapshotHolds(raw, stale) }
        reportStaleDisagreement()
        state.report.logFramesApplied = applied
        state.logicalEnd = log.logicalEnd
        state.lastSequence = max(state.snapshotSequence, log.frames.last?.stamp ?? base ?? 0)
        if state.report.staleLogFramesSkipped > 0 {
            // The last compaction replaced the snapshot but not yet the log.
            if applied > 0 { state.plan.rewrite = true } else { state.plan.freshLog = true }
        }
        if expected == nil && base != nil { state.plan.rewrite = true }  // sequence exhausted: renumber
    }

    /// The snapshot and the log disagree: both are kept aside before the rewrite.
    private mutating func keepBothAside() {
        state.plan.preserveSnapshot = true
        state.plan.preserveLog = true
        state.plan.rewrite = true
    }

    /// The log's frames the snapshot claims to hold (a compaction's crash window): checks that
    /// it does — every session they leave registered is in it, none they remove is — and when it
    /// does not, reports it as damage, keeps both files aside and keeps every session either one
    /// holds (a session only the log has comes back as the log last wrote it).
    private mutating func checkSnapshotHolds(_ raw: UnsafeRawBufferPointer, _ frames: [StoreFrame.Scanned]) {
        var lastRecord: [SessionID: StoreRecord] = [:]
        var lastRegistered: [SessionID: Session] = [:]
        for frame in frames {
            var ignored = KeyTally()  // counted when the frames are applied
            try? StoreFrame.forEachRecord(raw, frame, opening: storeKey, tally: &ignored) { record in
                switch record {
                case .register(let s):
                    lastRecord[s.id] = record
                    lastRegistered[s.id] = s
                case .remove(let id):
                    lastRecord[id] = record
                    lastRegistered[id] = nil
                case .outcome(let id, _, _):
                    lastRecord[id] = record
                case .snapshotHeader, .snapshotEnd, .logHeader:
                    break
                }
            }
        }
        for (id, record) in lastRecord {
            if case .remove = record {
                if state.table.contains(id) { staleCheck.removedButHeld += 1 }  // kept: the safe side
            } else if !state.table.contains(id), let session = lastRegistered[id] {
                state.table.upsert(session)
                _ = StoreRecovery.apply(record, to: &state.table)
                staleCheck.restored.append(id)
            }
        }
        staleCheck.frames = (frames.first?.offset ?? 0, frames.first?.stamp ?? 0, frames.last?.stamp ?? 0)
    }

    /// After the log's replay: reports what ``checkSnapshotHolds(_:_:)`` found. A session the
    /// snapshot lacks that a later frame removes was a run's result the snapshot already held (it
    /// holds run results before they are committed); one still there is damage — or a result
    /// whose commit a crash lost, and ending such a session again is the safe side.
    private mutating func reportStaleDisagreement() {
        let absent = staleCheck.restored.filter { state.table.contains($0) }.count
        guard absent + staleCheck.removedButHeld > 0, let frames = staleCheck.frames else { return }
        problem(
            .filesDisagree, paths.log, offset: frames.offset,
            "commits \(frames.first)…\(frames.last) of the log are older than the snapshot (commit "
                + "\(state.snapshotSequence)), which should therefore hold what they did, but \(absent) sessions "
                + "they leave registered are not in it and \(staleCheck.removedButHeld) they removed are; "
                + "both files kept aside, every session of both kept")
        keepBothAside()
    }

    /// Applies one intact frame's records to the table.
    mutating func applyFrame(_ raw: UnsafeRawBufferPointer, _ frame: StoreFrame.Scanned) {
        do throws(DecodeError) {
            var keys = logKeys  // not `&logKeys`: the closure below uses self
            defer { logKeys = keys }
            try StoreFrame.forEachRecord(raw, frame, opening: storeKey, tally: &keys) { record in
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

    /// The sequence number after `sequence`, nil when they are used up.
    static func successor(_ sequence: UInt64) -> UInt64? {
        let (next, overflow) = sequence.addingReportingOverflow(1)
        return overflow ? nil : next
    }

    /// Reports damage of `kind` in the file at `path`.
    mutating func problem(
        _ kind: StoreProblem.Kind, _ path: String, offset: Int? = nil, frame: Int? = nil, bytes: Int = 0,
        _ detail: String
    ) {
        state.report.problems.append(
            StoreProblem(
                kind: kind, path: path, offset: offset, frameNumber: frame, bytesAffected: bytes, detail: detail))
    }

    /// The error for a record type this version does not know.
    static func unsupported(_ path: String, offset: Int, tag: UInt8) -> StoreError {
        StoreError(
            kind: .unsupportedFormat,
            message: "\(path) holds record type \(tag) at byte \(offset), which this version does not "
                + "understand (written by a newer session-cleanup?); refusing to open",
            path: path, offset: offset)
    }

    /// The error for a file of a newer format.
    static func newerFormat(_ path: String, _ version: UInt32) -> StoreError {
        StoreError(
            kind: .unsupportedFormat,
            message: "\(path) has format version \(version); this version reads up to \(StoreFormat.version); "
                + "refusing to open",
            path: path, offset: 0)
    }
}
