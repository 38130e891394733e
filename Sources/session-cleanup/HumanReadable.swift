import Basics
import JSON

/// Control-protocol objects (`status`, `end`'s report) as aligned `label: value` lines for people.
///
/// Member names carry their units (docs/control-protocol.md): `*_usec` is a duration in
/// microseconds, `*_sec` one in seconds, `*_at` and `*_at_usec` a wall-clock time in microseconds
/// since the epoch. Those are shown as `25 s` and `2025-11-30 14:02:11 CET (3 min ago)`; members
/// the CLI does not know are shown too, so a newer daemon's additions are never hidden.
enum HumanReadable {
    /// Members shown first, in this order; the rest follow by name, scalars before nested ones.
    /// A run's block (`last_run`, `last_stop_run`) reads as a story: which run, when, how long
    /// against what budget, what became of the sessions, then the calls.
    static let leading = [
        "state", "progress", "version", "kind", "sessions", "run_id", "finished_at_usec", "duration_usec",
        "budget_usec", "expired", "sessions_total", "sessions_ended", "sessions_left", "calls",
    ]

    /// The record's bookkeeping, not for people (`--json` keeps it): how many results the state
    /// directory keeps, and when the run began (its end and duration say it).
    static let hidden: Set<String> = ["results_kept", "results_omitted", "started_at_usec"]

    /// `value` as lines, nested objects and lists indented under their label.
    static func lines(_ value: JSONValue, now: UInt64 = wallClockMicroseconds(), indent: String = "") -> [String] {
        switch value {
        case .object(let all):
            let members = all.filter { !hidden.contains($0.key) }
            let names = members.keys.sorted { order($0, members[$0]) < order($1, members[$1]) }
            // Values line up after the longest label of a one-line member.
            let width =
                (names.filter { scalar(members[$0] ?? .null, named: $0, now: now) != nil }.map { label($0).count }.max()
                    ?? 0) + 2
            var lines: [String] = []
            for name in names {
                let member = members[name] ?? .null
                let title = label(name) + ":"
                if let text = scalar(member, named: name, now: now) {
                    let padding = String(repeating: " ", count: max(1, width - title.count + 1))
                    lines.append(indent + title + padding + text)
                } else {
                    lines.append(indent + title)
                    lines += self.lines(member, now: now, indent: indent + "  ")
                }
            }
            return lines
        case .array(let items):
            return items.flatMap { item -> [String] in
                if let text = scalar(item, named: "", now: now) { return [indent + "- " + text] }
                let nested = lines(item, now: now, indent: indent + "  ")
                guard let first = nested.first else { return [indent + "-"] }
                return [indent + "- " + first.dropFirst(indent.count + 2)] + nested.dropFirst()
            }
        default:
            return [indent + (scalar(value, named: "", now: now) ?? "")]
        }
    }

    /// A member's name for people: `finished_at_usec` → `finished at`, `budget_usec` → `budget`.
    static func label(_ name: String) -> String {
        var base = name
        for suffix in ["_usec", "_sec"] where base.hasSuffix(suffix) && base.count > suffix.count {
            base.removeLast(suffix.count)
            break
        }
        return base.replacingText("_", with: " ")
    }

    /// A scalar (or a list of scalars) on one line, in the unit its name gives; nil for what needs several lines.
    static func scalar(_ value: JSONValue, named name: String, now: UInt64) -> String? {
        switch value {
        case .null: return "-"
        case .bool(let flag): return flag ? "yes" : "no"
        case .integer(let number):
            if name.hasSuffix("_at") || name.hasSuffix("_at_usec") {
                return number > 0 ? HumanText.moment(epochMicroseconds: UInt64(number), now: now) : "-"
            }
            if name.hasSuffix("_usec") { return HumanText.duration(microseconds: number) }
            if name.hasSuffix("_sec") { return HumanText.duration(seconds: UInt64(max(0, number))) }
            return String(number)
        case .number(let number): return String(number)
        case .string(let text): return text
        case .array(let items):
            if items.isEmpty { return "(none)" }
            let texts = items.compactMap { item -> String? in
                if case .array = item { return nil }
                return scalar(item, named: name, now: now)
            }
            return texts.count == items.count ? texts.joined(separator: ", ") : nil
        case .object(let members): return members.isEmpty ? "(none)" : nil
        }
    }

    /// Sort key: leading members, then scalars by name, then nested ones by name.
    private static func order(_ name: String, _ value: JSONValue?) -> (Int, String) {
        if let index = leading.firstIndex(of: name) { return (index, name) }
        let nested = value.map { scalar($0, named: name, now: 0) == nil } ?? false
        return (leading.count + (nested ? 1 : 0), name)
    }
}
