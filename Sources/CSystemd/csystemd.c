#include "csystemd.h"
int csd_placeholder(void) { return 0; }
