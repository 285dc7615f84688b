/* schedule.c - learning-rate schedules, as specs that the tool and fit take:
 *
 *   const | step:E:G | cosine      the schedule
 *   SCHEDULE+warmup:N              with a linear warmup over the first N steps
 *   warmup:N                       const+warmup:N
 *
 * A pure function of (spec, base, step, total_steps, steps_per_epoch): nothing is
 * kept between calls, so a resumed run gets the same rates. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/error.h"

#define KNOWN "const, step:E:G, cosine; each may end in +warmup:N"

/* A whole number >= 1 that fills [s, end), or -1. */
static long whole(const char *s, const char *end)
{
    if (s >= end || *s < '0' || *s > '9') return -1;
    errno = 0;
    char *e;
    long v = strtol(s, &e, 10);
    return errno || e != end || v < 1 ? -1 : v;
}

int cf_schedule_lr(const char *spec, float base, long step, long total_steps, long steps_per_epoch, float *lr)
{
    if (!spec) return cf_seterr("error: no learning-rate schedule (" KNOWN ")");
    if (!lr) return cf_seterr("error: cf_schedule_lr: no place for the result");

    /* split off the warmup */
    const char *sched = spec, *sched_end, *warm = NULL;
    if (strncmp(spec, "warmup:", 7) == 0) {
        sched = "const";
        sched_end = sched + 5;
        warm = spec + 7;
    } else {
        const char *plus = strstr(spec, "+warmup:");
        sched_end = plus ? plus : spec + strlen(spec);
        if (plus) warm = plus + 8;
    }
    long warmup = 0;
    if (warm && (warmup = whole(warm, warm + strlen(warm))) < 0)
        return cf_seterr("error: learning-rate schedule '%s': N (the warmup steps) must be a whole number >= 1, "
                         "not '%s'", spec, warm);

    size_t len = (size_t)(sched_end - sched);
    enum { CONST, STEP, COSINE } kind;
    long every = 0;
    double gamma = 1;
    if (len == 5 && strncmp(sched, "const", 5) == 0) {
        kind = CONST;
    } else if (len == 6 && strncmp(sched, "cosine", 6) == 0) {
        kind = COSINE;
    } else if (len >= 5 && strncmp(sched, "step:", 5) == 0) {
        kind = STEP;
        const char *e = sched + 5, *colon = memchr(e, ':', (size_t)(sched_end - e));
        if (!colon || (every = whole(e, colon)) < 0)
            return cf_seterr("error: learning-rate schedule '%s': E (the epochs between decays) must be a whole "
                             "number >= 1, not '%.*s' (e.g. step:5:0.1)", spec,
                             (int)((colon ? colon : sched_end) - e), e);
        const char *g = colon + 1;
        char *gend = (char *)g;
        errno = 0;
        gamma = g < sched_end && (isdigit((unsigned char)*g) || *g == '.') ? strtod(g, &gend) : NAN;
        if (g >= sched_end || gend != sched_end || errno || !(gamma > 0) || !isfinite(gamma))
            return cf_seterr("error: learning-rate schedule '%s': G (the decay factor) must be a number > 0, "
                             "not '%.*s' (e.g. step:5:0.1)", spec, (int)(sched_end - g), g);
    } else {
        return cf_seterr("error: unknown learning-rate schedule '%s' (" KNOWN ")", spec);
    }

    if (!(base > 0) || !isfinite(base))
        return cf_seterr("error: learning-rate schedule '%s': the base learning rate must be a number > 0, not %g",
                         spec, base);
    if (step < 0) return cf_seterr("error: learning-rate schedule '%s': step %ld is negative", spec, step);

    double v = base;
    if (kind == STEP) {
        if (steps_per_epoch < 1)
            return cf_seterr("error: learning-rate schedule '%s' needs the steps per epoch (got %ld)", spec,
                             steps_per_epoch);
        v = base * pow(gamma, (double)(step / steps_per_epoch / every));
    } else if (kind == COSINE) {
        if (total_steps < 1)
            return cf_seterr("error: learning-rate schedule '%s' needs the run's total steps (got %ld)", spec,
                             total_steps);
        long s = step < total_steps ? step : total_steps;   /* past the end: 0, not back up */
        v = base * (1 + cos(M_PI * (double)s / (double)total_steps)) / 2;
    }
    if (warmup && step < warmup) v = v * (double)(step + 1) / (double)warmup;
    *lr = (float)v;
    return 0;
}
