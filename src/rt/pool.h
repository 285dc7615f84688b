/* pool.h - the library's one thread pool: run n independent tasks on all cores.
 *
 *   static void scale_rows(void *ctx, int i) { ... row i only ... }
 *   cf_parallel_for(rows, scale_rows, &args);
 *
 * One process-wide pool, started on first use. Its size is CFLUX_THREADS when that
 * is a positive integer, else the CPUs this process may run on, at most 64; with one
 * thread there are no workers and everything runs on the caller. Idle workers spin
 * for about 20 microseconds, then sleep, so a pool never holds a core that another
 * process wants. Tasks are handed out one at a time from a shared counter: which
 * thread runs which index varies from call to call, so tasks must write disjoint
 * outputs for results to be deterministic. cf_parallel_for allocates nothing. */
#ifndef CF_RT_POOL_H
#define CF_RT_POOL_H

#include <stddef.h>

#include "cflux.h"   /* cf_threads and cf_set_threads are public: keep their visibility */

/* Most threads a pool will use, calling thread included. */
#define CF_POOL_MAX 64

/* Run fn(ctx, i) once for each i in [0, ntasks), spread over the pool; returns when
 * all are done, their writes visible to the caller. The calling thread takes part.
 * Called from inside a task, or while another thread has the pool, it runs the tasks
 * serially on the calling thread (no deadlock). ntasks <= 0 does nothing. */
void cf_parallel_for(int ntasks, void (*fn)(void *ctx, int i), void *ctx);

/* Threads that cf_parallel_for uses, calling thread included (1..CF_POOL_MAX). */
int cf_threads(void);

/* Use n threads (capped at CF_POOL_MAX); n <= 0 goes back to the default (which
 * reads CFLUX_THREADS again). Not to be called while a cf_parallel_for is running:
 * from a task, or while another thread is in one, it does nothing. If the system
 * refuses to start a thread, the pool keeps those it has; cf_threads() tells. */
void cf_set_threads(int n);

/* Run fn(ctx, begin, end) over [0, n) in contiguous chunks, one per thread, when
 * n * cost (cost: rough work per element, 1 for a plain elementwise op) is large
 * enough to pay for waking the pool; otherwise on the calling thread in one call. */
void cf_parallel_range(size_t n, size_t cost, void (*fn)(void *ctx, size_t b, size_t e), void *ctx);

#endif
