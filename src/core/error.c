/* error.c - per-thread error messages (see error.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

void cf_adderr_lines(char (*lines)[CF_TRACE_LINE], int n)
{
    /* fold runs first: out[i] is a line, reps[i] how often it repeats */
    int m = 0, *reps = n ? malloc((size_t)n * sizeof *reps) : NULL, *first = n ? malloc((size_t)n * sizeof *first) : NULL;
    if (n && (!reps || !first)) {
        free(reps);
        free(first);
        for (int i = 0; i < n; i++) cf_adderr("\n%s", lines[i]);
        return;
    }
    for (int i = 0; i < n; i++) {
        if (m && strcmp(lines[first[m - 1]], lines[i]) == 0) {
            reps[m - 1]++;
            continue;
        }
        first[m] = i;
        reps[m++] = 1;
    }
    for (int k = 0; k < m; k++) {
        if (m > 30 && k == 25) {
            cf_adderr("\n  ... %d more", m - 29);
            k = m - 5;
            continue;
        }
        cf_adderr("\n%s", lines[first[k]]);
        if (reps[k] > 1) cf_adderr("\n  ... the same %d more time%s", reps[k] - 1, reps[k] == 2 ? "" : "s");
    }
    free(reps);
    free(first);
}
