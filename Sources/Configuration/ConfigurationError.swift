/// One configuration problem, naming the file and line (or the setting) it concerns. Its
/// message never quotes the file's text: values, unknown keys and malformed lines may hold a
/// credential (or be the first line of a file that is not a configuration at all).
package struct ConfigurationProblem: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file the problem is in; empty for a problem of the whole configuration.
    package let file: String
    /// The 1-based line, or 0 when the problem is not on one line.
    package let line: Int
    /// What is wrong, for people.
    package let message: String

    /// Creates a problem at `file:line`.
    package init(file: String, line: Int, _ message: String) {
        self.file = file
        self.line = line
        self.message = message
    }

    /// `/etc/session-cleanup/session-cleanup.conf:12: unknown key in [Stop] (did you mean BudgetSec=?)`.
    package var description: String {
        if file.isEmpty { return message }
        return line > 0 ? "\(file):\(line): \(message)" : "\(file): \(message)"
    }
}

/// A configuration that cannot be used: every problem found in every file, in file and line
/// order (loading does not stop at the first).
package struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The problems; never empty.
    package let problems: [ConfigurationProblem]

    /// An error of `problems` (at least one).
    package init(_ problems: [ConfigurationProblem]) {
        self.problems = problems.isEmpty ? [ConfigurationProblem(file: "", line: 0, "invalid configuration")] : problems
    }

    /// An error of one problem at `file:line`.
    package init(file: String, line: Int, _ message: String) {
        self.init([ConfigurationProblem(file: file, line: line, message)])
    }

    /// The file of the first problem (for a journal field).
    package var file: String { problems[0].file }

    /// Every problem, one per line.
    package var description: String { problems.map(\.description).joined(separator: "\n") }

    /// One line for `STATUS=`: the first problem, and how many more there are.
    package var summary: String {
        let first = problems[0].description
        return problems.count == 1 ? first : "\(first) (and \(problems.count - 1) more)"
    }
}
