#define _GNU_SOURCE
#include "csd_journal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <systemd/sd-journal.h>

static int connect_datagram(const char *path, int *out) {
    struct sockaddr_un address = { .sun_family = AF_UNIX };
    size_t length = strlen(path);
    if ((path[0] != '/' && path[0] != '@') || length < 2 || length >= sizeof address.sun_path) return -EINVAL;
    memcpy(address.sun_path, path, length);
    if (path[0] == '@') address.sun_path[0] = 0;   /* abstract namespace */
    socklen_t address_length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + length);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -errno;
    if (connect(fd, (struct sockaddr *)&address, address_length) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    *out = fd;
    return 0;
}

int csd_stderr_is_journal(void) {
    const char *e = getenv("JOURNAL_STREAM");
    if (!e) return 0;
    unsigned long long dev = 0, ino = 0;
    if (sscanf(e, "%llu:%llu", &dev, &ino) != 2) return 0;
    struct stat st;
    if (fstat(STDERR_FILENO, &st) < 0) return 0;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

int csd_journal_connect(const char *path) {
    int fd = -1;
    int r = connect_datagram(path ? path : "/run/systemd/journal/socket", &fd);
    if (r < 0) return r;
    /* Larger entries fit one datagram and more of them wait in the kernel rather than in our
     * queue; the kernel caps the value at net.core.wmem_max, which is fine. */
    int size = 8 * 1024 * 1024;
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    return fd;
}

/* The entry in a sealed memfd, passed with an empty payload (journald's rule for large entries). */
static int send_as_memfd(int fd, const void *data, size_t length) {
    int memory = memfd_create("session-cleanup-journal", MFD_ALLOW_SEALING | MFD_CLOEXEC);
    if (memory < 0) return -errno;
    const char *p = data;
    size_t left = length;
    while (left > 0) {
        ssize_t n = write(memory, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            close(memory);
            return -e;
        }
        p += n;
        left -= (size_t)n;
    }
    if (fcntl(memory, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
        int e = errno;
        close(memory);
        return -e;
    }
    union {
        struct cmsghdr header;
        char space[CMSG_SPACE(sizeof(int))];
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr message = { .msg_control = &control, .msg_controllen = sizeof control };
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &memory, sizeof(int));
    int r = 0;
    for (;;) {
        if (sendmsg(fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0) break;
        if (errno == EINTR) continue;
        r = -errno;
        break;
    }
    close(memory);
    return r;
}

int csd_journal_send(int fd, const void *data, size_t length) {
    for (;;) {
        if (send(fd, data, length, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0) return 0;
        if (errno == EINTR) continue;
        if (errno == EMSGSIZE || errno == ENOBUFS) return send_as_memfd(fd, data, length);
        return -errno;
    }
}

int csd_notify_connect(int *fd) {
    const char *path = getenv("NOTIFY_SOCKET");
    if (!path || !*path) return 0;
    int r = connect_datagram(path, fd);
    return r < 0 ? r : 1;
}

int csd_notify_send(int fd, const void *data, size_t length) {
    for (;;) {
        if (send(fd, data, length, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0) return 0;
        if (errno == EINTR) continue;
        return -errno;
    }
}

int csd_wait_writable(int fd, int timeout_ms) {
    struct pollfd p = { .fd = fd, .events = POLLOUT };
    for (;;) {
        int ready = poll(&p, 1, timeout_ms);
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) return -errno;
        if (ready == 0) return 0;
        if (p.revents & POLLOUT) return 1;
        return (p.revents & POLLNVAL) ? -EBADF : -ECONNRESET;
    }
}

int csd_journal_reader_open(void **journal) {
    sd_journal *j = NULL;
    int r = sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY);
    if (r < 0) return r;
    *journal = j;
    return 0;
}

int csd_journal_reader_has_files(void *journal) {
    sd_journal *j = journal;
    int persistent = sd_journal_has_persistent_files(j);
    int runtime = sd_journal_has_runtime_files(j);
    if (persistent < 0) return persistent;
    if (runtime < 0) return runtime;
    return persistent > 0 || runtime > 0;
}

int csd_journal_reader_match(void *journal, const char *match) {
    return sd_journal_add_match(journal, match, 0);
}

int csd_journal_reader_next(void *journal) { return sd_journal_next(journal); }

int csd_journal_reader_field(void *journal, const char *field, const void **value, size_t *length) {
    const void *data = NULL;
    size_t size = 0;
    int r = sd_journal_get_data(journal, field, &data, &size);
    if (r < 0) return r;
    size_t prefix = strlen(field) + 1;   /* "FIELD=" */
    if (size < prefix) return -EBADMSG;
    *value = (const char *)data + prefix;
    *length = size - prefix;
    return 0;
}

void csd_journal_reader_close(void *journal) { sd_journal_close(journal); }
