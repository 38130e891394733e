/// What a snapshot file holds, read without trusting any of it: every session from a frame that
/// passed its checks, and every reason the file is not intact.
struct SnapshotContents {
    /// The header, when its frame is intact.
    var header: SnapshotHeader?
    /// The stamp its frames carry: the last sequence (format 2) or generation (format 1); taken
    /// from the header frame, else from the other frames.
    var stamp: UInt64?
    /// Format version: the header's, else guessed from the record types found (nil: unknown).
    var formatVersion: UInt32?
    /// Sessions found in intact frames.
    var sessionsFound = 0
    /// The highest stamp of any intact frame.
    var highestStamp: UInt64 = 0
    /// Why the file is not intact; empty when it is.
    var reasons: [String] = []
    /// Byte ranges that could not be read.
    var damage: [StoreFrame.Damage] = []
    /// A record type this version does not know: the file was written by a newer version.
    var unknownTag: (offset: Int, tag: UInt8)?
    /// The session keys its register records held: clear, sealed and opened, sealed and not.
    var keys = KeyTally()

    var isIntact: Bool { reasons.isEmpty }
}

/// Reads a snapshot (docs/store-format.md, "The snapshot") into a table.
enum SnapshotReader {
    /// Adds every session of `raw`'s intact frames to `table` and describes what was wrong. One
    /// pass, frame by frame, so that reading a snapshot of many sessions allocates nothing but
    /// the sessions themselves. Sealed keys are opened with `storeKey`; a session whose key does
    /// not open is left out, and the snapshot is then not intact.
    static func read(_ raw: UnsafeRawBufferPointer, into table: inout SessionTable, opening storeKey: StoreKey? = nil)
        -> SnapshotContents
    {
        var read = SnapshotContents()
        var keys = KeyTally()
        var index = 0
        var endCount: UInt64?
        var endFrame: (index: Int, closesFile: Bool)?
        var lastIndex = -1
        let scan = StoreFrame.scan(raw) { frame in
            defer { index += 1 }
            lastIndex = index
            if index == 0, frame.offset == 0, case .snapshotHeader(let header) = StoreFrame.singleRecord(raw, frame) {
                read.header = header
                read.formatVersion = header.formatVersion
                read.stamp = frame.stamp
                return
            }
            if index == 0 { read.reasons.append("no valid header frame at byte 0") }
            if read.stamp == nil { read.stamp = frame.stamp }
            read.highestStamp = max(read.highestStamp, frame.stamp)
            if let stamp = read.stamp, frame.stamp != stamp {
                read.reasons.append(
                    "frame \(index) at byte \(frame.offset) is stamped \(frame.stamp), the snapshot \(stamp)")
            }
            do throws(DecodeError) {
                try StoreFrame.forEachRecord(raw, frame, opening: storeKey, tally: &keys) { record in
                    switch record {
                    case .register(let s):
                        table.upsert(s)
                        read.sessionsFound += 1
                    case .snapshotEnd(let count) where frame.recordCount == 1 && endFrame == nil:
                        endCount = count
                        endFrame = (index, frame.offset + frame.size == raw.count)
                    case .snapshotHeader, .snapshotEnd:
                        read.reasons.append("unexpected marker record in frame \(index) at byte \(frame.offset)")
                    case .remove, .outcome, .logHeader:
                        read.reasons.append("log record in snapshot frame \(index) at byte \(frame.offset)")
                    }
                }
            } catch {
                read.reasons.append("frame \(index) at byte \(frame.offset): \(error.reason)")
            }
        }
        read.damage = scan.damage
        read.keys = keys
        if let first = keys.unopenable.first {
            read.reasons.append(
                "\(keys.unopenable.count) sealed keys "
                    + (keys.readWithoutKey ? "read without a store key" : "do not authenticate under the store key")
                    + " (the first: session \(first.id) at byte \(first.offset)); those sessions left out")
        }
        if let u = scan.unknownTag {
            read.unknownTag = u
            return read
        }
        if index == 0 { read.reasons.append("no valid header frame at byte 0") }
        read.highestStamp = max(read.highestStamp, read.stamp ?? 0)
        if endFrame == nil || endFrame?.index != lastIndex || endFrame?.closesFile != true {
            read.reasons.append("no valid end frame (file truncated?)")
            if let endFrame, endFrame.index != lastIndex {
                read.reasons.append("end marker in frame \(endFrame.index), before the last frame")
            }
        }
        if let h = read.header?.sessionCount, let e = endCount, h != e || h != UInt64(read.sessionsFound) {
            read.reasons.append("session count mismatch: header \(h), end \(e), found \(read.sessionsFound)")
        }
        for d in scan.damage {
            read.reasons.append("bytes \(d.start)..<\(d.end) (frame \(d.frameNumber)): \(d.reason)")
        }
        return read
    }
}
