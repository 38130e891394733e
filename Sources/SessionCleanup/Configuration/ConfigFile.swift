/// One `Key=value` assignment as written, with where it was written.
public struct ConfigAssignment: Sendable, Equatable {
    /// The key, e.g. `BudgetSec`.
    public let key: String
    /// The value, trimmed; may be empty (an empty assignment resets a list, as in systemd).
    public let value: String
    /// The file it was read from.
    public let file: String
    /// Its 1-based line.
    public let line: Int
}

/// One `[Section]` and its assignments, in order.
public struct ConfigSection: Sendable, Equatable {
    /// The name between the brackets.
    public let name: String
    /// The file it was read from.
    public let file: String
    /// The line of its header.
    public let line: Int
    /// Its assignments, in order.
    public var assignments: [ConfigAssignment]
}

/// The syntax of systemd-style configuration files: `[Section]` headers, `Key=value` lines,
/// `#` and `;` comments, blank lines, and a trailing `\` continuing a line. Meaning is given
/// to the sections by ``Configuration``.
public enum ConfigFile {
    /// Splits `text` (the contents of `file`) into sections; an assignment before any section,
    /// or a line that is neither, is an error naming the line.
    public static func parse(_ text: String, file: String) throws(ConfigurationError) -> [ConfigSection] {
        var sections: [ConfigSection] = []
        var pending = ""
        var pendingLine = 0
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        for (index, raw) in lines.enumerated() {
            let number = index + 1
            var line = String(raw).trimmingSpaces
            if pending.isEmpty {
                if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
                pendingLine = number
            }
            if line.hasSuffix("\\") {
                line.removeLast()
                pending += line + " "
                continue
            }
            line = pending + line
            pending = ""
            if line.hasPrefix("[") {
                guard line.hasSuffix("]"), line.count > 2 else {
                    throw ConfigurationError(file: file, line: pendingLine, "malformed section header '\(line)'")
                }
                let name = String(line.dropFirst().dropLast()).trimmingSpaces
                sections.append(ConfigSection(name: name, file: file, line: pendingLine, assignments: []))
                continue
            }
            guard let equals = line.firstIndex(of: "=") else {
                throw ConfigurationError(
                    file: file, line: pendingLine, "expected Key=value or [Section], found '\(line)'")
            }
            let key = String(line[..<equals]).trimmingSpaces
            let value = String(line[line.index(after: equals)...]).trimmingSpaces
            guard !key.isEmpty, key.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
                throw ConfigurationError(file: file, line: pendingLine, "invalid key '\(key)'")
            }
            guard !sections.isEmpty else {
                throw ConfigurationError(file: file, line: pendingLine, "'\(key)=' appears before any [Section]")
            }
            sections[sections.count - 1].assignments.append(
                ConfigAssignment(key: key, value: value, file: file, line: pendingLine))
        }
        if !pending.isEmpty {
            throw ConfigurationError(file: file, line: pendingLine, "line continuation at end of file")
        }
        return sections
    }
}
