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

    /// The duration for people, in the unit that suits it: `12 ms`, `6.2 s`, `6 min`
    /// (``HumanText/duration(microseconds:)``).
    package var humanReadable: String { HumanText.duration(microseconds: microseconds) }
}
