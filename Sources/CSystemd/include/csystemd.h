#ifndef CSYSTEMD_H
#define CSYSTEMD_H
/* The only code that touches libsystemd and signal masks. Filled in by the daemon core. */
int csd_placeholder(void);
#endif
