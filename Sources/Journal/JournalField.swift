import Sessions

/// One structured journal field: `NAME=value`.
///
/// journald silently drops fields whose names are not upper-case `[A-Z0-9_]`, start with a digit
/// or an underscore (reserved for trusted fields), or exceed 64 bytes. Names are therefore
/// checked where they are made: ``Name/init(validating:)`` for names built at run time, and the
/// constants below, whose validity a unit test proves.
package struct JournalField: Sendable, Equatable {
    /// A field name that journald accepts.
    package struct Name: Hashable, Sendable, CustomStringConvertible {
        /// The name's text.
        package let rawValue: String

        /// Returns nil unless `text` is a name journald keeps.
        package init?(validating text: String) {
            guard Self.isValid(text) else { return nil }
            rawValue = text
        }

        /// For the constants below; their validity is proved by `JournalFieldTests`.
        init(constant text: String) { rawValue = text }

        /// Whether journald keeps a field called `text`.
        package static func isValid(_ text: String) -> Bool {
            let bytes = Array(text.utf8)
            guard let first = bytes.first, bytes.count <= 64, first != UInt8(ascii: "_") else { return false }
            guard !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
            return bytes.allSatisfy { byte in
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
            }
        }

        package var description: String { rawValue }

        /// `SESSION_CLEANUP_EVENT`: the lifecycle or stop-run event an entry records.
        package static let event = Name(constant: "SESSION_CLEANUP_EVENT")
        /// `BUDGET_USEC`: a stop budget.
        package static let budgetUsec = Name(constant: "BUDGET_USEC")
        /// `TIME_REMAINING_USEC`: what was left of a budget.
        package static let timeRemainingUsec = Name(constant: "TIME_REMAINING_USEC")
        /// `DURATION_USEC`: how long something took.
        package static let durationUsec = Name(constant: "DURATION_USEC")
        /// `BUDGET`, `TIME_REMAINING`, `DURATION`, `VALIDITY`: the three above and ``validityUsec`` for people (`25 s`, `120 ms`),
        /// added by the journal writer beside each; what `journalctl -x`'s catalog text shows.
        package static let humanTwins: [String: String] = [
            "BUDGET_USEC": "BUDGET", "TIME_REMAINING_USEC": "TIME_REMAINING", "DURATION_USEC": "DURATION",
            "VALIDITY_USEC": "VALIDITY",
        ]
        /// `SIGNAL`: the signal that caused an event, e.g. `SIGTERM`.
        package static let signal = Name(constant: "SIGNAL")
        /// `SENDER_PID`: the process that sent a signal.
        package static let senderPID = Name(constant: "SENDER_PID")
        /// `CONFIG_FILE`: a configuration file.
        package static let configFile = Name(constant: "CONFIG_FILE")
        /// `ERROR`: a cause, never containing secrets.
        package static let error = Name(constant: "ERROR")
        /// `FAILURES`: how many failures one coalesced entry stands for.
        package static let failures = Name(constant: "FAILURES")
        /// `ERRNO`: the errno of a failed call (journald's own convention).
        package static let errno = Name(constant: "ERRNO")
        /// `SESSION_ID`: a session's non-secret id.
        package static let sessionID = Name(constant: "SESSION_ID")
        /// `SESSION_LABEL`: a session's optional label.
        package static let sessionLabel = Name(constant: "SESSION_LABEL")
        /// `ENDPOINT`: an endpoint's configured name.
        package static let endpoint = Name(constant: "ENDPOINT")
        /// `URL`: an endpoint URL with the session key replaced.
        package static let url = Name(constant: "URL")
        /// `OUTCOME`: ended, rejected, failed, unconfirmed, expired or not-started.
        package static let outcome = Name(constant: "OUTCOME")
        /// `HTTP_STATUS`: the status a server answered with.
        package static let httpStatus = Name(constant: "HTTP_STATUS")
        /// `ATTEMPTS`: how many requests a call made.
        package static let attempts = Name(constant: "ATTEMPTS")
        /// `OWNER_UID`: the uid that registered a session.
        package static let ownerUID = Name(constant: "OWNER_UID")
        /// `SESSIONS_TOTAL`: the sessions a run set out to end.
        package static let sessionsTotal = Name(constant: "SESSIONS_TOTAL")
        /// Sessions ended at every endpoint.
        package static let sessionsEnded = Name(constant: "SESSIONS_ENDED")
        /// Sessions kept for the next start.
        package static let sessionsLeft = Name(constant: "SESSIONS_LEFT")
        /// Calls per outcome.
        package static let callsEnded = Name(constant: "CALLS_ENDED")
        /// Calls the server rejected.
        package static let callsRejected = Name(constant: "CALLS_REJECTED")
        /// Calls that failed in transport.
        package static let callsFailed = Name(constant: "CALLS_FAILED")
        /// Calls cut off by the budget.
        package static let callsExpired = Name(constant: "CALLS_EXPIRED")
        /// `CALLS_UNCONFIRMED`: a run's calls whose request was sent but not answered.
        package static let callsUnconfirmed = Name(constant: "CALLS_UNCONFIRMED")
        /// Calls never started.
        package static let callsNotStarted = Name(constant: "CALLS_NOT_STARTED")
        /// `ORIGIN`: `scheme://host:port`.
        package static let origin = Name(constant: "ORIGIN")
        /// `LIMIT_HIGHEST`, `LIMIT_FINAL`: an origin's adaptive limit at its highest and at the end.
        package static let limitHighest = Name(constant: "LIMIT_HIGHEST")
        package static let limitFinal = Name(constant: "LIMIT_FINAL")
        /// `LATENCY_LOWEST_USEC`, `LATENCY_MEDIAN_USEC`: of an origin's replies.
        package static let latencyLowestUsec = Name(constant: "LATENCY_LOWEST_USEC")
        package static let latencyMedianUsec = Name(constant: "LATENCY_MEDIAN_USEC")
        /// `CUTS_*`: the signals that cut an origin's adaptive limit, by cause.
        package static let cutsTimeout = Name(constant: "CUTS_TIMEOUT")
        package static let cutsOverloaded = Name(constant: "CUTS_OVERLOADED")
        package static let cutsRefused = Name(constant: "CUTS_REFUSED")
        package static let cutsReset = Name(constant: "CUTS_RESET")
        package static let cutsUnacknowledged = Name(constant: "CUTS_UNACKNOWLEDGED")
        package static let cutsSlow = Name(constant: "CUTS_SLOW")
        /// `RUN_KIND`: `stop`, `leftover`, `on-demand` or `sleep`.
        package static let runKind = Name(constant: "RUN_KIND")
        /// `STORE_FILE`: a file of the session store.
        package static let storeFile = Name(constant: "STORE_FILE")
        /// `PEER_UID`: the uid of a control-socket client.
        package static let peerUID = Name(constant: "PEER_UID")
        /// `STOP_REASON`: why a SIGTERM was a stop run and not a restart hand-over.
        package static let stopReason = Name(constant: "STOP_REASON")
        /// `UNIT`: the daemon's own unit, as its service manager names it.
        package static let unit = Name(constant: "UNIT")
        /// `JOB_TYPE`: the type of the unit's job while it stops (`restart`, `stop`).
        package static let jobType = Name(constant: "JOB_TYPE")
        /// `SYNC_USEC`: time spent making something durable (at SIGTERM: the last registrations and
        /// the stop run's start record).
        package static let syncUsec = Name(constant: "SYNC_USEC")
        /// `QUERY_USEC`: how long asking the service manager (restart or stop?) took at SIGTERM.
        package static let queryUsec = Name(constant: "QUERY_USEC")
        /// `CHECK_USEC`: how long checking the configuration for the restarted daemon took.
        package static let checkUsec = Name(constant: "CHECK_USEC")
        /// `SESSION_CLEANUP_RUN_ID`: the run an entry belongs to (32 hex digits, like `INVOCATION_ID=`).
        package static let runID = Name(constant: "SESSION_CLEANUP_RUN_ID")
        /// `CALLS`: how many calls an entry accounts for (1 for `call-finished`).
        package static let calls = Name(constant: "CALLS")
        /// `CALLS_TOTAL`: every call of a run, whatever its outcome.
        package static let callsTotal = Name(constant: "CALLS_TOTAL")
        /// `JOURNAL_ENTRIES`: call entries (`call-finished`, `calls-ended`) a run wrote.
        package static let journalEntries = Name(constant: "JOURNAL_ENTRIES")
        /// `JOURNAL_DROPPED`: entries that could not be journaled (the journal was not keeping up).
        package static let journalDropped = Name(constant: "JOURNAL_DROPPED")
        /// `SESSIONS_REGISTERED`: registrations in a summary's interval.
        package static let sessionsRegistered = Name(constant: "SESSIONS_REGISTERED")
        /// `SESSIONS_UNREGISTERED`: sessions forgotten without being ended in a summary's interval.
        package static let sessionsUnregistered = Name(constant: "SESSIONS_UNREGISTERED")
        /// `NOTIFY_STATE`: an `sd_notify` message that could not be delivered.
        package static let notifyState = Name(constant: "NOTIFY_STATE")
        /// `TOKEN_ORIGIN`: the origin (scheme, host, port) of a `TokenURL=` a token was asked from.
        package static let tokenOrigin = Name(constant: "TOKEN_ORIGIN")
        /// `TOKEN_SCOPE`: the scope a token was asked for (`TokenScope=`).
        package static let tokenScope = Name(constant: "TOKEN_SCOPE")
        /// `CALLS_WAITING`: the calls that were waiting for an access token when its grant failed
        /// (not `CALLS=`: those of a run's call entries add up to its calls).
        package static let callsWaiting = Name(constant: "CALLS_WAITING")
        /// `VALIDITY_USEC`: how long an access token is used before a new one is asked for.
        package static let validityUsec = Name(constant: "VALIDITY_USEC")

        /// Every constant above, for the test that proves them valid.
        static let allConstants: [Name] = [
            event, budgetUsec, timeRemainingUsec, durationUsec, signal, senderPID, configFile, error,
            errno, sessionID, sessionLabel, endpoint, url, outcome, httpStatus, attempts, ownerUID,
            sessionsTotal, sessionsEnded, sessionsLeft, callsEnded, callsRejected, callsFailed,
            callsExpired, callsUnconfirmed, callsNotStarted, runKind, storeFile, peerUID, stopReason, unit, jobType,
            syncUsec,
            queryUsec, checkUsec, runID, calls, callsTotal, journalEntries, journalDropped, sessionsRegistered,
            sessionsUnregistered, notifyState, origin, limitHighest, limitFinal, latencyLowestUsec,
            latencyMedianUsec, cutsTimeout, cutsOverloaded, cutsRefused, cutsReset, cutsUnacknowledged, cutsSlow,
            tokenOrigin, tokenScope, callsWaiting, validityUsec,
        ]
    }

    /// What a field holds: text, or a session's id kept as its number until the entry is
    /// encoded (a `calls-ended` entry holds up to 500 of them; no String is made for each).
    enum Content: Sendable {
        case text(String)
        case sessionID(SessionID)
    }

    /// The field's name.
    package let name: Name
    /// What it holds.
    let content: Content

    /// The field's value (may contain newlines: the native protocol carries them).
    package var value: String {
        switch content {
        case .text(let text): return text
        case .sessionID(let id): return id.description
        }
    }

    /// Creates `name=value`.
    package init(_ name: Name, _ value: String) {
        self.name = name
        content = .text(value)
    }

    /// Creates `name=` a session's id (its 16 hexadecimal digits, as ``SessionID/description``).
    package init(_ name: Name, _ id: SessionID) {
        self.name = name
        content = .sessionID(id)
    }

    /// Equal when name and value are, whatever they hold.
    package static func == (a: JournalField, b: JournalField) -> Bool { a.name == b.name && a.value == b.value }

    /// Creates `name=value` for an integer value.
    package init<Number: BinaryInteger>(_ name: Name, _ value: Number) {
        self.init(name, String(value))
    }
}
