/// Writes the snapshot file (docs/store-format.md, "The snapshot") by atomic replacement,
/// encoding and writing a megabyte at a time: a snapshot of any size needs little memory, and a
/// write can be cancelled between pieces (the temporary file is then removed).
enum SnapshotFile {
    static let name = StoreFormat.snapshotFileName
    static let pieceBytes = 1 << 20

    /// Replaces the snapshot with `sessions` as of commit `lastSequence`, their keys sealed with
    /// `storeKey` if there is one; returns its size.
    static func write(
        _ sessions: FrozenSessions, lastSequence: UInt64, in directory: StoreDirectory, sealingWith storeKey: StoreKey?,
        isCancelled: () -> Bool = { false }
    ) throws(StoreError) -> Int {
        var size = 0
        _ = try directory.replaceAtomically(name) { f throws(StoreError) in
            var encoder = SnapshotEncoder(
                lastSequence: lastSequence, sessionCount: sessions.count, createdAt: StoreClock.wallMicroseconds(),
                sealingWith: storeKey)
            encoder.bytes.reserveCapacity(pieceBytes + (64 << 10))
            for session in sessions {
                encoder.append(session)
                if encoder.bytes.count >= pieceBytes {
                    try directory.writeAll(f, encoder.bytes, at: size, name: name + ".tmp")
                    size += encoder.bytes.count
                    encoder.bytes.removeAll(keepingCapacity: true)
                    if isCancelled() {
                        throw StoreError(
                            kind: .closed,
                            message: "snapshot write to \(directory.fullPath(name)) cancelled: the store is closing",
                            path: directory.path)
                    }
                }
            }
            encoder.finish()
            try directory.writeAll(f, encoder.bytes, at: size, name: name + ".tmp")
            size += encoder.bytes.count
        }
        return size
    }
}
