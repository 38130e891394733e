extension Duration {
    /// The duration in whole microseconds, truncated toward zero (clamped to `Int64`'s range).
    /// One division of the attoseconds: `components` costs about twice as much, several times
    /// per call of a run.
    package var microseconds: Int64 {
        Int64(clamping: attoseconds / 1_000_000_000_000)
    }

    /// The duration in whole milliseconds, rounded up, so a timeout never ends early.
    package var millisecondsRoundedUp: Int64 {
        let us = microseconds
        return us <= 0 ? 0 : (us + 999) / 1_000
    }

    /// Seconds with one decimal, for people: `6.2 s`.
    package var humanReadable: String {
        let tenths = (microseconds + 50_000) / 100_000
        return "\(tenths / 10).\(abs(tenths % 10)) s"
    }
}
