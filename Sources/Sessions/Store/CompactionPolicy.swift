/// When the store rewrites its snapshot (in the background) to keep the log short.
package struct CompactionPolicy: Sendable, Equatable {
    /// Never compact a log smaller than this.
    package var minimumLogBytes: Int
    /// Compact when the log exceeds this multiple of the snapshot size...
    package var snapshotRatio: Int
    /// ...or this absolute size.
    package var maximumLogBytes: Int
    /// After a compaction fails (a full disk, say), the next is not tried for this long.
    package var retryDelaySeconds: Double

    /// Defaults: at least 64 KiB, and more than 2× the snapshot or more than 4 MiB; 10 s after a
    /// failure.
    package init(
        minimumLogBytes: Int = 64 << 10, snapshotRatio: Int = 2, maximumLogBytes: Int = 4 << 20,
        retryDelaySeconds: Double = 10
    ) {
        self.minimumLogBytes = minimumLogBytes
        self.snapshotRatio = snapshotRatio
        self.maximumLogBytes = maximumLogBytes
        self.retryDelaySeconds = retryDelaySeconds
    }

    /// Whether a log of `logBytes` next to a snapshot of `snapshotBytes` should be compacted.
    package func shouldCompact(logBytes: Int, snapshotBytes: Int) -> Bool {
        logBytes >= minimumLogBytes
            && (logBytes > snapshotRatio.multipliedReportingOverflow(by: snapshotBytes).partialValue
                || logBytes > maximumLogBytes)
    }
}
