import Sessions
import Vocabulary

/// Every call's result of the last stop run (`last-stop-run.results`), read only when `report`
/// asks. Text, one call per line, tab-separated, after a header line:
///
///     session-cleanup-results 1 RUN_ID COUNT
///     SESSION_ID  OWNER_UID  ENDPOINT  OUTCOME  HTTP_STATUS|-  ATTEMPTS  DURATION_USEC  CAUSE
///
/// with `\\`, tab and newline written as `\\\\`, `\t` and `\n`; `CAUSE` is empty for an ended
/// call. The header's `RUN_ID` must be the one ``LastStopRunFacts`` name, and `COUNT` the lines
/// that follow: a file cut short or of another run does not read.
enum LastStopRunResults {
    /// The document's name in the state directory.
    static let name = "last-stop-run.results"

    /// Writes `record`'s results to the store, a piece at a time: the results of a large run
    /// (~50 bytes a call) are never whole in memory.
    static func write(_ record: RunRecord, to store: SessionStore) throws {
        var pieces = Pieces(record)
        try store.writeDocument(name) { pieces.next(into: &$0) }
    }

    /// The whole file (tests, small records); ``write(_:to:)`` writes it in pieces.
    static func encode(_ record: RunRecord) -> [UInt8] {
        var pieces = Pieces(record)
        var all: [UInt8] = []
        var piece: [UInt8] = []
        while pieces.next(into: &piece) { all += piece }
        return all
    }

    /// The file a piece of ``linesPerPiece`` lines at a time.
    struct Pieces {
        /// Lines per piece after the header.
        static let linesPerPiece = 1024
        private let record: RunRecord
        private var headerWritten = false
        private var line = 0

        /// The pieces of `record`'s results file.
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
                var out = ResultsLineWriter(buffer)
                for call in results[lines] { out.line(call) }
                written = out.count
            }
            return true
        }
    }

    /// The results in `bytes`, a file whose header names run `runID`; nil when it does not, or
    /// when a line is not what ``Pieces`` writes.
    static func decode(_ bytes: [UInt8], runID: RunID) -> [RunReport.CallResult]? {
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
        case "unconfirmed": return .unconfirmed(cause: cause)
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
