/// Counters describing the store's files and the work done since it was opened.
package struct StoreStatistics: Sendable, Equatable {
    /// The last commit sequence number known durable.
    package var sequence: UInt64 = 0
    /// The log's length up to the end of its last commit (its reserve not counted).
    package var logBytes = 0
    /// The snapshot's size.
    package var snapshotBytes = 0
    /// Commits made durable.
    package var commits = 0
    /// Commits that failed (nothing acknowledged).
    package var failedCommits = 0
    /// Records made durable by commits.
    package var recordsCommitted = 0
    /// Snapshots written by compaction (and by recovery on open).
    package var compactions = 0
    /// Full rewrites from memory after a failed sync or a deleted directory.
    package var rewrites = 0
}
