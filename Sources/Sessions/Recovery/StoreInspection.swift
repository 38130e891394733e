/// The store's format and recovery on bytes alone, without a directory: what a snapshot and a
/// log hold, and the bytes the store writes. For tools that check the format (the store's fuzz
/// target builds stores with it, damages them and checks what recovery keeps).
package enum StoreInspection {
    /// One change of a commit.
    package enum Change: Sendable {
        case register(Session)
        case remove(SessionID)
        case outcome(SessionID, attempts: Int, lastOutcome: String?)

        init?(_ record: StoreRecord) {
            switch record {
            case .register(let s): self = .register(s)
            case .remove(let id): self = .remove(id)
            case .outcome(let id, let attempts, let last): self = .outcome(id, attempts: attempts, lastOutcome: last)
            case .snapshotHeader, .snapshotEnd, .logHeader: return nil
            }
        }

        var record: StoreRecord {
            switch self {
            case .register(let s): return .register(s)
            case .remove(let id): return .remove(id)
            case .outcome(let id, let attempts, let last): return .outcome(id, attempts: attempts, lastOutcome: last)
            }
        }
    }

    /// What two files hold, as opening would find it.
    package struct Contents: Sendable {
        /// Every session recovered, in no particular order.
        package var sessions: [Session]
        /// What opening would report.
        package var report: LoadReport
        /// Whether opening would write a new snapshot and log.
        package var rewrites: Bool
    }

    /// What `snapshot` and `log` (either may be missing) hold. Throws only for a file of a
    /// newer format.
    package static func recover(snapshot: [UInt8]?, log: [UInt8]?) throws(StoreError) -> Contents {
        let recovered = try StoreRecovery.recover(
            snapshot: snapshot, log: log,
            paths: StoreRecovery.Paths(snapshot: StoreFormat.snapshotFileName, log: StoreFormat.logFileName))
        return Contents(
            sessions: Array(recovered.table.frozen), report: recovered.report, rewrites: recovered.plan.rewrite)
    }

    /// The names of the two files in a state directory: the snapshot and the log.
    package static let fileNames = (snapshot: StoreFormat.snapshotFileName, log: StoreFormat.logFileName)

    /// The intact frames of `file` (a snapshot or a log), in order: where each lies and the
    /// session changes it carries (none for a header or an end frame). Damaged bytes between
    /// frames are skipped, as a reader skips them.
    package static func frames(of file: [UInt8]) -> [(range: Range<Int>, changes: [Change])] {
        file.withUnsafeBytes { buf in
            StoreFrame.scan(buf).frames.map { frame in
                let records = (try? StoreFrame.records(buf, frame)) ?? []
                return (frame.offset..<(frame.offset + frame.size), records.compactMap(Change.init))
            }
        }
    }

    /// A snapshot of `sessions` containing the commits up to `lastSequence`, and where each
    /// session's frame lies in it.
    package static func snapshot(_ sessions: [Session], lastSequence: UInt64) -> (bytes: [UInt8], frames: [Range<Int>])
    {
        var encoder = SnapshotEncoder(lastSequence: lastSequence, sessionCount: sessions.count, createdAt: 0)
        var frames: [Range<Int>] = []
        for s in sessions {
            let start = encoder.bytes.count
            encoder.append(s)
            frames.append(start..<encoder.bytes.count)
        }
        encoder.finish()
        return (encoder.bytes, frames)
    }

    /// A log continuing a snapshot (`snapshotSequence`, `snapshotSessions`) with one commit per
    /// element of `commits`, numbered on from the snapshot, then its reserve; where each commit's
    /// frame lies in it, and where its frames end (the reserve begins).
    package static func log(snapshotSequence: UInt64, snapshotSessions: Int, commits: [[Change]]) -> (
        bytes: [UInt8], frames: [Range<Int>], end: Int
    ) {
        var bytes = LogEncoder.header(
            snapshotSequence: snapshotSequence, snapshotSessions: snapshotSessions, createdAt: 0)
        var frames: [Range<Int>] = []
        var sequence = snapshotSequence
        for changes in commits {
            guard !changes.isEmpty else {
                frames.append(bytes.count..<bytes.count)  // an empty commit writes nothing
                continue
            }
            var buffer = RecordBuffer()
            for change in changes { buffer.append(change.record, isRemoval: false) }
            let start = bytes.count
            sequence = sequence &+ 1
            let (encoded, used) = LogEncoder.commit(records: buffer.bytes, ends: buffer.ends, firstSequence: sequence)
            sequence = sequence &+ UInt64(used - 1)
            bytes += encoded
            frames.append(start..<bytes.count)
        }
        let end = bytes.count
        bytes += [UInt8](repeating: 0, count: StoreFormat.logReserveMinimum)
        return (bytes, frames, end)
    }
}
