import CSystemd
import Glibc

/// Syslog priorities, as journald's `PRIORITY=` field and sd-daemon's `<N>` prefix use them.
public enum JournalPriority: Int, Sendable, Comparable {
    case error = 3
    case warning = 4
    case notice = 5
    case info = 6
    case debug = 7

    public static func < (a: JournalPriority, b: JournalPriority) -> Bool { a.rawValue < b.rawValue }
}

/// Where journal entries go.
public protocol JournalSink: AnyObject {
    /// Records one entry.
    func record(_ entry: JournalEntry)
}

/// One entry: a message for people plus structured fields for filtering.
public struct JournalEntry: Sendable, Equatable {
    /// How important the entry is.
    public var priority: JournalPriority
    /// One line for operators: what happened, to what, and what it means.
    public var message: String
    /// Structured fields (`SESSION_CLEANUP_EVENT=`, `SESSION_ID=`, …).
    public var fields: [JournalField]

    /// Creates an entry.
    public init(_ priority: JournalPriority, _ message: String, _ fields: [JournalField] = []) {
        self.priority = priority
        self.message = message
        self.fields = fields
    }

    /// The value of the first field called `name`.
    public func value(of name: JournalField.Name) -> String? {
        fields.first { $0.name == name }?.value
    }
}

/// The journal as the daemon writes to it: native entries through `sd_journal_sendv` when
/// stderr is systemd's journal stream, otherwise readable lines on stderr with sd-daemon's
/// `<N>` priority prefix (a terminal, a container, a test).
public final class Journal: JournalSink {
    /// The identifier entries carry (`SYSLOG_IDENTIFIER=`).
    public let identifier: String
    private let native: Bool

    /// Creates the journal; `native` defaults to whether stderr is connected to journald.
    public init(identifier: String = "session-cleanup", native: Bool? = nil) {
        self.identifier = identifier
        self.native = native ?? (csd_stderr_is_journal() == 1)
    }

    /// Records `entry`; if journald refuses it, falls back to a stderr line so nothing is lost.
    public func record(_ entry: JournalEntry) {
        if native, sendNative(entry) { return }
        writeLine(entry)
    }

    private func sendNative(_ entry: JournalEntry) -> Bool {
        var texts = [
            "MESSAGE=\(entry.message)", "PRIORITY=\(entry.priority.rawValue)", "SYSLOG_IDENTIFIER=\(identifier)",
        ]
        texts.reserveCapacity(texts.count + entry.fields.count)
        for field in entry.fields { texts.append("\(field.name.rawValue)=\(field.value)") }
        // Keep every field's bytes alive while sd_journal_sendv reads them.
        let buffers = texts.map { Array($0.utf8) }
        return withIOVecs(buffers) { iovecs in
            csd_journal_sendv(iovecs.baseAddress, Int32(iovecs.count)) >= 0
        }
    }

    private func writeLine(_ entry: JournalEntry) {
        var line = "<\(entry.priority.rawValue)>\(entry.message)"
        if !entry.fields.isEmpty {
            line += " ["
            line += entry.fields.map { "\($0.name.rawValue)=\(Self.oneLine($0.value))" }.joined(separator: " ")
            line += "]"
        }
        line += "\n"
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { raw in
            guard let base = raw.baseAddress else { return }
            var offset = 0
            while offset < raw.count {
                let written = Glibc.write(STDERR_FILENO, base + offset, raw.count - offset)
                if written < 0, errno == EINTR { continue }
                if written <= 0 { return }
                offset += written
            }
        }
    }

    private static func oneLine(_ value: String) -> String {
        value.contains("\n") ? value.replacing("\n", with: "\\n") : value
    }
}

private func withIOVecs<Result>(_ buffers: [[UInt8]], _ body: (UnsafeBufferPointer<iovec>) -> Result) -> Result {
    var iovecs: [iovec] = []
    iovecs.reserveCapacity(buffers.count)
    func recurse(_ index: Int) -> Result {
        if index == buffers.count { return iovecs.withUnsafeBufferPointer(body) }
        return buffers[index].withUnsafeBytes { raw in
            iovecs.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: raw.baseAddress), iov_len: raw.count))
            return recurse(index + 1)
        }
    }
    return recurse(0)
}

/// Keeps entries in memory: for tests, each with its own instance.
public final class MemoryJournal: JournalSink {
    /// Everything recorded, in order.
    public private(set) var entries: [JournalEntry] = []

    /// Creates an empty journal.
    public init() {}

    /// Appends `entry`.
    public func record(_ entry: JournalEntry) { entries.append(entry) }

    /// Entries whose `SESSION_CLEANUP_EVENT` is `event`.
    public func entries(event: String) -> [JournalEntry] {
        entries.filter { $0.value(of: .event) == event }
    }
}
