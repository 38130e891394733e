import Glibc

/// Numbers as people read them: counts with the right plural, durations in sensible units,
/// times relative to now and in local time. Used by the command line and `STATUS=`; the
/// protocol's JSON and the journal keep exact numbers.
package enum HumanText {
    /// `1 session`, `2 sessions`, `0 sessions`; `plural` for words that do not take an "s".
    package static func count(_ number: Int, _ singular: String, plural: String? = nil) -> String {
        "\(number) \(number == 1 ? singular : plural ?? singular + "s")"
    }

    /// A duration from microseconds: `850 µs`, `250 ms`, `2.5 s`, `25 s`, `3 min 20 s`, `2 h 5 min`,
    /// `3 d 4 h`. Precise below a minute, then the two largest units.
    package static func duration(microseconds: Int64) -> String {
        let sign = microseconds < 0 ? "-" : ""
        let us = microseconds.magnitude
        switch us {
        case ..<1_000: return "\(sign)\(us) µs"
        case ..<1_000_000: return "\(sign)\(us / 1_000) ms"
        case ..<10_000_000:
            let tenths = (us + 50_000) / 100_000
            return tenths % 10 == 0 ? "\(sign)\(tenths / 10) s" : "\(sign)\(tenths / 10).\(tenths % 10) s"
        default:
            let seconds = (us + 500_000) / 1_000_000
            return sign + wholeSeconds(seconds)
        }
    }

    /// A duration from whole seconds, as ``duration(microseconds:)`` writes it from a minute up.
    package static func duration(seconds: UInt64) -> String {
        seconds < 10 ? duration(microseconds: Int64(clamping: seconds) * 1_000_000) : wholeSeconds(seconds)
    }

    /// How long ago `epochMicroseconds` was, seen from `now`: `just now`, `42 s ago`, `3 min ago`,
    /// `5 h ago`, `2 d ago`; a time in the future reads `in 3 min`. One unit: a glance, not a sum.
    package static func relative(epochMicroseconds: UInt64, now: UInt64 = wallClockMicroseconds()) -> String {
        let future = epochMicroseconds > now
        let seconds = (future ? epochMicroseconds - now : now - epochMicroseconds) / 1_000_000
        let amount: String
        switch seconds {
        case 0: return "just now"
        case ..<60: amount = "\(seconds) s"
        case ..<3_600: amount = "\(seconds / 60) min"
        case ..<86_400: amount = "\(seconds / 3_600) h"
        default: amount = "\(seconds / 86_400) d"
        }
        return future ? "in \(amount)" : "\(amount) ago"
    }

    /// `epochMicroseconds` in the local time zone: `2025-11-30 14:02:11 CET`.
    package static func localTime(epochMicroseconds: UInt64) -> String {
        var seconds = time_t(clamping: epochMicroseconds / 1_000_000)
        var parts = tm()
        guard localtime_r(&seconds, &parts) != nil else { return "\(epochMicroseconds / 1_000_000) s after 1970" }
        var buffer = [CChar](repeating: 0, count: 64)
        let length = strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M:%S %Z", &parts)
        return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Local time and how long ago: `2025-11-30 14:02:11 CET (3 min ago)`.
    package static func moment(epochMicroseconds: UInt64, now: UInt64 = wallClockMicroseconds()) -> String {
        "\(localTime(epochMicroseconds: epochMicroseconds)) (\(relative(epochMicroseconds: epochMicroseconds, now: now)))"
    }

    private static func wholeSeconds(_ seconds: UInt64) -> String {
        func pair(_ big: UInt64, _ bigUnit: String, _ small: UInt64, _ smallUnit: String) -> String {
            small == 0 ? "\(big) \(bigUnit)" : "\(big) \(bigUnit) \(small) \(smallUnit)"
        }
        switch seconds {
        case ..<60: return "\(seconds) s"
        case ..<3_600: return pair(seconds / 60, "min", seconds % 60, "s")
        case ..<86_400: return pair(seconds / 3_600, "h", seconds % 3_600 / 60, "min")
        default: return pair(seconds / 86_400, "d", seconds % 86_400 / 3_600, "h")
        }
    }
}
