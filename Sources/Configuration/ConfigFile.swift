/// One `Key=value` assignment as written, with where it was written.
package struct ConfigAssignment: Sendable, Equatable {
    /// The key, e.g. `BudgetSec` (ASCII letters and digits).
    package let key: String
    /// The value, trimmed; may be empty (an empty assignment resets a list, as in systemd).
    /// Never contains a control character other than a tab.
    package let value: String
    /// The file it was read from.
    package let file: String
    /// Its 1-based line.
    package let line: Int

    /// Creates an assignment.
    package init(key: String, value: String, file: String, line: Int) {
        self.key = key
        self.value = value
        self.file = file
        self.line = line
    }

    /// A problem with this assignment, at its file and line.
    package func problem(_ message: String) -> ConfigurationProblem {
        ConfigurationProblem(file: file, line: line, message)
    }
}

/// One `[Section]` and its assignments, in order.
package struct ConfigSection: Sendable, Equatable {
    /// The name between the brackets (ASCII letters and digits).
    package let name: String
    /// The file it was read from.
    package let file: String
    /// The line of its header.
    package let line: Int
    /// Its assignments, in order.
    package var assignments: [ConfigAssignment]
}

/// The syntax of systemd-style configuration files: `[Section]` headers, `Key=value` lines,
/// `#` and `;` comments, blank lines, and a trailing `\` continuing a line. Meaning is given
/// to the sections by ``ConfigurationLoader``.
///
/// Lines end in LF or CRLF (a file written on Windows reads the same). Read as bytes, not as
/// Swift `Character`s, in which `"\r\n"` is one character that no `"\n"` matches. A line with
/// any other control character (a lone CR, an escape) is a problem, so no value can smuggle a
/// line break into an HTTP header. Problems name the file and line, never the line's text.
package enum ConfigFile {
    /// Splits `bytes` (the contents of `file`, UTF-8) into sections. Every problem is appended to
    /// `problems` and its line skipped; the rest is still read, so one pass reports them all.
    package static func parse(_ bytes: [UInt8], file: String, problems: inout [ConfigurationProblem])
        -> [ConfigSection]
    {
        guard String(validating: bytes, as: UTF8.self) != nil else {
            problems.append(ConfigurationProblem(file: file, line: 0, "not valid UTF-8 text"))
            return []
        }
        func problem(_ line: Int, _ message: String) {
            problems.append(ConfigurationProblem(file: file, line: line, message))
        }
        var sections: [ConfigSection] = []
        var pending: [UInt8] = []
        var pendingLine = 0
        var continuing = false
        var number = 0
        for raw in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            number += 1
            var line = raw[...]
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            line = trimmed(line)
            if !continuing {
                if line.isEmpty || line.first == UInt8(ascii: "#") || line.first == UInt8(ascii: ";") { continue }
                pendingLine = number
            }
            if line.contains(where: isForbiddenControl) {
                problem(number, "the line contains a control character (only tabs are allowed)")
                if line.last != UInt8(ascii: "\\") {
                    pending = []
                    continuing = false
                }
                continue
            }
            if line.last == UInt8(ascii: "\\") {
                pending += line.dropLast()
                pending.append(UInt8(ascii: " "))
                continuing = true
                continue
            }
            let logical = pending + line
            pending = []
            continuing = false
            if logical.first == UInt8(ascii: "[") {
                guard logical.last == UInt8(ascii: "]"), logical.count > 2 else {
                    problem(pendingLine, "malformed section header (expected [Name])")
                    continue
                }
                let name = trimmed(logical.dropFirst().dropLast())
                guard isIdentifier(name) else {
                    problem(pendingLine, "malformed section header (a section name is letters and digits)")
                    continue
                }
                sections.append(ConfigSection(name: text(name), file: file, line: pendingLine, assignments: []))
                continue
            }
            guard let equals = logical.firstIndex(of: UInt8(ascii: "=")) else {
                problem(pendingLine, "expected Key=value or [Section]")
                continue
            }
            let key = trimmed(logical[..<equals])
            guard isIdentifier(key) else {
                problem(pendingLine, "invalid key name (a key is letters and digits, followed by '=')")
                continue
            }
            guard !sections.isEmpty else {
                problem(pendingLine, "an assignment before any [Section]")
                continue
            }
            let value = trimmed(logical[logical.index(after: equals)...])
            sections[sections.count - 1].assignments.append(
                ConfigAssignment(key: text(key), value: text(value), file: file, line: pendingLine))
        }
        if continuing { problem(pendingLine, "line continuation at end of file") }
        return sections
    }

    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        let isBlank: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
        guard let first = bytes.firstIndex(where: { !isBlank($0) }),
            let last = bytes.lastIndex(where: { !isBlank($0) })
        else { return [] }
        return bytes[first...last]
    }

    private static func trimmed(_ bytes: [UInt8]) -> ArraySlice<UInt8> { trimmed(bytes[...]) }

    private static func isForbiddenControl(_ byte: UInt8) -> Bool { (byte < 0x20 && byte != 0x09) || byte == 0x7F }

    private static func isIdentifier(_ bytes: ArraySlice<UInt8>) -> Bool {
        !bytes.isEmpty && bytes.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) }
    }

    /// Bytes already checked to be valid UTF-8 (the whole file is).
    private static func text(_ bytes: ArraySlice<UInt8>) -> String { String(decoding: bytes, as: UTF8.self) }
}
