#define _GNU_SOURCE
#include "csystemd.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <stddef.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>

int csd_signals_open(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    int r = pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (r != 0) return -r;
    /* A peer closing a socket must give EPIPE, not end the daemon. */
    if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) return -errno;
    int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int csd_signals_read(int fd, int32_t *sender_pid) {
    struct signalfd_siginfo info;
    for (;;) {
        ssize_t n = read(fd, &info, sizeof info);
        if (n == (ssize_t)sizeof info) {
            if (sender_pid) *sender_pid = (int32_t)info.ssi_pid;
            return (int)info.ssi_signo;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return 0;
        return n < 0 ? -errno : -EIO;
    }
}

int csd_notify(const char *state, int wait_ms) {
    const char *path = getenv("NOTIFY_SOCKET");
    if (!path || !*path) return 0;
    struct sockaddr_un address = { .sun_family = AF_UNIX };
    size_t length = strlen(path);
    if ((path[0] != '/' && path[0] != '@') || length >= sizeof address.sun_path) return -EINVAL;
    memcpy(address.sun_path, path, length);
    if (path[0] == '@') address.sun_path[0] = 0;   /* abstract namespace */
    socklen_t address_length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + length);
    /* One socket for the process's life: opened on first use, non-blocking, close-on-exec. */
    static int fd = -1;
    if (fd < 0) {
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) return -errno;
    }
    for (;;) {
        ssize_t n = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&address, address_length);
        if (n >= 0) return 1;
        if (errno == EINTR) continue;
        if (errno != EAGAIN || wait_ms <= 0) return -errno;
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        int ready = poll(&p, 1, wait_ms);
        wait_ms = 0;   /* wait once; then give up */
        if (ready <= 0) return ready == 0 ? -EAGAIN : -errno;
    }
}

int csd_watchdog_enabled(uint64_t *usec) { return sd_watchdog_enabled(0, usec); }

int csd_journal_sendv(const struct iovec *fields, int count) { return sd_journal_sendv(fields, count); }

int csd_stderr_is_journal(void) {
    const char *e = getenv("JOURNAL_STREAM");
    if (!e) return 0;
    unsigned long long dev = 0, ino = 0;
    if (sscanf(e, "%llu:%llu", &dev, &ino) != 2) return 0;
    struct stat st;
    if (fstat(STDERR_FILENO, &st) < 0) return 0;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

int csd_accept_nonblocking(int fd) {
    int client = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    return client < 0 ? -errno : client;
}

int csd_peer_credentials(int fd, int32_t *pid, uint32_t *uid, uint32_t *gid) {
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) < 0) return -errno;
    if (length != sizeof credentials) return -EINVAL;
    *pid = (int32_t)credentials.pid;
    *uid = (uint32_t)credentials.uid;
    *gid = (uint32_t)credentials.gid;
    return 0;
}
