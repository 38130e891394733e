#ifndef CSD_MANAGER_H
#define CSD_MANAGER_H
/*
 * Asking the service manager (systemd, system or per-user instance) over D-Bus why this
 * process is being stopped: libsystemd's sd-bus, never blocking longer than the caller allows.
 * Every function returns a negative errno on failure.
 */
#include <stddef.h>
#include <stdint.h>

/* Which service manager runs this process's unit. */
#define CSD_MANAGER_SYSTEM 1
#define CSD_MANAGER_USER 2

/* The unit this process belongs to: tries the per-user manager first (sd_pid_get_user_unit),
 * then the system manager (sd_pid_get_unit); where a sandbox hides PID 1 from those (ProtectProc=),
 * reads /proc/self/cgroup itself. Copies the unit's name into `unit` and returns
 * CSD_MANAGER_USER or CSD_MANAGER_SYSTEM; -ENXIO/-ENODATA when the process is in no unit (not
 * started by systemd), -ENAMETOOLONG when the name does not fit. */
int csd_own_unit(char *unit, size_t unit_size);

/* What the manager said. Strings are NUL-terminated; empty when not known. */
struct csd_manager_answer {
    /* Unit.Job's id; 0 when the unit has no job. */
    uint32_t job_id;
    /* Job.JobType of that job: "stop", "restart", ... */
    char job_type[32];
    /* Manager.SystemState: "running", "degraded", "stopping", ... */
    char system_state[32];
};

/* Asks `manager` (CSD_MANAGER_*) for Unit.Job of `unit`, then that job's JobType, and for the
 * manager's SystemState, waiting at most `timeout_usec` in all (connection and authentication
 * included). The system manager is asked over the system bus; a user manager over the user bus,
 * or over its private socket ($XDG_RUNTIME_DIR/systemd/private) when there is no user bus.
 * `address`, when not NULL, is a D-Bus address used instead (a broker when `address_is_broker`,
 * else a direct connection to the manager): for tests.
 * Returns 0 with `answer` filled; or -errno: -ETIMEDOUT when the time ran out, the connect
 * error when no bus could be reached, the reply's errno for a D-Bus error. On failure `step`
 * names what failed and, for a D-Bus error, its name (e.g. "Unit.Job:
 * org.freedesktop.DBus.Error.AccessDenied"). */
int csd_manager_query(int manager, const char *unit, uint64_t timeout_usec, const char *address,
                      int address_is_broker, struct csd_manager_answer *answer, char *step, size_t step_size);

/* The ActiveState ("active", "inactive", "failed", "activating", ...) of a service and of its
 * socket unit; empty when not known. */
struct csd_unit_states {
    char service[32];
    char socket[32];
};

/* Asks `manager` (CSD_MANAGER_*) for Unit.ActiveState of `service` and of `socket`, waiting at
 * most `timeout_usec` in all. Reading a property never starts a unit (unlike connecting to the
 * socket it listens on): how a client tells a stopped daemon from a running one. Returns 0 with
 * `states` filled, or -errno with `step` naming what failed (as csd_manager_query). */
int csd_unit_states_query(int manager, const char *service, const char *socket, uint64_t timeout_usec,
                          struct csd_unit_states *states, char *step, size_t step_size);

#endif
