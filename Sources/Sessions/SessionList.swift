/// An immutable, ordered list of sessions that shares the store's memory instead of copying the
/// sessions: what a run works from. A list of the whole store costs 4 bytes per session (its
/// slot), and stays as it was made while the store changes (a run's ended sessions leave the
/// store while the run still reads them).
///
/// A run reads the fields it needs — ``id(at:)``, ``key(at:)``, ``endpoints(at:)``, … — from
/// the stored sessions; the subscript makes a whole `Session` value (its key and label copied
/// out), for the rest.
package struct SessionList: RandomAccessCollection, Sendable {
    /// The store's chunks, or the chunks made for an array's sessions.
    private let chunks: [SessionChunk]
    /// Endpoint lists by number, as when the list was made.
    private let lists: [[String]]
    /// Slot `s` is `chunks[s >> shift]`'s slot `s & mask`.
    private let shift: Int
    private let mask: Int
    /// The slots, in the list's order.
    private let slots: [UInt32]
    /// Keeps the store from clearing a removed session's slot in place while this list reads it
    /// (see ``SessionTable``); nil for an array's list.
    private let copies: FrozenCopies?

    /// A list of `sessions` in their order (a run over sessions picked by hand).
    package init(_ sessions: [Session]) {
        precondition(sessions.count <= Int(UInt32.max), "a list holds at most 2^32 - 1 sessions")
        var lists = EndpointLists()
        var chunks: [SessionChunk] = []
        for session in sessions {
            if chunks.isEmpty || chunks[chunks.count - 1].count == SessionTable.chunkSize {
                chunks.append(SessionChunk(capacity: Swift.min(SessionTable.chunkSize, sessions.count), keyCapacity: 0))
            }
            chunks[chunks.count - 1].append(session, list: lists.retain(session.endpoints))
        }
        self.init(
            chunks: chunks, lists: lists.lists, shift: SessionTable.chunkShift,
            slots: (0..<UInt32(sessions.count)).map { $0 }, copies: nil)
    }

    init(chunks: [SessionChunk], lists: [[String]], shift: Int, slots: [UInt32], copies: FrozenCopies?) {
        self.chunks = chunks
        self.lists = lists
        self.shift = shift
        mask = (1 << shift) - 1
        self.slots = slots
        self.copies = copies
    }

    package var startIndex: Int { 0 }
    package var endIndex: Int { slots.count }

    /// The session at `position`, made from its stored fields.
    package subscript(position: Int) -> Session {
        let (c, s) = place(position)
        return chunks[c].session(at: s, endpoints: lists[Int(chunks[c].lists[s])])
    }

    /// The id of the session at `position`.
    package func id(at position: Int) -> SessionID {
        let (c, s) = place(position)
        return chunks[c].id(at: s)
    }

    /// The owner of the session at `position`.
    package func ownerUID(at position: Int) -> UInt32 {
        let (c, s) = place(position)
        return chunks[c].owners[s]
    }

    /// The endpoints the session at `position` names (an array shared by the sessions naming them).
    package func endpoints(at position: Int) -> [String] {
        let (c, s) = place(position)
        return lists[Int(chunks[c].lists[s])]
    }

    /// How many endpoints the session at `position` names.
    package func endpointCount(at position: Int) -> Int {
        let (c, s) = place(position)
        return lists[Int(chunks[c].lists[s])].count
    }

    /// The key of the session at `position` (secret: only for the call that sends it).
    package func key(at position: Int) -> SessionKey {
        let (c, s) = place(position)
        return chunks[c].key(at: s)
    }

    /// The label of the session at `position`, if it has one.
    package func label(at position: Int) -> String? {
        let (c, s) = place(position)
        return chunks[c].label(at: s)
    }

    /// The attempts made so far for the session at `position`.
    package func attempts(at position: Int) -> Int {
        let (c, s) = place(position)
        return chunks[c].extra(at: s)?.attempts ?? 0
    }

    /// Calls of a run over the list: every session's endpoints, counted.
    package var callCount: Int {
        var total = 0
        for position in slots.indices { total += endpointCount(at: position) }
        return total
    }

    private func place(_ position: Int) -> (Int, Int) {
        let slot = Int(slots[position])
        return (slot >> shift, slot & mask)
    }
}
