import CSystemd

/// The daemon's malloc arenas: one for the whole process.
///
/// glibc gives each thread that allocates an arena of its own (up to 8 per CPU), and an arena
/// keeps the pages it once used. The daemon's work runs on the event loop's thread; the store's
/// writer threads (Dispatch) allocate little and briefly, yet each kept its own arena: about
/// 1 MB of the 50,000-call stop run's peak RSS (measured with `MALLOC_ARENA_MAX=1`, BENCHMARKS.md,
/// "One malloc arena and 1 KiB receive buffers"). Sharing the main arena costs them an uncontended lock.
enum MallocArenas {
    /// Limits the process to the main arena. Call it before any thread starts: an arena made
    /// before stays. Should glibc refuse, the daemon runs on with more arenas: only memory.
    static func limitToOne() {
        _ = csd_malloc_use_one_arena()
    }
}
