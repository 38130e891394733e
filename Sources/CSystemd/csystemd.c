#define _GNU_SOURCE
#include "csystemd.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

int csd_signals_open(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1); /* the units' RestartKillSignal=: a restart, told without D-Bus */
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

int csd_watchdog_enabled(uint64_t *usec) { return sd_watchdog_enabled(0, usec); }

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
