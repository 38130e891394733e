/// Encoded records, each one's end noted (so a commit can be split into frames).
struct RecordBuffer {
    /// Encoded in place: a run's results (one removal per ended session) cost no array each.
    private var writer = ByteWriter()
    /// Where each record ends in ``bytes``.
    private(set) var ends: [Int] = []
    /// How many of them remove a session.
    private(set) var removals = 0

    /// The records, one after another.
    var bytes: [UInt8] { writer.bytes }
    /// Whether it holds no record.
    var isEmpty: Bool { ends.isEmpty }
    /// Number of records.
    var count: Int { ends.count }

    /// Encodes `record` at the end, a key sealed with `storeKey` if there is one; `isRemoval`
    /// when it removes a session.
    mutating func append(_ record: StoreRecord, isRemoval: Bool, sealingWith storeKey: StoreKey? = nil) {
        record.encode(into: &writer, sealingWith: storeKey)
        noteEnd(isRemoval: isRemoval)
    }

    /// Adds a record encoded already.
    mutating func append(encoded: [UInt8], isRemoval: Bool) {
        writer.bytes += encoded
        noteEnd(isRemoval: isRemoval)
    }

    private mutating func noteEnd(isRemoval: Bool) {
        ends.append(writer.bytes.count)
        if isRemoval { removals += 1 }
    }

    /// The records of `a`, then those of `b`.
    static func + (a: RecordBuffer, b: RecordBuffer) -> RecordBuffer {
        var joined = a
        let shift = a.bytes.count
        joined.writer.bytes += b.bytes
        joined.ends += b.ends.map { $0 + shift }
        joined.removals += b.removals
        return joined
    }
}
