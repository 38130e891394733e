/// Encodes a snapshot: a header frame, one frame per session, an end frame
/// (docs/store-format.md, "The snapshot"). One session per frame, so that a damaged frame costs
/// exactly the one session in it: each session is checked by its own frame's CRC.
///
/// The encoder fills `bytes` piece by piece; a writer drains it every so often, so that a large
/// snapshot is never held in memory whole.
struct SnapshotEncoder {
    /// Encoded frames not yet taken by the writer.
    var bytes: [UInt8] = []
    private var scratch = ByteWriter(capacity: 512)
    private let lastSequence: UInt64
    private let sessionCount: Int
    private var written = 0
    private let storeKey: StoreKey?

    /// Starts a snapshot of `sessionCount` sessions containing every commit up to `lastSequence`,
    /// their keys sealed with `storeKey` if there is one.
    init(lastSequence: UInt64, sessionCount: Int, createdAt: UInt64, sealingWith storeKey: StoreKey? = nil) {
        self.lastSequence = lastSequence
        self.storeKey = storeKey
        self.sessionCount = sessionCount
        let header = SnapshotHeader(
            formatVersion: StoreFormat.version, lastSequence: lastSequence, sessionCount: UInt64(sessionCount),
            createdAt: createdAt)
        StoreFrame.append(stamp: lastSequence, record: .snapshotHeader(header), to: &bytes, scratch: &scratch)
    }

    /// Appends one session's frame.
    mutating func append(_ session: Session) {
        StoreFrame.append(
            stamp: lastSequence, record: .register(session), to: &bytes, scratch: &scratch, sealingWith: storeKey)
        written += 1
    }

    /// Appends the end frame. The count it records is the number of sessions appended, which a
    /// reader checks against the header's.
    mutating func finish() {
        StoreFrame.append(
            stamp: lastSequence, record: .snapshotEnd(sessionCount: UInt64(written)), to: &bytes, scratch: &scratch)
    }

    /// A whole snapshot in memory (small stores, recovery, tests).
    static func encode<S: Sequence>(
        _ sessions: S, count: Int, lastSequence: UInt64, createdAt: UInt64, sealingWith storeKey: StoreKey? = nil
    ) -> [UInt8] where S.Element == Session {
        var encoder = SnapshotEncoder(
            lastSequence: lastSequence, sessionCount: count, createdAt: createdAt, sealingWith: storeKey)
        encoder.bytes.reserveCapacity(count * 160 + 128)
        for s in sessions { encoder.append(s) }
        encoder.finish()
        return encoder.bytes
    }
}
