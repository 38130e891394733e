#include "csd_malloc.h"

#include <errno.h>
#include <malloc.h>

int csd_malloc_use_one_arena(void) { return mallopt(M_ARENA_MAX, 1) == 1 ? 0 : -EINVAL; }
