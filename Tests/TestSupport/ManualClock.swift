import EventLoop

/// A clock tests move by hand.
final class ManualClock: MonotonicClock {
    private var current = MonotonicInstant(microseconds: 1_000_000_000)
    func now() -> MonotonicInstant { current }
    func advance(_ duration: Duration) { current = current.advanced(by: duration) }
}
