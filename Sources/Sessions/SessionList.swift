/// An immutable, ordered list of sessions that shares the store's memory instead of copying the
/// sessions: what a run works from. A list of the whole store costs 4 bytes per session (its
/// slot) however large the sessions are, and stays as it was made while the store changes (a
/// run's ended sessions leave the store while the run still reads them).
public struct SessionList: RandomAccessCollection, Sendable {
    // Inlinable, and the stored properties with it: a run reads its sessions several times per
    // call, and a subscript called across the module boundary (a coroutine) cost ~1,500
    // instructions per call in allocations and reference counting (callgrind, issue 10).
    /// The store's chunks, or one chunk holding an array's sessions.
    @usableFromInline let chunks: [[Session]]
    /// Slot `s` is `chunks[s >> shift][s & mask]`.
    @usableFromInline let shift: Int
    @usableFromInline let mask: Int
    /// The slots, in the list's order.
    @usableFromInline let slots: [UInt32]
    /// Keeps the store from clearing a removed session's slot in place while this list reads it
    /// (see ``SessionTable``); nil for an array's list.
    private let copies: FrozenCopies?

    /// A list of `sessions` in their order (a run over sessions picked by hand).
    public init(_ sessions: [Session]) {
        precondition(sessions.count <= Int(UInt32.max), "a list holds at most 2^32 - 1 sessions")
        self.init(chunks: [sessions], shift: 32, slots: (0..<UInt32(sessions.count)).map { $0 }, copies: nil)
    }

    init(chunks: [[Session]], shift: Int, slots: [UInt32], copies: FrozenCopies?) {
        self.chunks = chunks
        self.shift = shift
        mask = (1 << shift) - 1
        self.slots = slots
        self.copies = copies
    }

    @inlinable public var startIndex: Int { 0 }
    @inlinable public var endIndex: Int { slots.count }

    /// The session at `position`, read in place (no copy of its strings' references).
    @inlinable public subscript(position: Int) -> Session {
        _read {
            let slot = Int(slots[position])
            yield chunks[slot >> shift][slot & mask]
        }
    }
}
