#ifndef CSD_LOGIN_H
#define CSD_LOGIN_H
/*
 * A long-lived connection to logind (org.freedesktop.login1) that runs on the caller's event
 * loop: it never blocks. The caller watches csd_login_fd() for csd_login_events() until
 * csd_login_timeout(), calls csd_login_process() when either comes, and then takes what
 * happened with csd_login_next_event(). Used to hold a sleep "delay" inhibitor lock and to
 * hear PrepareForSleep. The system bus is the one sd_bus_open_system() finds
 * ($DBUS_SYSTEM_BUS_ADDRESS, else /run/dbus/system_bus_socket). Functions return a negative
 * errno on failure.
 */
#include <stddef.h>
#include <stdint.h>

struct csd_login;

/* What csd_login_next_event() reports. */
enum {
    /* PrepareForSleep: `value` 1 when the machine is about to sleep, 0 when it resumed. */
    CSD_LOGIN_PREPARE_FOR_SLEEP = 1,
    /* Inhibit answered: `fd` is the lock (close-on-exec, now the caller's to close). */
    CSD_LOGIN_INHIBITED = 2,
    /* Inhibit failed: `error` (-errno) and `text` (the step and the D-Bus error's name). */
    CSD_LOGIN_INHIBIT_FAILED = 3,
    /* InhibitDelayMaxUSec: `value` in microseconds. */
    CSD_LOGIN_DELAY_MAX = 4,
    /* Reading InhibitDelayMaxUSec failed: `error`, `text`. */
    CSD_LOGIN_DELAY_MAX_FAILED = 5,
    /* The bus refused the PrepareForSleep match: `error`, `text`. */
    CSD_LOGIN_SUBSCRIBE_FAILED = 6,
    /* The connection ended (the bus went away): `error`, `text`. Nothing more comes. */
    CSD_LOGIN_DISCONNECTED = 7,
};

/* One thing that happened on the connection. */
struct csd_login_event {
    int kind;
    int fd;
    uint64_t value;
    int error;
    char text[256];
};

/* Connects to the system bus (`address` instead when not NULL: a broker's address) and asks,
 * without waiting, to hear PrepareForSleep. Returns 0 with `*login` set, or -errno with `step`
 * naming what failed. */
int csd_login_open(const char *address, struct csd_login **login, char *step, size_t step_size);

/* Closes the connection (no flush) and every lock fd still queued in an unread event. */
void csd_login_close(struct csd_login *login);

/* The connection's descriptor, what to poll it for (POLLIN/POLLOUT bits, or -errno), and the
 * CLOCK_MONOTONIC microsecond at which csd_login_process() must run even without readiness
 * (UINT64_MAX: none). */
int csd_login_fd(struct csd_login *login);
int csd_login_events(struct csd_login *login);
uint64_t csd_login_timeout(struct csd_login *login);

/* Handles everything the connection has ready; 0, or -errno when the connection failed (a
 * CSD_LOGIN_DISCONNECTED event says so too). */
int csd_login_process(struct csd_login *login);

/* Sends Manager.Inhibit(what, who, why, mode); the answer comes as an event. 0 or -errno. */
int csd_login_inhibit(struct csd_login *login, const char *what, const char *who, const char *why,
                      const char *mode);

/* Asks for Manager's InhibitDelayMaxUSec; the answer comes as an event. 0 or -errno. */
int csd_login_ask_delay_max(struct csd_login *login);

/* Takes the oldest event: 1 with `event` filled, 0 when there is none. */
int csd_login_next_event(struct csd_login *login, struct csd_login_event *event);

#endif
