/// A configuration problem, naming the file and line (or the setting) it concerns.
public struct ConfigurationError: Error, CustomStringConvertible, Equatable {
    /// The file the problem is in; empty for a problem of the whole configuration.
    public let file: String
    /// The 1-based line, or 0 when the problem is not on one line.
    public let line: Int
    /// What is wrong, for people.
    public let message: String

    /// Creates an error at `file:line`.
    public init(file: String, line: Int, _ message: String) {
        self.file = file
        self.line = line
        self.message = message
    }

    /// `/etc/session-cleanup/session-cleanup.conf:12: unknown key 'Budget' in [Stop]`.
    public var description: String {
        if file.isEmpty { return message }
        return line > 0 ? "\(file):\(line): \(message)" : "\(file): \(message)"
    }
}
