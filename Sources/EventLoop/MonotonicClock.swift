import Glibc

/// A point on the monotonic clock, in microseconds since an arbitrary origin (boot).
public struct MonotonicInstant: Comparable, Hashable, Sendable {
    /// Microseconds since the clock's origin.
    public var microseconds: UInt64

    /// Creates an instant `microseconds` after the clock's origin.
    public init(microseconds: UInt64) { self.microseconds = microseconds }

    public static func < (a: MonotonicInstant, b: MonotonicInstant) -> Bool {
        a.microseconds < b.microseconds
    }

    /// The instant `duration` later (earlier for a negative one, never before the origin).
    public func advanced(by duration: Duration) -> MonotonicInstant {
        advanced(byMicroseconds: duration.microseconds)
    }

    /// The instant `delta` microseconds later (earlier if negative, not before the origin):
    /// `advanced(by:)` without a `Duration`, whose conversion costs more than the addition.
    public func advanced(byMicroseconds delta: Int64) -> MonotonicInstant {
        if delta >= 0 { return MonotonicInstant(microseconds: microseconds &+ UInt64(delta)) }
        let back = UInt64(-delta)
        return MonotonicInstant(microseconds: back > microseconds ? 0 : microseconds - back)
    }

    /// The time from `earlier` to `self`; negative if `earlier` is later.
    public func duration(since earlier: MonotonicInstant) -> Duration {
        .microseconds(microseconds(since: earlier))
    }

    /// Microseconds from `earlier` to `self`; negative if `earlier` is later: `duration(since:)`
    /// without a `Duration`, whose conversions cost more than the subtraction.
    public func microseconds(since earlier: MonotonicInstant) -> Int64 {
        Int64(bitPattern: microseconds &- earlier.microseconds)
    }
}

/// A source of monotonic time. The daemon uses ``SystemMonotonicClock``; tests inject their own.
public protocol MonotonicClock: AnyObject {
    /// The current instant.
    func now() -> MonotonicInstant
}

/// `CLOCK_MONOTONIC`, the clock systemd uses for timeouts.
public final class SystemMonotonicClock: MonotonicClock {
    /// Creates the clock.
    public init() {}

    /// The current `CLOCK_MONOTONIC` time.
    public func now() -> MonotonicInstant {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return MonotonicInstant(microseconds: UInt64(ts.tv_sec) * 1_000_000 + UInt64(ts.tv_nsec) / 1_000)
    }
}

/// Wall-clock microseconds since the Unix epoch (for records meant for people, never for timeouts).
public func wallClockMicroseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return UInt64(ts.tv_sec) * 1_000_000 + UInt64(ts.tv_nsec) / 1_000
}

extension Duration {
    /// The duration in whole microseconds, truncated toward zero (clamped to `Int64`'s range).
    /// One division of the attoseconds: `components` costs about twice as much, several times
    /// per call of a run.
    public var microseconds: Int64 {
        Int64(clamping: attoseconds / 1_000_000_000_000)
    }

    /// The duration in whole milliseconds, rounded up, so a timeout never ends early.
    public var millisecondsRoundedUp: Int64 {
        let us = microseconds
        return us <= 0 ? 0 : (us + 999) / 1_000
    }

    /// Seconds with one decimal, for people: `6.2 s`.
    public var humanReadable: String {
        let tenths = (microseconds + 50_000) / 100_000
        return "\(tenths / 10).\(abs(tenths % 10)) s"
    }
}
