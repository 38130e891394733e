#ifndef CSD_STOP_KEEPER_H
#define CSD_STOP_KEEPER_H
/*
 * The stop's deadline, kept by a thread of its own so that nothing the event loop does (a store
 * settle, a journal flush, a starved CPU) can delay it:
 *
 * - systemd extends a stop timeout *from the moment* it reads EXTEND_TIMEOUT_USEC= (sd_notify(3)),
 *   and forgets the extension across `daemon-reload` and `daemon-reexec`; so the extension is
 *   sent again every interval, each time for what is left until `end_usec`;
 * - if the process still runs at `exit_at_usec`, it writes `message` to standard error and
 *   calls _exit() with the exit status set last, before systemd's SIGKILL.
 *
 * Times are CLOCK_MONOTONIC microseconds, systemd's clock for timeouts.
 */
#include <stdint.h>

/* Starts the keeper: `notify_path` is $NOTIFY_SOCKET (a path or '@abstract'; NULL or "" sends
 * nothing), `exit_at_usec` 0 never exits. One keeper per process: 0 started, -EBUSY when one
 * runs, -EINVAL for a bad address, -errno from socket() or pthread_create(). */
int csd_stop_keeper_start(const char *notify_path, uint64_t end_usec, uint64_t exit_at_usec,
                          uint64_t interval_usec, int exit_status, const char *message);

/* The status the last-resort exit uses from now on (the daemon's own, once it knows it). */
void csd_stop_keeper_set_exit_status(int exit_status);

/* Stops the keeper and waits for its thread (at most one send). Nothing when none runs. */
void csd_stop_keeper_stop(void);

/* How many EXTEND_TIMEOUT_USEC= messages the keeper has sent since it started (tests). */
uint64_t csd_stop_keeper_sent(void);

#endif
