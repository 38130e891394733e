#ifndef CSD_LISTEN_H
#define CSD_LISTEN_H
/*
 * Socket activation: the listening socket systemd passes (a .socket unit), per sd_listen_fds(3).
 * Returns a negative errno on failure.
 */
#include <stddef.h>

/* Takes the stream socket passed as `name` (FileDescriptorName=; when exactly one descriptor is
 * passed, its name does not matter). sd_listen_fds_with_names checks $LISTEN_PID is this process,
 * sets close-on-exec on every passed descriptor and unsets $LISTEN_PID, $LISTEN_FDS and
 * $LISTEN_FDNAMES (so nothing this process starts inherits them). Passed descriptors that are
 * not taken are closed. The one taken is made non-blocking and must be a listening AF_UNIX
 * stream socket. Returns it (>= 3); 0 when no descriptors were passed (not socket-activated);
 * -errno, with `problem` saying what was wrong (e.g. "descriptor 3 (control) is not a listening
 * AF_UNIX stream socket"). `path` receives the socket's file path ("" for an abstract socket). */
int csd_listen_socket(const char *name, char *path, size_t path_size, char *problem, size_t problem_size);

#endif
