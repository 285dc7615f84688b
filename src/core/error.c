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

/* Run k of m, text repeated reps times: printed, or counted into the folded middle. */
static void add_run(int k, int m, const char *text, int reps)
{
    if (m > 30 && k >= 25 && k <= m - 5) {
        if (k == 25) cf_adderr("\n  ... %d more", m - 29);
        return;
    }
    cf_adderr("\n%s", text);
    if (reps > 1) cf_adderr("\n  ... the same %d more time%s", reps - 1, reps == 2 ? "" : "s");
}

void cf_adderr_lines(int n, void (*line)(void *ctx, int i, char *buf), void *ctx)
{
    char cur[CF_TRACE_LINE], prev[CF_TRACE_LINE];
    /* first pass: m, the number of runs of equal lines */
    int m = 0;
    for (int i = 0; i < n; i++) {
        line(ctx, i, cur);
        if (i == 0 || strcmp(cur, prev) != 0) m++;
        memcpy(prev, cur, sizeof cur);
    }
    /* second pass: each run when it ends */
    int k = 0, reps = 0;
    for (int i = 0; i < n; i++) {
        line(ctx, i, cur);
        if (i > 0 && strcmp(cur, prev) != 0) {
            add_run(k++, m, prev, reps);
            reps = 0;
        }
        memcpy(prev, cur, sizeof cur);
        reps++;
    }
    if (n > 0) add_run(k, m, prev, reps);
}
