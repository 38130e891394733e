#ifndef CSD_MALLOC_H
#define CSD_MALLOC_H

/* glibc malloc tuning for the daemon (<malloc.h>, which Swift's Glibc module leaves out). */

/* Limits the process to glibc's main malloc arena (mallopt M_ARENA_MAX 1), so that threads
 * started later allocate there instead of each in an arena of its own. 0, or -EINVAL if glibc
 * refused. Call it before starting threads: arenas made before stay. */
int csd_malloc_use_one_arena(void);

#endif
