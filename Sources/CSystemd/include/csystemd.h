#ifndef CSYSTEMD_H
#define CSYSTEMD_H
/*
 * CSystemd: the only code in session-cleanup that touches libsystemd and signal masks (plus
 * two socket calls Swift's Glibc module lacks). The journal and notify sockets are in csd_journal.h.
 * Every function returns a negative errno on failure (systemd's convention) so the Swift
 * side can name the cause; nothing here logs or allocates on behalf of the caller.
 */
#include <stdint.h>
#include <sys/types.h>
/* Linux APIs the event loop needs that Swift's Glibc module does not export. */
#include <sys/epoll.h>

/* Blocks SIGTERM, SIGINT, SIGHUP and SIGUSR1 in the calling thread (and so in every thread it creates
 * later), ignores SIGPIPE, and returns a non-blocking, close-on-exec signalfd that reports
 * those four signals; or -errno. Call first thing in a synchronous main, before any thread
 * exists: a thread created earlier keeps the signals unblocked and one of them could kill
 * the process. Never called from a library constructor (it would affect test binaries). */
int csd_signals_open(void);

/* Reads one pending signal from fd: returns its number (> 0) and stores the sender's pid,
 * 0 when none is pending, or -errno. */
int csd_signals_read(int fd, int32_t *sender_pid);

/* sd_watchdog_enabled(0, ...): > 0 and *usec set when WatchdogSec= applies to this process,
 * 0 when disabled, -errno when $WATCHDOG_USEC is malformed. */
int csd_watchdog_enabled(uint64_t *usec);

/* Two socket calls glibc declares only under _GNU_SOURCE, which Swift's Glibc module is built
 * without, so they are wrapped here (this file is compiled with _GNU_SOURCE). */

/* accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC): the new descriptor, or -errno. */
int csd_accept_nonblocking(int fd);

/* getsockopt(SO_PEERCRED) on a connected Unix socket: stores the peer's pid, uid and gid as
 * they were when it connected; 0 or -errno. */
int csd_peer_credentials(int fd, int32_t *pid, uint32_t *uid, uint32_t *gid);

#endif
