#ifndef PROCESS_SECRECY_H
#define PROCESS_SECRECY_H
/*
 * CProcessSecrecy: keeps the daemon's memory, which holds session keys, out of core dumps and
 * away from other processes of its user. prctl(2) is variadic, which Swift cannot call.
 */

/* Makes the process not dumpable (PR_SET_DUMPABLE 0: no core dump, /proc/PID/mem and ptrace
 * for root only) and its core size limit 0 (soft and hard). Returns 0, or -errno of the call
 * that failed. */
int cps_keep_out_of_core_dumps(void);

/* prctl(PR_GET_DUMPABLE): 1 dumpable, 0 not, -errno on failure. */
int cps_is_dumpable(void);

/* PR_SET_DUMPABLE 1, for tests: a test process that already ran the daemon in-process is not
 * dumpable any more, and its child must start dumpable for the check to mean anything. */
int cps_make_dumpable(void);

#endif
