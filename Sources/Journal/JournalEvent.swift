/// A kind of journal entry: its `SESSION_CLEANUP_EVENT=` name, a stable 128-bit `MESSAGE_ID=`
/// and the message catalog's explanation of it (`journalctl -x`).
///
/// Every kind the daemon writes is listed once, in ``all`` (`JournalEvents.swift`); the shipped
/// catalog `systemd/session-cleanup.catalog` is generated from that list and a test keeps the
/// two equal. To add a kind: add a constant there with a fresh id (`systemd-id128 new`), a
/// priority chosen by journald's rate-limit pools (see ``JournalPriority``), a subject and an
/// explanation; add it to ``all``; regenerate the catalog (README, "Journal").
package struct JournalEvent: Sendable, Hashable, CustomStringConvertible {
    /// The `SESSION_CLEANUP_EVENT=` value, e.g. `stop-begun`.
    package let name: String
    /// The `MESSAGE_ID=`: 32 lowercase hexadecimal digits, never changed once shipped.
    package let messageID: String
    /// The priority entries of this kind have unless the call site says otherwise.
    package let priority: JournalPriority
    /// The catalog's one-line subject.
    package let subject: String
    /// The catalog's text: what happened, what it means, what to do. `@FIELD@` is replaced by
    /// the entry's field when `journalctl -x` shows it.
    package let explanation: String
    /// Whether entries of this kind can come in floods (one per call or per registration): they
    /// queue behind the lifecycle and summary entries when the journal falls behind.
    package let isBulk: Bool

    init(
        _ name: String, id messageID: String, _ priority: JournalPriority, bulk: Bool = false, subject: String,
        _ explanation: String
    ) {
        self.name = name
        self.messageID = messageID
        self.priority = priority
        self.isBulk = bulk
        self.subject = subject
        self.explanation = explanation
    }

    package var description: String { name }

    package static func == (a: JournalEvent, b: JournalEvent) -> Bool { a.name == b.name }

    package func hash(into hasher: inout Hasher) { hasher.combine(name) }

    /// The event called `name`, if it is one.
    package static func named(_ name: String) -> JournalEvent? { byName[name] }

    private static let byName: [String: JournalEvent] = Dictionary(
        all.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
}

/// The message catalog journald's `journalctl --update-catalog` compiles (`catalog(7)`).
package enum JournalCatalog {
    /// The catalog file's text for `events`, in their order.
    package static func text(for events: [JournalEvent] = JournalEvent.all) -> String {
        var text = """
            # session-cleanup: explanations of the daemon's journal entries, shown by journalctl -x.
            # Installed as /usr/lib/systemd/catalog/session-cleanup.catalog; then run
            # journalctl --update-catalog. Generated from Sources/Journal/JournalEvents.swift:
            # edit the text there, never here.

            """
        for event in events {
            text += """

                -- \(event.messageID)
                Subject: \(event.subject)
                Defined-By: session-cleanup
                Documentation: man:session-cleanup(8)

                \(event.explanation)

                """
        }
        return text
    }
}
