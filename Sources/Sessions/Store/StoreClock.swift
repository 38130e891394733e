import Glibc

/// The two clocks the store reads: wall time for the records people read, monotonic time for
/// its retry delays and for how long opening took.
enum StoreClock {
    /// Microseconds since the Unix epoch.
    static func wallMicroseconds() -> UInt64 { read(CLOCK_REALTIME) }

    /// Microseconds on `CLOCK_MONOTONIC`.
    static func monotonicMicroseconds() -> UInt64 { read(CLOCK_MONOTONIC) }

    private static func read(_ clock: clockid_t) -> UInt64 {
        var ts = timespec()
        clock_gettime(clock, &ts)
        return UInt64(ts.tv_sec) * 1_000_000 + UInt64(ts.tv_nsec) / 1_000
    }
}
