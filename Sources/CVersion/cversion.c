#include "cversion.h"

#ifndef SC_VERSION_OVERRIDE
#define SC_VERSION_OVERRIDE ""
#endif

const char *cversion_override(void) { return SC_VERSION_OVERRIDE; }
