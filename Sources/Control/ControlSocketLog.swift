import Journal

/// Where the control socket's parts journal what happened to it (accept failures, refused
/// clients, closed connections): one `controlSocket` event, at the priority each chooses; nothing
/// when the server was made without a journal (tests).
struct ControlSocketLog {
    private let journal: (any JournalSink)?

    /// Records into `journal`, if any.
    init(_ journal: (any JournalSink)?) { self.journal = journal }

    /// Journals `message` with `fields`, naming the call site.
    func record(
        _ priority: JournalPriority, _ message: String, _ fields: [JournalField] = [], fileID: String = #fileID,
        line: UInt = #line, function: String = #function
    ) {
        journal?.record(
            JournalEntry(
                .controlSocket, message, fields, priority: priority, fileID: fileID, line: line, function: function))
    }
}
