#ifndef CSD_JOURNAL_H
#define CSD_JOURNAL_H
/*
 * The journal and the service manager's notify socket, spoken without ever blocking the event
 * loop (libsystemd's sd_journal_sendv and sd_notify block while the receiver's queue is full),
 * plus a thin reader over sd-journal for `session-cleanup report`.
 * Every function returns a negative errno on failure.
 */
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- writing (native protocol) */

/* 1 when stderr is the journal stream systemd connected ($JOURNAL_STREAM matches fd 2's
 * device and inode), else 0: the daemon then writes native entries instead of stderr lines. */
int csd_stderr_is_journal(void);

/* A non-blocking, close-on-exec datagram socket connected to journald's native socket at
 * `path` (NULL: /run/systemd/journal/socket), with its send buffer raised as far as allowed.
 * Connected, so poll/epoll report it writable only when journald's queue has room.
 * The descriptor, or -errno. */
int csd_journal_connect(const char *path);

/* Sends one serialized entry as one datagram without blocking. An entry too large for a
 * datagram is passed as a sealed memfd (SCM_RIGHTS), as journald's protocol allows.
 * 0 sent, -EAGAIN when journald's queue is full (wait for writability, then retry), -errno. */
int csd_journal_send(int fd, const void *data, size_t length);

/* ------------------------------------------------------------------------- notify socket */

/* Connects a non-blocking, close-on-exec datagram socket to $NOTIFY_SOCKET (a path or an
 * abstract '@name'). 1 and *fd set; 0 when $NOTIFY_SOCKET is unset or empty; -errno (-EINVAL
 * for a malformed address). Connected, so writability means "PID 1's queue has room". */
int csd_notify_connect(int *fd);

/* Sends one notify message without blocking: 0 sent, -EAGAIN queue full, -errno
 * (-ECONNREFUSED when the receiver went away: reconnect). */
int csd_notify_send(int fd, const void *data, size_t length);

/* poll(POLLOUT) on fd for at most timeout_ms: 1 writable, 0 timed out, -errno. */
int csd_wait_writable(int fd, int timeout_ms);

/* ------------------------------------------------------------------------ reading (report) */

/* sd_journal_open(SD_JOURNAL_LOCAL_ONLY) into *journal: 0 or -errno. */
int csd_journal_reader_open(void **journal);

/* Whether any journal file could be opened (0: none readable by this user), or -errno. */
int csd_journal_reader_has_files(void *journal);

/* sd_journal_add_match for "FIELD=value": 0 or -errno. */
int csd_journal_reader_match(void *journal, const char *match);

/* Moves to the next matching entry: 1 there is one, 0 no more, -errno. */
int csd_journal_reader_next(void *journal);

/* The first value of `field` in the current entry (the bytes after "FIELD="): 0 and *value,
 * *length set; -ENOENT when the entry lacks it; -errno. Valid until the next call. */
int csd_journal_reader_field(void *journal, const char *field, const void **value, size_t *length);

/* sd_journal_close. */
void csd_journal_reader_close(void *journal);

#endif
