#define _GNU_SOURCE
#include "csd_manager.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-login.h>

#define MANAGER_SERVICE "org.freedesktop.systemd1"
#define MANAGER_PATH "/org/freedesktop/systemd1"
#define PROPERTIES_INTERFACE "org.freedesktop.DBus.Properties"

static int copy_unit(const char *name, size_t length, char *unit, size_t unit_size) {
    if (length >= unit_size) return -ENAMETOOLONG;
    memcpy(unit, name, length);
    unit[length] = 0;
    return 0;
}

static int has_suffix(const char *text, size_t length, const char *suffix) {
    size_t n = strlen(suffix);
    return length > n && memcmp(text + length - n, suffix, n) == 0;
}

/* The same answer from /proc/self/cgroup directly: the last .service or .scope component of
 * the systemd hierarchy's path, and a user manager when a user@UID.service component precedes
 * it. Needed under ProtectProc=invisible, where sd_pid_get_unit fails (-ESRCH): it reads PID 1's
 * cgroup, which the sandbox hides from a non-root service. */
static int unit_from_own_cgroup(char *unit, size_t unit_size) {
    FILE *file = fopen("/proc/self/cgroup", "re");
    if (!file) return -errno;
    char line[4096], path[4096] = "";
    while (fgets(line, sizeof line, file)) {
        line[strcspn(line, "\n")] = 0;
        if (strncmp(line, "0::", 3) == 0 && path[0] == 0) snprintf(path, sizeof path, "%s", line + 3);
        const char *named = strstr(line, ":name=systemd:");
        if (named) snprintf(path, sizeof path, "%s", named + strlen(":name=systemd:"));   /* preferred */
    }
    fclose(file);
    const char *best = NULL;
    size_t best_length = 0;
    int manager = CSD_MANAGER_SYSTEM, in_user_manager = 0;
    for (const char *c = path; *c;) {
        while (*c == '/') c++;
        size_t length = strcspn(c, "/");
        if (length == 0) break;
        if (strncmp(c, "user@", 5) == 0 && has_suffix(c, length, ".service")) {
            in_user_manager = 1;   /* units below it are the user manager's */
        } else if (has_suffix(c, length, ".service") || has_suffix(c, length, ".scope")) {
            best = c;
            best_length = length;
            manager = in_user_manager ? CSD_MANAGER_USER : CSD_MANAGER_SYSTEM;
        }
        c += length;
    }
    if (!best) return -ENODATA;
    int r = copy_unit(best, best_length, unit, unit_size);
    return r < 0 ? r : manager;
}

int csd_own_unit(char *unit, size_t unit_size) {
    char *name = NULL;
    int manager = CSD_MANAGER_USER;
    int r = sd_pid_get_user_unit(0, &name);
    if (r < 0) {
        manager = CSD_MANAGER_SYSTEM;
        r = sd_pid_get_unit(0, &name);
    }
    if (r == -ESRCH || r == -EACCES || r == -EPERM) return unit_from_own_cgroup(unit, unit_size);
    if (r < 0) return r;
    r = copy_unit(name, strlen(name), unit, unit_size);
    free(name);
    return r < 0 ? r : manager;
}

/* The state of one query: calls still awaited, the first failure, and where answers go. */
struct query {
    sd_bus *bus;
    int pending;
    int error;
    char *step;
    size_t step_size;
    struct csd_manager_answer *answer;
    struct csd_unit_states *states;
};

static uint64_t monotonic_usec(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u;
}

static void fail(struct query *q, int error, const char *format, ...) {
    if (q->error != 0) return;   /* the first failure is the cause */
    q->error = error < 0 ? error : -EIO;
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(q->step, q->step_size, format, arguments);
    va_end(arguments);
}

/* A method error as the step's text and errno; 1 if `reply` is one. */
static int failed_reply(struct query *q, sd_bus_message *reply, const char *what) {
    if (!sd_bus_message_is_method_error(reply, NULL)) return 0;
    const sd_bus_error *error = sd_bus_message_get_error(reply);
    int errno_value = sd_bus_message_get_errno(reply);
    /* sd-bus answers NoReply (ETIMEDOUT) for calls cut off by a closed connection; its own call
     * timeout (25 s) is far beyond our deadline, so this is a hang-up, not a timeout. */
    if (sd_bus_message_is_method_error(reply, SD_BUS_ERROR_NO_REPLY)) errno_value = ECONNRESET;
    fail(q, errno_value > 0 ? -errno_value : -EIO, "%s: %s", what, error && error->name ? error->name : "error");
    return 1;
}

static void copy_string(char *target, size_t size, const char *value) {
    snprintf(target, size, "%s", value ? value : "");
}

static int on_job_type(sd_bus_message *reply, void *userdata, sd_bus_error *unused) {
    (void)unused;
    struct query *q = userdata;
    q->pending--;
    if (failed_reply(q, reply, "Job.JobType")) return 0;
    const char *type = NULL;
    int r = sd_bus_message_read(reply, "v", "s", &type);
    if (r < 0) fail(q, r, "Job.JobType: unexpected reply");
    else copy_string(q->answer->job_type, sizeof q->answer->job_type, type);
    return 0;
}

static int on_job(sd_bus_message *reply, void *userdata, sd_bus_error *unused) {
    (void)unused;
    struct query *q = userdata;
    q->pending--;
    if (failed_reply(q, reply, "Unit.Job")) return 0;
    uint32_t id = 0;
    const char *path = NULL;
    int r = sd_bus_message_read(reply, "v", "(uo)", &id, &path);
    if (r < 0) {
        fail(q, r, "Unit.Job: unexpected reply");
        return 0;
    }
    q->answer->job_id = id;
    if (id == 0) return 0;   /* no job: nothing more to ask */
    r = sd_bus_call_method_async(q->bus, NULL, MANAGER_SERVICE, path, PROPERTIES_INTERFACE, "Get", on_job_type, q,
                                 "ss", "org.freedesktop.systemd1.Job", "JobType");
    if (r < 0) fail(q, r, "Job.JobType: cannot send");
    else q->pending++;
    return 0;
}

static int on_system_state(sd_bus_message *reply, void *userdata, sd_bus_error *unused) {
    (void)unused;
    struct query *q = userdata;
    q->pending--;
    if (failed_reply(q, reply, "Manager.SystemState")) return 0;
    const char *state = NULL;
    int r = sd_bus_message_read(reply, "v", "s", &state);
    if (r < 0) fail(q, r, "Manager.SystemState: unexpected reply");
    else copy_string(q->answer->system_state, sizeof q->answer->system_state, state);
    return 0;
}

static int open_at(const char *address, int is_broker, sd_bus **bus) {
    sd_bus *b = NULL;
    int r = sd_bus_new(&b);
    if (r < 0) return r;
    r = sd_bus_set_address(b, address);
    if (r >= 0) r = sd_bus_set_bus_client(b, is_broker);
    if (r >= 0) r = sd_bus_start(b);
    if (r < 0) {
        sd_bus_unref(b);
        return r;
    }
    *bus = b;
    return 0;
}

/* "unix:path=" + `directory` + `suffix`, with the D-Bus address escaping (%xx for anything but
 * [-0-9A-Za-z_/.*]). */
static int escape_address_value(const char *directory, const char *suffix, char *target, size_t size) {
    static const char hex[] = "0123456789abcdef";
    size_t used = (size_t)snprintf(target, size, "unix:path=");
    for (int part = 0; part < 2; part++) {
        for (const unsigned char *c = (const unsigned char *)(part == 0 ? directory : suffix); *c; c++) {
            int plain = (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                        strchr("-_/.*", *c) != NULL;
            if (used + (plain ? 1 : 3) >= size) return -ENAMETOOLONG;
            if (plain) {
                target[used++] = (char)*c;
            } else {
                target[used++] = '%';
                target[used++] = hex[*c >> 4];
                target[used++] = hex[*c & 15];
            }
        }
    }
    target[used] = 0;
    return 0;
}

/* The manager's bus: connecting to a Unix socket does not block; authentication happens later,
 * inside the caller's time limit. */
static int open_manager_bus(struct query *q, int manager, const char *address, int address_is_broker) {
    int r;
    if (address) {
        r = open_at(address, address_is_broker, &q->bus);
        if (r < 0) fail(q, r, "connect to %s", address);
        return r;
    }
    if (manager == CSD_MANAGER_SYSTEM) {
        r = sd_bus_open_system(&q->bus);
        if (r < 0) fail(q, r, "connect to the system bus");
        return r;
    }
    r = sd_bus_open_user(&q->bus);
    if (r >= 0) return r;
    /* No user bus (no dbus-user-session): the user manager's own socket. */
    const char *runtime = getenv("XDG_RUNTIME_DIR");
    if (!runtime || runtime[0] != '/') {
        fail(q, r, "connect to the user bus (and $XDG_RUNTIME_DIR is not set)");
        return r;
    }
    char private_address[4200];
    if (escape_address_value(runtime, "/systemd/private", private_address, sizeof private_address) < 0) {
        fail(q, -ENAMETOOLONG, "connect to the user manager: $XDG_RUNTIME_DIR is too long");
        return -ENAMETOOLONG;
    }
    int private_error = open_at(private_address, 0, &q->bus);
    if (private_error < 0) fail(q, private_error, "connect to the user bus or %s/systemd/private", runtime);
    return private_error;
}

/* Processes the bus until every call of `q` is answered, one failed, or the deadline passed.
 * sd_bus_call would wait without limit while authenticating; this loop never passes the deadline. */
static void await_answers(struct query *q, uint64_t deadline, uint64_t timeout_usec) {
    while (q->pending > 0 && q->error == 0) {
        int r = sd_bus_process(q->bus, NULL);
        if (r < 0) {
            fail(q, r, "D-Bus connection");
            return;
        }
        if (r > 0) continue;
        uint64_t now = monotonic_usec();
        if (now >= deadline) {
            fail(q, -ETIMEDOUT, "no answer within %llu ms", (unsigned long long)(timeout_usec / 1000));
            return;
        }
        r = sd_bus_wait(q->bus, deadline - now);
        if (r < 0) {
            fail(q, r, "D-Bus connection");
            return;
        }
    }
}

int csd_manager_query(int manager, const char *unit, uint64_t timeout_usec, const char *address,
                      int address_is_broker, struct csd_manager_answer *answer, char *step, size_t step_size) {
    uint64_t deadline = monotonic_usec() + timeout_usec;
    memset(answer, 0, sizeof *answer);
    if (step_size > 0) step[0] = 0;
    struct query q = { .step = step, .step_size = step_size, .answer = answer };
    if (open_manager_bus(&q, manager, address, address_is_broker) < 0) return q.error;

    char *unit_path = NULL;
    int r = sd_bus_path_encode(MANAGER_PATH "/unit", unit, &unit_path);
    if (r < 0) {
        fail(&q, r, "unit name %s", unit);
        goto finish;
    }
    r = sd_bus_call_method_async(q.bus, NULL, MANAGER_SERVICE, unit_path, PROPERTIES_INTERFACE, "Get", on_job, &q,
                                 "ss", "org.freedesktop.systemd1.Unit", "Job");
    if (r < 0) {
        fail(&q, r, "Unit.Job: cannot send");
        goto finish;
    }
    q.pending++;
    r = sd_bus_call_method_async(q.bus, NULL, MANAGER_SERVICE, MANAGER_PATH, PROPERTIES_INTERFACE, "Get",
                                 on_system_state, &q, "ss", "org.freedesktop.systemd1.Manager", "SystemState");
    if (r < 0) {
        fail(&q, r, "Manager.SystemState: cannot send");
        goto finish;
    }
    q.pending++;

    await_answers(&q, deadline, timeout_usec);

finish:
    free(unit_path);
    /* Unanswered calls' callbacks are dropped with the bus; none runs after this returns. */
    sd_bus_close_unref(q.bus);   /* no flush: a peer that does not read must not hold us */
    return q.error;
}

static int on_active_state(sd_bus_message *reply, void *userdata, char *target, size_t size, const char *what) {
    struct query *q = userdata;
    q->pending--;
    if (failed_reply(q, reply, what)) return 0;
    const char *state = NULL;
    int r = sd_bus_message_read(reply, "v", "s", &state);
    if (r < 0) fail(q, r, "%s: unexpected reply", what);
    else copy_string(target, size, state);
    return 0;
}

static int on_service_state(sd_bus_message *reply, void *userdata, sd_bus_error *unused) {
    (void)unused;
    struct query *q = userdata;
    return on_active_state(reply, q, q->states->service, sizeof q->states->service, "service's Unit.ActiveState");
}

static int on_socket_state(sd_bus_message *reply, void *userdata, sd_bus_error *unused) {
    (void)unused;
    struct query *q = userdata;
    return on_active_state(reply, q, q->states->socket, sizeof q->states->socket, "socket's Unit.ActiveState");
}

/* Sends Properties.Get(Unit, ActiveState) for `unit` to `callback`. */
static int ask_active_state(struct query *q, const char *unit, sd_bus_message_handler_t callback) {
    char *path = NULL;
    int r = sd_bus_path_encode(MANAGER_PATH "/unit", unit, &path);
    if (r < 0) {
        fail(q, r, "unit name %s", unit);
        return r;
    }
    r = sd_bus_call_method_async(q->bus, NULL, MANAGER_SERVICE, path, PROPERTIES_INTERFACE, "Get", callback, q, "ss",
                                 "org.freedesktop.systemd1.Unit", "ActiveState");
    free(path);
    if (r < 0) fail(q, r, "Unit.ActiveState of %s: cannot send", unit);
    else q->pending++;
    return r;
}

int csd_unit_states_query(int manager, const char *service, const char *socket, uint64_t timeout_usec,
                          struct csd_unit_states *states, char *step, size_t step_size) {
    uint64_t deadline = monotonic_usec() + timeout_usec;
    memset(states, 0, sizeof *states);
    if (step_size > 0) step[0] = 0;
    struct query q = { .step = step, .step_size = step_size, .states = states };
    if (open_manager_bus(&q, manager, NULL, 0) < 0) return q.error;
    if (ask_active_state(&q, service, on_service_state) >= 0 && ask_active_state(&q, socket, on_socket_state) >= 0)
        await_answers(&q, deadline, timeout_usec);
    sd_bus_close_unref(q.bus);
    return q.error;
}
