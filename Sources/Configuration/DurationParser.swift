import Basics

/// Parses durations as `systemd.time(7)` writes them: `20s`, `500ms`, `1min 30s`, `1.5h`, `2d`;
/// a bare number means seconds. Returns nil for anything else (including negatives and
/// `infinity`: every duration here must be finite).
package enum DurationParser {
    private static let units: [(names: [String], microseconds: Double)] = [
        (["usec", "us", "µs", "μs"], 1),
        (["msec", "ms"], 1_000),
        (["seconds", "second", "sec", "s", ""], 1_000_000),
        (["minutes", "minute", "min", "m"], 60_000_000),
        (["hours", "hour", "hr", "h"], 3_600_000_000),
        (["days", "day", "d"], 86_400_000_000),
        (["weeks", "week", "w"], 604_800_000_000),
    ]

    /// The duration `text` denotes, or nil.
    package static func parse(_ text: String) -> Duration? {
        var total = 0.0
        var sawTerm = false
        var rest = Substring(text.trimmingSpaces)
        while !rest.isEmpty {
            let number = rest.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
            guard !number.isEmpty, let value = Double(number) else { return nil }
            rest = rest.dropFirst(number.count).drop { $0 == " " }
            let unit = rest.prefix { $0.isLetter || $0 == "µ" || $0 == "μ" }
            rest = rest.dropFirst(unit.count).drop { $0 == " " }
            guard let scale = units.first(where: { $0.names.contains(String(unit)) })?.microseconds else { return nil }
            total += value * scale
            sawTerm = true
        }
        guard sawTerm, total.isFinite, total < 9e15 else { return nil }
        return .microseconds(Int64(total.rounded()))
    }
}

extension String {
    /// The string without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        guard let first = firstIndex(where: { !isBlank($0) }), let last = lastIndex(where: { !isBlank($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
