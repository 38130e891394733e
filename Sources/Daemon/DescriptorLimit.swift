import Glibc
import Journal

/// The process's open-file limit, raised as far as it may go.
enum DescriptorLimit {
    /// Raises the soft descriptor limit to the hard one (systemd's default soft limit is 1024)
    /// and journals a warning if `needed` descriptors still do not fit.
    static func raise(toFit needed: Int, maxConcurrentRequests: Int, journal: any JournalSink) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        if limit.rlim_cur < rlim_t(needed) {
            journal.record(
                JournalEntry(
                    .descriptorLimit,
                    "Only \(limit.rlim_cur) file descriptors allowed; MaxConcurrentRequests="
                        + "\(maxConcurrentRequests) (and as many idle connections kept for reuse) and the control "
                        + "socket want \(needed): raise LimitNOFILE="))
        }
    }
}
