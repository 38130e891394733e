#define _GNU_SOURCE
#include "csd_stop_keeper.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Guards `running` and `stopping` and is the condition's mutex; the rest is set before the
 * thread starts and read only by it, except the atomics. */
static pthread_mutex_t keeper_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t keeper_wake;
static int running;
static int stopping;
static pthread_t keeper_thread;
static int keeper_fd = -1;
static struct sockaddr_un keeper_address;
static socklen_t keeper_address_length;
static uint64_t keeper_end, keeper_exit_at, keeper_interval;
static char keeper_message[512];
static atomic_int keeper_status;
static atomic_uint_fast64_t keeper_sent;

static uint64_t now_usec(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

static struct timespec as_timespec(uint64_t usec) {
    struct timespec t = { .tv_sec = (time_t)(usec / 1000000u), .tv_nsec = (long)(usec % 1000000u) * 1000 };
    return t;
}

/* One datagram per send, not a connected socket: after `daemon-reexec` PID 1 binds the path
 * again, and a connected socket would be refused. A full queue drops this one; the next follows. */
static void send_extension(uint64_t now) {
    if (keeper_fd < 0 || now >= keeper_end) return;
    char text[64];
    int length = snprintf(text, sizeof text, "EXTEND_TIMEOUT_USEC=%llu", (unsigned long long)(keeper_end - now));
    if (sendto(keeper_fd, text, (size_t)length, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&keeper_address,
               keeper_address_length) >= 0)
        atomic_fetch_add(&keeper_sent, 1);
}

static void *keeper_main(void *unused) {
    (void)unused;
    pthread_mutex_lock(&keeper_lock);
    while (!stopping) {
        uint64_t now = now_usec();
        if (keeper_exit_at != 0 && now >= keeper_exit_at) {
            /* Last resort: the process outlived its budget and grace; exit before the SIGKILL. */
            ssize_t ignored = write(STDERR_FILENO, keeper_message, strlen(keeper_message));
            (void)ignored;
            _exit(atomic_load(&keeper_status));
        }
        send_extension(now);
        uint64_t wake = now + keeper_interval;
        if (keeper_exit_at != 0 && keeper_exit_at < wake) wake = keeper_exit_at;
        struct timespec until = as_timespec(wake);
        while (!stopping && pthread_cond_timedwait(&keeper_wake, &keeper_lock, &until) == EINTR) {}
    }
    pthread_mutex_unlock(&keeper_lock);
    return NULL;
}

int csd_stop_keeper_start(const char *notify_path, uint64_t end_usec, uint64_t exit_at_usec,
                          uint64_t interval_usec, int exit_status, const char *message) {
    pthread_mutex_lock(&keeper_lock);
    if (running) {
        pthread_mutex_unlock(&keeper_lock);
        return -EBUSY;
    }
    static int condition_made;
    if (!condition_made) {
        pthread_condattr_t attributes;
        pthread_condattr_init(&attributes);
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
        pthread_cond_init(&keeper_wake, &attributes);
        pthread_condattr_destroy(&attributes);
        condition_made = 1;
    }
    keeper_fd = -1;
    if (notify_path && *notify_path) {
        size_t length = strlen(notify_path);
        if ((notify_path[0] != '/' && notify_path[0] != '@') || length < 2 ||
            length >= sizeof keeper_address.sun_path) {
            pthread_mutex_unlock(&keeper_lock);
            return -EINVAL;
        }
        memset(&keeper_address, 0, sizeof keeper_address);
        keeper_address.sun_family = AF_UNIX;
        memcpy(keeper_address.sun_path, notify_path, length);
        if (notify_path[0] == '@') keeper_address.sun_path[0] = 0; /* abstract namespace */
        keeper_address_length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + length);
        keeper_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (keeper_fd < 0) {
            int e = errno;
            pthread_mutex_unlock(&keeper_lock);
            return -e;
        }
    }
    keeper_end = end_usec;
    keeper_exit_at = exit_at_usec;
    keeper_interval = interval_usec > 0 ? interval_usec : 100000;
    snprintf(keeper_message, sizeof keeper_message, "%s\n", message ? message : "");
    atomic_store(&keeper_status, exit_status);
    atomic_store(&keeper_sent, 0);
    stopping = 0;
    int r = pthread_create(&keeper_thread, NULL, keeper_main, NULL);
    if (r != 0) {
        if (keeper_fd >= 0) close(keeper_fd);
        keeper_fd = -1;
        pthread_mutex_unlock(&keeper_lock);
        return -r;
    }
    running = 1;
    pthread_mutex_unlock(&keeper_lock);
    return 0;
}

void csd_stop_keeper_set_exit_status(int exit_status) { atomic_store(&keeper_status, exit_status); }

void csd_stop_keeper_stop(void) {
    pthread_mutex_lock(&keeper_lock);
    if (!running) {
        pthread_mutex_unlock(&keeper_lock);
        return;
    }
    stopping = 1;
    pthread_cond_signal(&keeper_wake);
    pthread_mutex_unlock(&keeper_lock);
    pthread_join(keeper_thread, NULL);
    pthread_mutex_lock(&keeper_lock);
    if (keeper_fd >= 0) close(keeper_fd);
    keeper_fd = -1;
    running = 0;
    pthread_mutex_unlock(&keeper_lock);
}

uint64_t csd_stop_keeper_sent(void) { return atomic_load(&keeper_sent); }
