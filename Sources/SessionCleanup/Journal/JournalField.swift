import Sessions

/// One structured journal field: `NAME=value`.
///
/// journald silently drops fields whose names are not upper-case `[A-Z0-9_]`, start with a digit
/// or an underscore (reserved for trusted fields), or exceed 64 bytes. Names are therefore
/// checked where they are made: ``Name/init(validating:)`` for names built at run time, and the
/// constants below, whose validity a unit test proves.
public struct JournalField: Sendable, Equatable {
    /// A field name that journald accepts.
    public struct Name: Hashable, Sendable, CustomStringConvertible {
        /// The name's text.
        public let rawValue: String

        /// Returns nil unless `text` is a name journald keeps.
        public init?(validating text: String) {
            guard Self.isValid(text) else { return nil }
            rawValue = text
        }

        /// For the constants below; their validity is proved by `JournalFieldTests`.
        init(constant text: String) { rawValue = text }

        /// Whether journald keeps a field called `text`.
        public static func isValid(_ text: String) -> Bool {
            let bytes = Array(text.utf8)
            guard let first = bytes.first, bytes.count <= 64, first != UInt8(ascii: "_") else { return false }
            guard !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
            return bytes.allSatisfy { byte in
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
            }
        }

        public var description: String { rawValue }

        /// `SESSION_CLEANUP_EVENT`: the lifecycle or stop-run event an entry records.
        public static let event = Name(constant: "SESSION_CLEANUP_EVENT")
        /// `BUDGET_USEC`: a stop budget.
        public static let budgetUsec = Name(constant: "BUDGET_USEC")
        /// `TIME_REMAINING_USEC`: what was left of a budget.
        public static let timeRemainingUsec = Name(constant: "TIME_REMAINING_USEC")
        /// `DURATION_USEC`: how long something took.
        public static let durationUsec = Name(constant: "DURATION_USEC")
        /// `SIGNAL`: the signal that caused an event, e.g. `SIGTERM`.
        public static let signal = Name(constant: "SIGNAL")
        /// `SENDER_PID`: the process that sent a signal.
        public static let senderPID = Name(constant: "SENDER_PID")
        /// `CONFIG_FILE`: a configuration file.
        public static let configFile = Name(constant: "CONFIG_FILE")
        /// `ERROR`: a cause, never containing secrets.
        public static let error = Name(constant: "ERROR")
        /// `ERRNO`: the errno of a failed call (journald's own convention).
        public static let errno = Name(constant: "ERRNO")
        /// `SESSION_ID`: a session's non-secret id.
        public static let sessionID = Name(constant: "SESSION_ID")
        /// `SESSION_LABEL`: a session's optional label.
        public static let sessionLabel = Name(constant: "SESSION_LABEL")
        /// `ENDPOINT`: an endpoint's configured name.
        public static let endpoint = Name(constant: "ENDPOINT")
        /// `URL`: an endpoint URL with the session key replaced.
        public static let url = Name(constant: "URL")
        /// `OUTCOME`: ended, rejected, failed, expired or not-started.
        public static let outcome = Name(constant: "OUTCOME")
        /// `HTTP_STATUS`: the status a server answered with.
        public static let httpStatus = Name(constant: "HTTP_STATUS")
        /// `ATTEMPTS`: how many requests a call made.
        public static let attempts = Name(constant: "ATTEMPTS")
        /// `OWNER_UID`: the uid that registered a session.
        public static let ownerUID = Name(constant: "OWNER_UID")
        /// `SESSIONS_TOTAL`: the sessions a run set out to end.
        public static let sessionsTotal = Name(constant: "SESSIONS_TOTAL")
        /// Sessions ended at every endpoint.
        public static let sessionsEnded = Name(constant: "SESSIONS_ENDED")
        /// Sessions kept for the next start.
        public static let sessionsLeft = Name(constant: "SESSIONS_LEFT")
        /// Calls per outcome.
        public static let callsEnded = Name(constant: "CALLS_ENDED")
        /// Calls the server rejected.
        public static let callsRejected = Name(constant: "CALLS_REJECTED")
        /// Calls that failed in transport.
        public static let callsFailed = Name(constant: "CALLS_FAILED")
        /// Calls cut off by the budget.
        public static let callsExpired = Name(constant: "CALLS_EXPIRED")
        /// Calls never started.
        public static let callsNotStarted = Name(constant: "CALLS_NOT_STARTED")
        /// `RUN_KIND`: `stop`, `leftover` or `on-demand`.
        public static let runKind = Name(constant: "RUN_KIND")
        /// `STORE_FILE`: a file of the session store.
        public static let storeFile = Name(constant: "STORE_FILE")
        /// `PEER_UID`: the uid of a control-socket client.
        public static let peerUID = Name(constant: "PEER_UID")
        /// `STOP_REASON`: why a SIGTERM was a stop run and not a restart hand-over.
        public static let stopReason = Name(constant: "STOP_REASON")
        /// `UNIT`: the daemon's own unit, as its service manager names it.
        public static let unit = Name(constant: "UNIT")
        /// `JOB_TYPE`: the type of the unit's job while it stops (`restart`, `stop`).
        public static let jobType = Name(constant: "JOB_TYPE")
        /// `SYNC_USEC`: time spent making something durable (at SIGTERM: the last registrations and
        /// the stop run's start record).
        public static let syncUsec = Name(constant: "SYNC_USEC")
        /// `QUERY_USEC`: how long asking the service manager (restart or stop?) took at SIGTERM.
        public static let queryUsec = Name(constant: "QUERY_USEC")
        /// `CHECK_USEC`: how long checking the configuration for the restarted daemon took.
        public static let checkUsec = Name(constant: "CHECK_USEC")
        /// `SESSION_CLEANUP_RUN_ID`: the run an entry belongs to (32 hex digits, like `INVOCATION_ID=`).
        public static let runID = Name(constant: "SESSION_CLEANUP_RUN_ID")
        /// `CALLS`: how many calls an entry accounts for (1 for `call-finished`).
        public static let calls = Name(constant: "CALLS")
        /// `CALLS_TOTAL`: every call of a run, whatever its outcome.
        public static let callsTotal = Name(constant: "CALLS_TOTAL")
        /// `JOURNAL_ENTRIES`: call entries (`call-finished`, `calls-ended`) a run wrote.
        public static let journalEntries = Name(constant: "JOURNAL_ENTRIES")
        /// `JOURNAL_DROPPED`: entries that could not be journaled (the journal was not keeping up).
        public static let journalDropped = Name(constant: "JOURNAL_DROPPED")
        /// `SESSIONS_REGISTERED`: registrations in a summary's interval.
        public static let sessionsRegistered = Name(constant: "SESSIONS_REGISTERED")
        /// `SESSIONS_UNREGISTERED`: sessions forgotten without being ended in a summary's interval.
        public static let sessionsUnregistered = Name(constant: "SESSIONS_UNREGISTERED")
        /// `NOTIFY_STATE`: an `sd_notify` message that could not be delivered.
        public static let notifyState = Name(constant: "NOTIFY_STATE")

        /// Every constant above, for the test that proves them valid.
        static let allConstants: [Name] = [
            event, budgetUsec, timeRemainingUsec, durationUsec, signal, senderPID, configFile, error,
            errno, sessionID, sessionLabel, endpoint, url, outcome, httpStatus, attempts, ownerUID,
            sessionsTotal, sessionsEnded, sessionsLeft, callsEnded, callsRejected, callsFailed,
            callsExpired, callsNotStarted, runKind, storeFile, peerUID, stopReason, unit, jobType, syncUsec,
            queryUsec, checkUsec, runID, calls, callsTotal, journalEntries, journalDropped, sessionsRegistered,
            sessionsUnregistered, notifyState,
        ]
    }

    /// What a field holds: text, or a session's id kept as its number until the entry is
    /// encoded (a `calls-ended` entry holds up to 500 of them; no String is made for each).
    enum Content: Sendable {
        case text(String)
        case sessionID(SessionID)
    }

    /// The field's name.
    public let name: Name
    /// What it holds.
    let content: Content

    /// The field's value (may contain newlines: the native protocol carries them).
    public var value: String {
        switch content {
        case .text(let text): return text
        case .sessionID(let id): return id.description
        }
    }

    /// Creates `name=value`.
    public init(_ name: Name, _ value: String) {
        self.name = name
        content = .text(value)
    }

    /// Creates `name=` a session's id (its 16 hexadecimal digits, as ``SessionID/description``).
    public init(_ name: Name, _ id: SessionID) {
        self.name = name
        content = .sessionID(id)
    }

    /// Equal when name and value are, whatever they hold.
    public static func == (a: JournalField, b: JournalField) -> Bool { a.name == b.name && a.value == b.value }

    /// Creates `name=value` for an integer value.
    public init<Number: BinaryInteger>(_ name: Name, _ value: Number) {
        self.init(name, String(value))
    }
}
