/// Every session of a table at one moment, in no particular order; safe to hand to another
/// thread, and cheap to make (the sessions are shared, not copied; each is made as it is read).
struct FrozenSessions: Sequence, Sendable {
    /// The table's chunks, shared.
    let chunks: [SessionChunk]
    /// Its endpoint lists, by number.
    let lists: [[String]]
    /// Its vacant slots, skipped.
    let vacancies: SlotSet
    /// Number of sessions.
    let count: Int
    /// Keeps the table from clearing slots in place while this copy shares its chunks.
    let copies: FrozenCopies

    /// Walks the chunks slot by slot, skipping vacant slots.
    struct Iterator: IteratorProtocol {
        fileprivate let sessions: FrozenSessions
        private var chunk = 0
        private var slot = 0

        fileprivate init(_ sessions: FrozenSessions) { self.sessions = sessions }

        /// The next session, made from its fields.
        mutating func next() -> Session? {
            let chunks = sessions.chunks
            while chunk < chunks.count {
                if slot == chunks[chunk].count {
                    chunk += 1
                    slot = 0
                    continue
                }
                defer { slot += 1 }
                if !sessions.vacancies.contains(chunk << SessionTable.chunkShift | slot) {
                    return chunks[chunk].session(at: slot, endpoints: sessions.lists[Int(chunks[chunk].lists[slot])])
                }
            }
            return nil
        }
    }

    /// An iterator from the first slot.
    func makeIterator() -> Iterator { Iterator(self) }
}
