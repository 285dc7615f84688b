/* version.c - the library's version, set by the build. */
#include "cflux.h"

#ifndef CFLUX_VERSION_STRING
#define CFLUX_VERSION_STRING "0.0.0"
#endif

const char *cf_version(void) { return CFLUX_VERSION_STRING; }
