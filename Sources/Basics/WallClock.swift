import Glibc

/// Wall-clock microseconds since the Unix epoch (for records meant for people, never for timeouts).
package func wallClockMicroseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return UInt64(ts.tv_sec) * 1_000_000 + UInt64(ts.tv_nsec) / 1_000
}
