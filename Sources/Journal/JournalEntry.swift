import EventLoop

/// Syslog priorities, as journald's `PRIORITY=` field and sd-daemon's `<N>` prefix use them.
///
/// journald rate-limits each unit per *pool* of priorities: emergency to critical, error,
/// warning, notice and info together, and debug (`journald-rate-limit.c`). The daemon's events
/// are placed so that what can come in floods never shares a pool with the lifecycle and summary
/// entries: per-call outcomes that are not `ended` are warnings, registrations are debug, and
/// lifecycle and summary entries are notice or info (see ``JournalEvent``).
package enum JournalPriority: Int, Sendable, Comparable {
    case error = 3
    case warning = 4
    case notice = 5
    case info = 6
    case debug = 7

    package static func < (a: JournalPriority, b: JournalPriority) -> Bool { a.rawValue < b.rawValue }
}

/// The Swift code that made an entry: journald's `CODE_FILE=`, `CODE_LINE=`, `CODE_FUNC=`.
package struct JournalCodeLocation: Sendable, Equatable {
    /// `Module/File.swift` (`#fileID`: no build machine path).
    package let file: String
    /// The line.
    package let line: UInt
    /// The function's name.
    package let function: String

    /// Creates a location.
    package init(file: String, line: UInt, function: String) {
        self.file = file
        self.line = line
        self.function = function
    }
}

/// One entry: a kind of event, a message for people, and structured fields for filtering.
package struct JournalEntry: Sendable, Equatable {
    /// What kind of event it records (`SESSION_CLEANUP_EVENT=` and `MESSAGE_ID=`).
    package var event: JournalEvent
    /// How important the entry is (the event's priority unless the call site chose another).
    package var priority: JournalPriority
    /// One line for operators: what happened, to what, and what it means.
    package var message: String
    /// Structured fields (`SESSION_ID=`, …); a name may repeat (journald keeps every value).
    package var fields: [JournalField]
    /// Where in the Swift code the entry was made.
    package var location: JournalCodeLocation?

    /// Creates an entry of `event` at the event's priority (or `priority`), remembering the
    /// call site for `CODE_FILE=`/`CODE_LINE=`/`CODE_FUNC=`.
    package init(
        _ event: JournalEvent, _ message: String, _ fields: [JournalField] = [], priority: JournalPriority? = nil,
        fileID: String = #fileID, line: UInt = #line, function: String = #function
    ) {
        self.event = event
        self.priority = priority ?? event.priority
        self.message = message
        self.fields = fields
        location = JournalCodeLocation(file: fileID, line: line, function: function)
    }

    /// The value of the first field called `name` (`.event` gives the event's name).
    package func value(of name: JournalField.Name) -> String? {
        if name == .event { return event.name }
        return fields.first { $0.name == name }?.value
    }

    /// Every value of the fields called `name`, in order.
    package func values(of name: JournalField.Name) -> [String] {
        fields.filter { $0.name == name }.map(\.value)
    }
}

/// Where journal entries go.
package protocol JournalSink: AnyObject {
    /// Records one entry; returns false when it was dropped because the journal is not keeping
    /// up (the count is reported in the next entry that gets through).
    @discardableResult
    func record(_ entry: JournalEntry) -> Bool

    /// Entries dropped so far, since the journal was made.
    var droppedEntries: Int { get }

    /// Waits, at most until `deadline`, for entries still waiting to be written; drops and counts
    /// the rest. Returns how many it dropped. For the last moments before exit.
    @discardableResult
    func flush(until deadline: MonotonicInstant) -> Int
}
