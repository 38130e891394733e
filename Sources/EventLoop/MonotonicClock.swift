import Basics
import Glibc

/// A point on the monotonic clock, in microseconds since an arbitrary origin (boot).
package struct MonotonicInstant: Comparable, Hashable, Sendable {
    /// Microseconds since the clock's origin.
    package var microseconds: UInt64

    /// Creates an instant `microseconds` after the clock's origin.
    package init(microseconds: UInt64) { self.microseconds = microseconds }

    package static func < (a: MonotonicInstant, b: MonotonicInstant) -> Bool {
        a.microseconds < b.microseconds
    }

    /// The instant `duration` later (earlier for a negative one, never before the origin).
    package func advanced(by duration: Duration) -> MonotonicInstant {
        advanced(byMicroseconds: duration.microseconds)
    }

    /// The instant `delta` microseconds later (earlier if negative, not before the origin):
    /// `advanced(by:)` without a `Duration`, whose conversion costs more than the addition.
    package func advanced(byMicroseconds delta: Int64) -> MonotonicInstant {
        if delta >= 0 { return MonotonicInstant(microseconds: microseconds &+ UInt64(delta)) }
        let back = UInt64(-delta)
        return MonotonicInstant(microseconds: back > microseconds ? 0 : microseconds - back)
    }

    /// The time from `earlier` to `self`; negative if `earlier` is later.
    package func duration(since earlier: MonotonicInstant) -> Duration {
        .microseconds(microseconds(since: earlier))
    }

    /// Microseconds from `earlier` to `self`; negative if `earlier` is later: `duration(since:)`
    /// without a `Duration`, whose conversions cost more than the subtraction.
    package func microseconds(since earlier: MonotonicInstant) -> Int64 {
        Int64(bitPattern: microseconds &- earlier.microseconds)
    }
}

/// A source of monotonic time. The daemon uses ``SystemMonotonicClock``; tests inject their own.
package protocol MonotonicClock: AnyObject {
    /// The current instant.
    func now() -> MonotonicInstant
}

/// `CLOCK_MONOTONIC`, the clock systemd uses for timeouts.
package final class SystemMonotonicClock: MonotonicClock {
    /// Creates the clock.
    package init() {}

    /// The current `CLOCK_MONOTONIC` time.
    package func now() -> MonotonicInstant {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return MonotonicInstant(microseconds: UInt64(ts.tv_sec) * 1_000_000 + UInt64(ts.tv_nsec) / 1_000)
    }
}
