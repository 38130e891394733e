#include "process_secrecy.h"

#include <errno.h>
#include <sys/prctl.h>
#include <sys/resource.h>

int cps_keep_out_of_core_dumps(void) {
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return -errno;
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) != 0) return -errno;
    return 0;
}

int cps_is_dumpable(void) {
    int dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
    return dumpable < 0 ? -errno : dumpable;
}

int cps_make_dumpable(void) {
    return prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0 ? -errno : 0;
}
