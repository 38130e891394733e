#define _GNU_SOURCE
#include "csd_login.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <systemd/sd-bus.h>

#define LOGIN_SERVICE "org.freedesktop.login1"
#define LOGIN_PATH "/org/freedesktop/login1"
#define LOGIN_MANAGER "org.freedesktop.login1.Manager"

/* Events not taken yet; far more than one turn of the loop produces. */
#define QUEUE_SIZE 32

struct csd_login {
    sd_bus *bus;
    sd_bus_slot *match;
    struct csd_login_event queue[QUEUE_SIZE];
    size_t first, count;
    int disconnected;
};

/* Queues an event; when the queue is full the event is dropped (and a lock fd in it closed). */
static void push(struct csd_login *login, int kind, int fd, uint64_t value, int error, const char *format, ...) {
    if (login->count == QUEUE_SIZE) {
        if (fd >= 0) close(fd);
        return;
    }
    struct csd_login_event *event = &login->queue[(login->first + login->count) % QUEUE_SIZE];
    login->count++;
    memset(event, 0, sizeof *event);
    event->kind = kind;
    event->fd = fd;
    event->value = value;
    event->error = error;
    if (format) {
        va_list arguments;
        va_start(arguments, format);
        vsnprintf(event->text, sizeof event->text, format, arguments);
        va_end(arguments);
    }
}

/* A method error as an event of `kind`; 1 if `reply` is one. */
static int pushed_error(struct csd_login *login, sd_bus_message *reply, int kind, const char *what) {
    if (!sd_bus_message_is_method_error(reply, NULL)) return 0;
    const sd_bus_error *error = sd_bus_message_get_error(reply);
    int errno_value = sd_bus_message_get_errno(reply);
    push(login, kind, -1, 0, errno_value > 0 ? -errno_value : -EIO, "%s: %s%s%s", what,
         error && error->name ? error->name : "error", error && error->message ? ": " : "",
         error && error->message ? error->message : "");
    return 1;
}

static int on_prepare_for_sleep(sd_bus_message *message, void *userdata, sd_bus_error *unused) {
    (void)unused;
    struct csd_login *login = userdata;
    int active = 0;
    int r = sd_bus_message_read(message, "b", &active);
    if (r >= 0) push(login, CSD_LOGIN_PREPARE_FOR_SLEEP, -1, active ? 1 : 0, 0, NULL);
    return 0;
}

static int on_match_installed(sd_bus_message *reply, void *userdata, sd_bus_error *unused) {
    (void)unused;
    pushed_error(userdata, reply, CSD_LOGIN_SUBSCRIBE_FAILED, "AddMatch(PrepareForSleep)");
    return 0;
}

static int on_inhibit(sd_bus_message *reply, void *userdata, sd_bus_error *unused) {
    (void)unused;
    struct csd_login *login = userdata;
    if (pushed_error(login, reply, CSD_LOGIN_INHIBIT_FAILED, "Manager.Inhibit")) return 0;
    int fd = -1;
    int r = sd_bus_message_read(reply, "h", &fd);
    if (r < 0) {
        push(login, CSD_LOGIN_INHIBIT_FAILED, -1, 0, r, "Manager.Inhibit: unexpected reply (%s)", strerror(-r));
        return 0;
    }
    /* The message owns its fd: keep a copy of our own, away from 0-2. */
    int own = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (own < 0) push(login, CSD_LOGIN_INHIBIT_FAILED, -1, 0, -errno, "Manager.Inhibit: dup of the lock fd: %s", strerror(errno));
    else push(login, CSD_LOGIN_INHIBITED, own, 0, 0, NULL);
    return 0;
}

static int on_delay_max(sd_bus_message *reply, void *userdata, sd_bus_error *unused) {
    (void)unused;
    struct csd_login *login = userdata;
    if (pushed_error(login, reply, CSD_LOGIN_DELAY_MAX_FAILED, "Manager.InhibitDelayMaxUSec")) return 0;
    uint64_t usec = 0;
    int r = sd_bus_message_read(reply, "v", "t", &usec);
    if (r < 0)
        push(login, CSD_LOGIN_DELAY_MAX_FAILED, -1, 0, r, "Manager.InhibitDelayMaxUSec: unexpected reply (%s)",
             strerror(-r));
    else push(login, CSD_LOGIN_DELAY_MAX, -1, usec, 0, NULL);
    return 0;
}

static void set_step(char *step, size_t size, const char *text) {
    if (size > 0) snprintf(step, size, "%s", text);
}

int csd_login_open(const char *address, struct csd_login **result, char *step, size_t step_size) {
    set_step(step, step_size, "");
    struct csd_login *login = calloc(1, sizeof *login);
    if (!login) return -ENOMEM;
    int r;
    if (address) {
        r = sd_bus_new(&login->bus);
        if (r >= 0) r = sd_bus_set_address(login->bus, address);
        if (r >= 0) r = sd_bus_set_bus_client(login->bus, 1);
        if (r >= 0) r = sd_bus_negotiate_fds(login->bus, 1);
        if (r >= 0) r = sd_bus_start(login->bus);
    } else {
        r = sd_bus_open_system(&login->bus);
    }
    if (r < 0) {
        set_step(step, step_size, "connect to the system bus");
        sd_bus_unref(login->bus);
        free(login);
        return r;
    }
    r = sd_bus_match_signal_async(login->bus, &login->match, LOGIN_SERVICE, LOGIN_PATH, LOGIN_MANAGER,
                                  "PrepareForSleep", on_prepare_for_sleep, on_match_installed, login);
    if (r < 0) {
        set_step(step, step_size, "AddMatch(PrepareForSleep): cannot send");
        sd_bus_close_unref(login->bus);
        free(login);
        return r;
    }
    *result = login;
    return 0;
}

void csd_login_close(struct csd_login *login) {
    if (!login) return;
    sd_bus_slot_unref(login->match);
    sd_bus_close_unref(login->bus);
    for (size_t i = 0; i < login->count; i++) {
        struct csd_login_event *event = &login->queue[(login->first + i) % QUEUE_SIZE];
        if (event->fd >= 0) close(event->fd);
    }
    free(login);
}

int csd_login_fd(struct csd_login *login) { return sd_bus_get_fd(login->bus); }

int csd_login_events(struct csd_login *login) { return sd_bus_get_events(login->bus); }

uint64_t csd_login_timeout(struct csd_login *login) {
    uint64_t usec = UINT64_MAX;
    if (sd_bus_get_timeout(login->bus, &usec) < 0) return UINT64_MAX;
    return usec;
}

int csd_login_process(struct csd_login *login) {
    if (login->disconnected) return -ENOTCONN;
    for (;;) {
        int r = sd_bus_process(login->bus, NULL);
        if (r < 0) {
            login->disconnected = 1;
            push(login, CSD_LOGIN_DISCONNECTED, -1, 0, r, "D-Bus connection: %s", strerror(-r));
            return r;
        }
        if (r == 0) break;
    }
    if (!sd_bus_is_open(login->bus)) {
        login->disconnected = 1;
        push(login, CSD_LOGIN_DISCONNECTED, -1, 0, -ECONNRESET, "D-Bus connection: closed by the bus");
        return -ECONNRESET;
    }
    return 0;
}

int csd_login_inhibit(struct csd_login *login, const char *what, const char *who, const char *why,
                      const char *mode) {
    return sd_bus_call_method_async(login->bus, NULL, LOGIN_SERVICE, LOGIN_PATH, LOGIN_MANAGER, "Inhibit", on_inhibit,
                                    login, "ssss", what, who, why, mode);
}

int csd_login_ask_delay_max(struct csd_login *login) {
    return sd_bus_call_method_async(login->bus, NULL, LOGIN_SERVICE, LOGIN_PATH, "org.freedesktop.DBus.Properties",
                                    "Get", on_delay_max, login, "ss", LOGIN_MANAGER, "InhibitDelayMaxUSec");
}

int csd_login_next_event(struct csd_login *login, struct csd_login_event *event) {
    if (login->count == 0) return 0;
    *event = login->queue[login->first];
    login->first = (login->first + 1) % QUEUE_SIZE;
    login->count--;
    return 1;
}
