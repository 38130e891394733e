/// Encodes the log's frames (docs/store-format.md, "The log"): the header frame that names the
/// snapshot the log continues, and the frames of one commit.
enum LogEncoder {
    /// The header frame of a log continuing the snapshot whose last sequence is `snapshotSequence`.
    static func header(snapshotSequence: UInt64, snapshotSessions: Int, createdAt: UInt64) -> [UInt8] {
        var out: [UInt8] = []
        var scratch = ByteWriter(capacity: 64)
        let header = LogHeader(
            formatVersion: StoreFormat.version, snapshotSequence: snapshotSequence,
            snapshotSessions: UInt64(snapshotSessions), createdAt: createdAt)
        StoreFrame.append(stamp: snapshotSequence, record: .logHeader(header), to: &out, scratch: &scratch)
        return out
    }

    /// The frames of one commit: the encoded `records` (record `i` ends at `ends[i]`), as few
    /// frames as the frame size limit allows (one, below 16 MiB), numbered from `firstSequence`.
    /// Returns the bytes and how many sequence numbers they took.
    static func commit(records: [UInt8], ends: [Int], firstSequence: UInt64) -> (bytes: [UInt8], frames: Int) {
        var out: [UInt8] = []
        out.reserveCapacity(records.count + StoreFrame.headerSize + StoreFrame.payloadPrefixSize)
        var frames = 0
        records.withUnsafeBytes { raw in
            var i = 0
            var start = 0
            let limit = StoreFrame.maxPayload - StoreFrame.payloadPrefixSize
            while i < ends.count {
                var j = i + 1
                while j < ends.count && ends[j] - start <= limit { j += 1 }
                let end = ends[j - 1]
                StoreFrame.append(
                    stamp: firstSequence &+ UInt64(frames), recordCount: j - i,
                    records: UnsafeRawBufferPointer(rebasing: raw[start..<end]), to: &out)
                frames += 1
                start = end
                i = j
            }
        }
        return (out, frames)
    }
}
