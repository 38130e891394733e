import Basics
import JSON
import Journal
import Sessions
import Vocabulary

/// The last stop run's ``RunRecord``, kept in the state directory beside the store (two of the
/// store's documents, mode 0600, each replaced atomically): `last-stop-run.json`, the facts
/// and counts that `status` shows, read at start; and `last-stop-run.results`, every call's
/// result, read only when `report` asks. No keys: sessions are named by id.
///
/// The results file is text, one call per line, tab-separated, after a header line:
///
///     session-cleanup-results 1 RUN_ID COUNT
///     SESSION_ID  OWNER_UID  ENDPOINT  OUTCOME  HTTP_STATUS|-  ATTEMPTS  DURATION_USEC  CAUSE
///
/// with `\\`, tab and newline written as `\\\\`, `\t` and `\n`.
enum LastStopRunDocument {
    /// The facts' document name.
    static let name = "last-stop-run.json"
    /// The results' document name.
    static let resultsName = "last-stop-run.results"

    /// The facts and counts of the last stop run, if there is a readable record.
    static func read(from store: SessionStore) -> JSONValue? {
        store.readDocument(name).flatMap { try? StrictJSON.parse($0) }
    }

    /// The whole record of the last stop run, or nil (none, unreadable, or the two documents are
    /// of different runs: a crash between the two writes).
    static func readRecord(from store: SessionStore) -> RunRecord? {
        guard case .object(let facts)? = read(from: store), let bytes = store.readDocument(resultsName) else {
            return nil
        }
        return decode(facts: facts, results: bytes)
    }

    /// Keeps `record`: results first, then the facts that name them. A failure is journaled.
    static func write(_ record: RunRecord, to store: SessionStore, journal: any JournalSink) {
        do {
            // A piece at a time: the results of a large run (~50 bytes a call) are never whole in memory.
            var pieces = ResultsPieces(record)
            try store.writeDocument(resultsName) { pieces.next(into: &$0) }
            try store.writeDocument(name, try factsText(record))
        } catch {
            journal.record(
                JournalEntry(
                    .storeWriteFailed, "The stop run's report was not saved: \(error)",
                    [JournalField(.runID, record.id.description), JournalField(.error, "\(error)")]))
        }
    }

    // MARK: Facts

    /// The facts' document: compact JSON, members sorted, slashes escaped (as earlier versions'
    /// `JSONEncoder` wrote it).
    static func factsText(_ record: RunRecord) throws(JSONWriter.UnrepresentableNumber) -> [UInt8] {
        try JSONWriter.text(of: facts(record), escapingSlashes: true)
    }

    /// The facts as `status` shows them (`last_stop_run`).
    static func facts(_ record: RunRecord) -> JSONValue {
        var object: [String: JSONValue] = [
            "run_id": .string(record.id.description),
            "kind": .string(record.kind),
            "started_at_usec": .integer(Int64(clamping: record.startedAt)),
            "finished_at_usec": .integer(Int64(clamping: record.finishedAt)),
            "budget_usec": .integer(record.budget.microseconds),
            "duration_usec": .integer(record.duration.microseconds),
            "sessions_total": .integer(Int64(record.sessionsTotal)),
            "sessions_ended": .integer(Int64(record.sessionsEnded)),
            "sessions_left": .integer(Int64(record.sessionsLeft)),
            "calls": .object(record.callCounts.mapValues { .integer(Int64($0)) }),
            "journal_entries": .integer(Int64(record.journalEntries)),
            "journal_dropped": .integer(Int64(record.journalDropped)),
            "results_kept": .integer(Int64(record.results.count)),
            "results_omitted": .integer(Int64(record.resultsOmitted)),
        ]
        if let expiry = record.expiry { object["expired"] = .string(expiry) }
        return .object(object)
    }

    static func decode(facts: [String: JSONValue], results bytes: [UInt8]) -> RunRecord? {
        func integer(_ name: String) -> Int64? {
            if case .integer(let value)? = facts[name] { return value }
            return nil
        }
        guard case .string(let idText)? = facts["run_id"], let id = RunID(validating: idText),
            case .string(let kind)? = facts["kind"], case .object(let calls)? = facts["calls"],
            let startedAt = integer("started_at_usec"), let finishedAt = integer("finished_at_usec"),
            let budget = integer("budget_usec"), let duration = integer("duration_usec"),
            let total = integer("sessions_total"), let ended = integer("sessions_ended"),
            let left = integer("sessions_left"), let results = decodeResults(bytes, runID: id)
        else { return nil }
        var counts: [String: Int] = [:]
        for (word, value) in calls {
            guard case .integer(let count) = value else { return nil }
            counts[word] = Int(count)
        }
        var expiry: String?
        if case .string(let text)? = facts["expired"] { expiry = text }
        return RunRecord(
            id: id, kind: kind, startedAt: UInt64(clamping: startedAt), finishedAt: UInt64(clamping: finishedAt),
            budget: .microseconds(budget), duration: .microseconds(duration), expiry: expiry,
            sessionsTotal: Int(total), sessionsEnded: Int(ended), sessionsLeft: Int(left), callCounts: counts,
            journalEntries: Int(integer("journal_entries") ?? 0), journalDropped: Int(integer("journal_dropped") ?? 0),
            results: results, resultsOmitted: Int(integer("results_omitted") ?? 0))
    }

    // MARK: Results

    /// The whole results file (tests, small records); ``write(_:to:journal:)`` writes it in pieces.
    static func encodeResults(_ record: RunRecord) -> [UInt8] {
        var pieces = ResultsPieces(record)
        var all: [UInt8] = []
        var piece: [UInt8] = []
        while pieces.next(into: &piece) { all += piece }
        return all
    }

    /// The results file a piece of ``ResultsPieces/linesPerPiece`` lines at a time.
    struct ResultsPieces {
        static let linesPerPiece = 1024
        private let record: RunRecord
        private var headerWritten = false
        private var line = 0

        init(_ record: RunRecord) { self.record = record }

        /// Replaces `piece` with the next piece; false once the whole file was given.
        mutating func next(into piece: inout [UInt8]) -> Bool {
            if !headerWritten {
                headerWritten = true
                piece = Array("session-cleanup-results 1 \(record.id) \(record.results.count)\n".utf8)
                return true
            }
            let results = record.results
            guard line < results.count else { return false }
            let lines = line..<min(results.count, line + Self.linesPerPiece)
            line = lines.upperBound
            // Written through a pointer into an array sized once for the most every line can take
            // (fields are at most 20 digits, escaped text at most twice its bytes): a stop run writes
            // one line per call, and appending byte by byte would check the array's uniqueness and
            // capacity for every byte.
            var bound = 0
            for call in results[lines] {
                bound +=
                    128 + 2 * call.endpoint.utf8.count + 2
                    * (call.outcome.isEnded ? 0 : call.outcome.cause?.utf8.count ?? 0)
            }
            piece = [UInt8](unsafeUninitializedCapacity: bound) { buffer, written in
                var out = LineWriter(buffer)
                for call in results[lines] { out.line(call) }
                written = out.count
            }
            return true
        }
    }

    static func decodeResults(_ bytes: [UInt8], runID: RunID) -> [RunReport.CallResult]? {
        var lines = bytes.split(separator: newline, omittingEmptySubsequences: false)
        guard lines.last?.isEmpty == true else { return nil }  // cut short
        lines.removeLast()
        guard let header = lines.first else { return nil }
        let words = header.split(separator: UInt8(ascii: " ")).map { String(decoding: $0, as: UTF8.self) }
        guard words.count == 4, words[0] == "session-cleanup-results", words[1] == "1", words[2] == runID.description,
            Int(words[3]) == lines.count - 1
        else { return nil }
        var results: [RunReport.CallResult] = []
        results.reserveCapacity(lines.count - 1)
        var shapes = CallShapes()
        for line in lines.dropFirst() {
            let columns = line.split(separator: tab, omittingEmptySubsequences: false)
            guard columns.count == 8,
                let id = SessionID(validating: String(decoding: columns[0], as: UTF8.self)),
                let uid = UInt32(String(decoding: columns[1], as: UTF8.self)),
                let attempts = Int(String(decoding: columns[5], as: UTF8.self)),
                let duration = Int64(String(decoding: columns[6], as: UTF8.self)),
                let outcome = outcome(
                    String(decoding: columns[3], as: UTF8.self), status: String(decoding: columns[4], as: UTF8.self),
                    cause: unescaped(columns[7]))
            else { return nil }
            results.append(
                RunReport.CallResult(
                    sessionID: id, ownerUID: uid,
                    shape: shapes.shape(unescaped(columns[2]), outcome, attempts: attempts),
                    duration: .microseconds(duration)))
        }
        return results
    }

    private static func outcome(_ word: String, status text: String, cause: String) -> CallOutcome? {
        let status = Int(text)
        switch word {
        case "ended": return status.map { .ended(status: $0) }
        case "rejected": return status.map { .rejected(status: $0, reason: cause) }
        case "failed": return .failed(cause: cause)
        case "expired": return .expired
        case "not-started": return .notStarted(reason: cause)
        default: return nil
        }
    }

    private static let tab = UInt8(ascii: "\t")
    private static let newline = UInt8(ascii: "\n")
    private static let backslash = UInt8(ascii: "\\")

    private static func unescaped(_ bytes: ArraySlice<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var escaped = false
        for byte in bytes {
            if escaped {
                out.append(byte == UInt8(ascii: "t") ? tab : byte == UInt8(ascii: "n") ? newline : byte)
                escaped = false
            } else if byte == backslash {
                escaped = true
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Writes the results file into space its caller sized for it.
private struct LineWriter {
    private let base: UnsafeMutableBufferPointer<UInt8>
    /// Bytes written.
    private(set) var count = 0

    init(_ base: UnsafeMutableBufferPointer<UInt8>) { self.base = base }

    /// One call's line.
    mutating func line(_ call: RunReport.CallResult) {
        let tab = UInt8(ascii: "\t")
        hex(call.sessionID.rawValue)
        byte(tab)
        decimal(Int64(call.ownerUID))
        byte(tab)
        escaped(call.endpoint)
        byte(tab)
        escaped(call.outcome.word)
        byte(tab)
        if let status = call.outcome.httpStatus {
            decimal(Int64(status))
        } else {
            byte(UInt8(ascii: "-"))
        }
        byte(tab)
        decimal(Int64(call.attempts))
        byte(tab)
        decimal(call.durationMicroseconds)
        byte(tab)
        if !call.outcome.isEnded { escaped(call.outcome.cause ?? "") }
        byte(UInt8(ascii: "\n"))
    }

    mutating func byte(_ value: UInt8) {
        precondition(count < base.count, "results file longer than the space sized for it")
        base[count] = value
        count += 1
    }

    /// `text` as it is.
    mutating func raw(_ text: String) {
        for value in text.utf8 { byte(value) }
    }

    /// 16 lowercase hexadecimal digits, as ``SessionID/description`` spells them.
    @inline(__always) mutating func hex(_ value: UInt64) {
        for shift in stride(from: 60, through: 0, by: -4) {
            let nibble = UInt8(truncatingIfNeeded: (value >> UInt64(shift)) & 0xF)
            byte(nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &+ (nibble &- 10))
        }
    }

    mutating func decimal(_ value: Int64) {
        if value < 0 { byte(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        guard magnitude < 10_000_000_000_000_000 else {
            for digit in String(magnitude).utf8 { byte(digit) }
            return
        }
        // Up to 16 digits, 4 bits each, the most significant ending up lowest.
        var packed: UInt64 = 0
        var digitCount = 0
        repeat {
            packed = packed << 4 | magnitude % 10
            digitCount += 1
            magnitude /= 10
        } while magnitude > 0
        for _ in 0..<digitCount {
            byte(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: packed & 0xF))
            packed >>= 4
        }
    }

    /// `text` with backslash, tab and newline escaped (`\\`, `\t`, `\n`).
    mutating func escaped(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            for value in utf8 {
                switch value {
                case UInt8(ascii: "\\"):
                    byte(value)
                    byte(value)
                case UInt8(ascii: "\t"):
                    byte(UInt8(ascii: "\\"))
                    byte(UInt8(ascii: "t"))
                case UInt8(ascii: "\n"):
                    byte(UInt8(ascii: "\\"))
                    byte(UInt8(ascii: "n"))
                default:
                    byte(value)
                }
            }
        }
    }
}
