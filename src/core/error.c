/* error.c - per-thread error messages (see error.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cflux.h"
#include "core/error.h"

static _Thread_local char errbuf[CF_ERRMAX];

const char *cf_last_error(void) { return errbuf; }

void cf_clearerr(void) { errbuf[0] = 0; }

int cf_seterr(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
    return -1;
}

void cf_adderr(const char *fmt, ...)
{
    size_t len = strlen(errbuf);
    va_list ap;
    if (len + 1 >= sizeof errbuf) return;
    va_start(ap, fmt);
    vsnprintf(errbuf + len, sizeof errbuf - len, fmt, ap);
    va_end(ap);
}

int cf_oom(size_t bytes)
{
    return cf_seterr("error: out of memory (asking for %zu bytes)", bytes);
}
