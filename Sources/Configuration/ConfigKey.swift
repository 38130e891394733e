/// One key of a section: its name and how its value is read into the section's settings.
/// The tables of every key are in ``ConfigurationKeys``.
struct ConfigKey<Settings>: Sendable {
    /// The key as written before `=`, e.g. `BudgetSec`.
    let name: String
    /// Reads `item`'s value into the settings, or throws the ``ConfigurationProblem`` (which
    /// does not quote it). Untyped only so that the tables' closures stay one-liners.
    let apply: @Sendable (inout Settings, ConfigAssignment) throws -> Void

    init(_ name: String, _ apply: @escaping @Sendable (inout Settings, ConfigAssignment) throws -> Void) {
        self.name = name
        self.apply = apply
    }
}

/// How values are read. Each throws a problem naming the key and what was expected; none
/// quotes the value (it may be a credential put in the wrong place).
extension ConfigAssignment {
    /// `invalid BudgetSec=: expected …`.
    func invalid(_ expected: String) -> ConfigurationProblem { problem("invalid \(key)=: expected \(expected)") }

    /// A duration (`systemd.time(7)`) of at least `minimum`.
    func duration(minimum: Duration) throws(ConfigurationProblem) -> Duration {
        guard let duration = DurationParser.parse(value), duration >= minimum else {
            throw invalid("a duration such as 20s, 500ms or 1min 30s (at least \(minimum.humanReadable))")
        }
        return duration
    }

    /// A decimal integer in `range`.
    func integer(in range: ClosedRange<Int>) throws(ConfigurationProblem) -> Int {
        guard let number = Int(value), range.contains(number) else {
            throw invalid("an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    /// One of `choices`, compared ignoring case when `ignoringCase`; returns the choice as listed.
    func choice(_ choices: [String], ignoringCase: Bool = false) throws(ConfigurationProblem) -> String {
        let found = choices.first { ignoringCase ? $0.lowercased() == value.lowercased() : $0 == value }
        guard let found else { throw invalid(Self.list(choices)) }
        return found
    }

    /// A boolean as systemd writes them: `yes`/`no`, `true`/`false`, `on`/`off`, `1`/`0` (any case).
    func boolean() throws(ConfigurationProblem) -> Bool {
        switch value.lowercased() {
        case "yes", "true", "on", "1": return true
        case "no", "false", "off", "0": return false
        default: throw invalid("yes or no")
        }
    }

    /// An absolute path, or nil for an empty value (back to the default).
    func absolutePathOrNone() throws(ConfigurationProblem) -> String? {
        if value.isEmpty { return nil }
        guard value.hasPrefix("/") else { throw invalid("an absolute path") }
        return value
    }

    /// `GET, POST, PUT or DELETE`.
    static func list(_ words: [String]) -> String {
        words.count < 2 ? words.joined() : words.dropLast().joined(separator: ", ") + " or " + (words.last ?? "")
    }
}
