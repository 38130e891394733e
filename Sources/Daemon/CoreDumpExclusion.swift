import Basics
import CProcessSecrecy

/// The daemon's memory holds every stored session's key: it is kept out of core dumps and away
/// from other processes of its user (not dumpable: no core, `/proc/PID/mem` and `ptrace` for
/// root only; core size limit 0). The units say `LimitCORE=0` too, for the moments before this.
/// Root on the running host can still read the memory: nothing here protects against that.
enum CoreDumpExclusion {
    /// Applies it, before the store is opened. Neither call fails on Linux with these arguments;
    /// if one did, the start fails rather than hold keys in a dumpable process.
    static func apply() throws(SystemCallError) {
        let result = cps_keep_out_of_core_dumps()
        guard result == 0 else {
            throw SystemCallError("prctl(PR_SET_DUMPABLE, 0)/setrlimit(RLIMIT_CORE, 0)", negativeErrno: result)
        }
    }
}
