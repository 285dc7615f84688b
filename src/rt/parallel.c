/* parallel.c - cf_parallel_range: a loop split into contiguous chunks on the pool. */
#include <stddef.h>

#include "rt/pool.h"

/* Below this many units of work (elements x cost), threads cost more than they give. */
#define PAR_MIN_WORK 32768

typedef struct {
    void (*fn)(void *ctx, size_t b, size_t e);
    void *ctx;
    size_t n;
    int tasks;
} range_job;

static void range_task(void *p, int i)
{
    range_job *j = p;
    size_t b = j->n * (size_t)i / (size_t)j->tasks, e = j->n * (size_t)(i + 1) / (size_t)j->tasks;
    if (b < e) j->fn(j->ctx, b, e);
}

void cf_parallel_range(size_t n, size_t cost, void (*fn)(void *ctx, size_t b, size_t e), void *ctx)
{
    int t = cf_threads();
    if (t <= 1 || n < 2 || n * (cost ? cost : 1) < PAR_MIN_WORK) {
        if (n) fn(ctx, 0, n);
        return;
    }
    if ((size_t)t > n) t = (int)n;
    range_job j = {fn, ctx, n, t};
    cf_parallel_for(t, range_task, &j);
}
