/* pool.c - the thread pool behind cf_parallel_for (see pool.h). Linux: futexes.
 *
 * A call. The caller takes the pool (the `busy` flag; if another thread has it, or
 * the caller is itself running a task, the tasks run serially instead), closes the
 * task counter, writes the job (fn, ctx, ntasks), opens the counter under a new
 * generation and bumps `epoch`, the word idle workers watch. Every thread, caller
 * included, then takes indices by compare-and-swap on
 *
 *     claim = (generation << 32) | next index      (index CLOSED while a job is written)
 *
 * and counts finished tasks in `done`. The caller returns when done == ntasks, not
 * when every worker has checked in, so a worker the scheduler has set aside costs
 * nothing unless it holds a task; if it has not woken yet the caller takes its tasks.
 *
 * A late worker. A worker may read a job's fields just as the caller replaces them
 * for the next job. It reads claim, then the fields (acquire), then claims with a CAS
 * that expects the generation it read: the caller closes the counter before it writes
 * any field, so a worker that has seen a new field fails its CAS. A claim therefore
 * only ever succeeds for the open job with that job's fields, each index of a job is
 * claimed exactly once, and the caller cannot start the next job before every claimed
 * task of this one has been counted. (Generations wrap after 2^32 jobs; a worker would
 * have to sleep through exactly that many between two of its own loads to be fooled.)
 *
 * Waiting. Idle workers and a caller waiting for stragglers spin for CF_POOL_SPIN_NS
 * (pause instructions, counted in iterations calibrated at start-up), then sleep on a
 * futex. A sleeper first announces itself (`sleepers`, `caller_sleeps`) and then
 * re-reads the word; the waker changes the word and then reads the announcement. Both
 * sides use sequentially consistent operations, so at least one of them sees the
 * other, and FUTEX_WAIT's own compare catches a change in between: no lost wakeups.
 * The futexes carry no ordering; all of it is in the atomics. */
#define _GNU_SOURCE
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rt/gemm_builtin.h"
#include "rt/pool.h"

/* How long an idle thread spins before it sleeps: about one futex wake-up, the
 * classic bound (spinning costs at most what sleeping would). A wake-up takes ~5 us
 * on bare metal and ~40 us on the 2-vCPU KVM machine this was tuned on, where a 5 us
 * spin let caller and worker fall out of step (+30% on back-to-back 40 us regions,
 * bench/pool_busy.c) and 20 us did not, while a core another process wants is still
 * given up within 20 us. */
#ifndef CF_POOL_SPIN_NS
#define CF_POOL_SPIN_NS 20000
#endif

#define CLOSED 0xffffffffu

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define cpu_relax() __asm__ __volatile__("" ::: "memory")
#endif

typedef void (*task_fn)(void *ctx, int i);

static struct {
    /* Set up by pool_start/pool_stop. */
    _Atomic int nthreads;             /* caller included; workers are nthreads - 1 */
    int spin;                         /* pause iterations in one spin, ~CF_POOL_SPIN_NS */
    pthread_t tid[CF_POOL_MAX];
    _Atomic int busy;                 /* a caller has the pool */
    _Atomic int stop;                 /* workers: return at the next epoch */
    _Atomic uint32_t started;         /* workers ready since pool_start; a futex */

    /* The job: written while claim is CLOSED, read by whoever claims. */
    _Atomic(task_fn) fn;
    _Atomic(void *) ctx;
    _Atomic int ntasks;

    /* Hot words, one cache line each. */
    _Alignas(64) _Atomic uint64_t claim;
    _Alignas(64) _Atomic uint32_t done;     /* tasks finished; futex the caller sleeps on */
    _Atomic int caller_sleeps;
    _Alignas(64) _Atomic uint32_t epoch;    /* bumped per job; futex idle workers sleep on */
    _Atomic int sleepers;                   /* workers in (or entering) FUTEX_WAIT */
} P;

static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

/* This thread is running a task (workers always are): nested calls run serially. */
static _Thread_local int in_task;

static void futex_wait(void *addr, uint32_t val)
{
    syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(void *addr, int n)
{
    syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/* Claim and run tasks of the open job until none are left. */
static void run_tasks(void)
{
    uint64_t s = atomic_load_explicit(&P.claim, memory_order_acquire);
    for (;;) {
        task_fn fn = atomic_load_explicit(&P.fn, memory_order_acquire);
        void *ctx = atomic_load_explicit(&P.ctx, memory_order_acquire);
        int n = atomic_load_explicit(&P.ntasks, memory_order_acquire);
        uint32_t i = (uint32_t)s;
        if (i >= (uint32_t)n) return;                     /* CLOSED is >= any n */
        if (atomic_compare_exchange_weak_explicit(&P.claim, &s, s + 1, memory_order_acquire,
                                                  memory_order_acquire)) {
            fn(ctx, (int)i);
            if (atomic_fetch_add(&P.done, 1) + 1 == (uint32_t)n && atomic_load(&P.caller_sleeps))
                futex_wake(&P.done, 1);
            s++;
        }
    }
}

/* Wait until epoch differs from seen; return its new value. */
static uint32_t wait_epoch(uint32_t seen)
{
    uint32_t e;
    for (int k = 0; k < P.spin; k++) {
        if ((e = atomic_load_explicit(&P.epoch, memory_order_acquire)) != seen) return e;
        cpu_relax();
    }
    for (;;) {
        atomic_fetch_add(&P.sleepers, 1);
        if (atomic_load(&P.epoch) == seen) futex_wait(&P.epoch, seen);
        atomic_fetch_sub(&P.sleepers, 1);
        if ((e = atomic_load_explicit(&P.epoch, memory_order_acquire)) != seen) return e;
    }
}

/* Caller: wait until all n tasks of the job are counted. */
static void wait_done(uint32_t n)
{
    for (int k = 0; k < P.spin; k++) {
        if (atomic_load_explicit(&P.done, memory_order_acquire) == n) return;
        cpu_relax();
    }
    for (;;) {
        atomic_store(&P.caller_sleeps, 1);
        uint32_t d = atomic_load(&P.done);
        if (d == n) break;
        futex_wait(&P.done, d);
    }
    atomic_store_explicit(&P.caller_sleeps, 0, memory_order_relaxed);
}

static void *worker_main(void *arg)
{
    uint32_t seen = (uint32_t)(uintptr_t)arg;
    in_task = 1;
    (void)cf_gemm_builtin_reserve();     /* its packing buffers now: steps allocate nothing */
    atomic_fetch_add(&P.started, 1);
    futex_wake(&P.started, 1);
    for (;;) {
        seen = wait_epoch(seen);
        if (atomic_load(&P.stop)) return NULL;
        run_tasks();
    }
}

/* Start workers until there are n threads in all (fewer if the system refuses), and
 * wait until each has made its per-thread buffers, so that none allocates later. */
static void pool_start(int n)
{
    uint32_t e = atomic_load(&P.epoch);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);           /* signals go to user threads */
    atomic_store(&P.started, 0);
    int have = 1;
    while (have < n && pthread_create(&P.tid[have - 1], NULL, worker_main, (void *)(uintptr_t)e) == 0)
        have++;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    for (uint32_t s; (s = atomic_load(&P.started)) < (uint32_t)(have - 1);) futex_wait(&P.started, s);
    atomic_store(&P.nthreads, have);
}

/* Stop and join all workers. No job may be running. */
static void pool_stop(void)
{
    int nworkers = atomic_load(&P.nthreads) - 1;
    if (nworkers <= 0) return;
    atomic_store(&P.stop, 1);
    atomic_fetch_add(&P.epoch, 1);
    futex_wake(&P.epoch, INT_MAX);
    for (int i = 0; i < nworkers; i++) pthread_join(P.tid[i], NULL);
    atomic_store(&P.stop, 0);
    atomic_store(&P.nthreads, 1);
}

static int default_threads(void)
{
    const char *env = getenv("CFLUX_THREADS");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end == 0 && v > 0) return v < CF_POOL_MAX ? (int)v : CF_POOL_MAX;
    }
    int n = 0;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
    if (n <= 0) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (n <= 0) n = 1;
    return n < CF_POOL_MAX ? n : CF_POOL_MAX;
}

/* Pause iterations that take about CF_POOL_SPIN_NS (a pause is ~1 ns on some cores,
 * ~40 ns on others). Best of three, so a preemption does not shorten the spin. */
static int calibrate_spin(void)
{
    enum { PROBE = 2000 };
    double best = 1e18;
    for (int r = 0; r < 3; r++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (int k = 0; k < PROBE; k++) cpu_relax();
        clock_gettime(CLOCK_MONOTONIC, &b);
        double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
        if (ns < best) best = ns;
    }
    double iters = CF_POOL_SPIN_NS * (PROBE / (best > 1 ? best : 1));
    return iters < 16 ? 16 : iters > 1e7 ? 10000000 : (int)iters;
}

/* At exit: stop the workers so leak checkers see a clean process. Skipped when exit
 * is called from a task or while another thread is inside a parallel region. */
static void pool_atexit(void)
{
    int free_ = 0;
    if (in_task || !atomic_compare_exchange_strong(&P.busy, &free_, 1)) return;
    pool_stop();                                         /* busy stays set: serial from now */
}

/* In a forked child only the forking thread exists: forget the workers. */
static void pool_atfork_child(void)
{
    atomic_store(&P.nthreads, 1);
    atomic_store(&P.busy, 0);
    atomic_store(&P.sleepers, 0);
    atomic_store(&P.caller_sleeps, 0);
}

static void pool_init(void)
{
    P.spin = calibrate_spin();
    atomic_store(&P.claim, CLOSED);
    pool_start(default_threads());
    atexit(pool_atexit);
    pthread_atfork(NULL, NULL, pool_atfork_child);
}

int cf_threads(void)
{
    pthread_once(&pool_once, pool_init);
    return atomic_load_explicit(&P.nthreads, memory_order_relaxed);
}

void cf_set_threads(int n)
{
    pthread_once(&pool_once, pool_init);
    if (n <= 0) n = default_threads();
    if (n > CF_POOL_MAX) n = CF_POOL_MAX;
    int free_ = 0;
    if (n == atomic_load(&P.nthreads) || in_task || !atomic_compare_exchange_strong(&P.busy, &free_, 1))
        return;                                          /* misuse: a job is running */
    pool_stop();
    pool_start(n);
    atomic_store(&P.busy, 0);
}

void cf_parallel_for(int ntasks, void (*fn)(void *ctx, int i), void *ctx)
{
    if (ntasks <= 0) return;
    int nworkers = 0, free_ = 0;
    if (ntasks > 1 && !in_task) {
        pthread_once(&pool_once, pool_init);
        nworkers = atomic_load_explicit(&P.nthreads, memory_order_relaxed) - 1;
    }
    if (nworkers <= 0 || !atomic_compare_exchange_strong(&P.busy, &free_, 1)) {
        for (int i = 0; i < ntasks; i++) fn(ctx, i);
        return;
    }
    in_task = 1;
    uint64_t gen = (uint32_t)((atomic_load_explicit(&P.claim, memory_order_relaxed) >> 32) + 1);
    atomic_store_explicit(&P.claim, gen << 32 | CLOSED, memory_order_relaxed);
    atomic_store_explicit(&P.fn, fn, memory_order_release);
    atomic_store_explicit(&P.ctx, ctx, memory_order_release);
    atomic_store_explicit(&P.ntasks, ntasks, memory_order_release);
    atomic_store_explicit(&P.done, 0, memory_order_relaxed);
    atomic_store_explicit(&P.claim, gen << 32, memory_order_release);
    atomic_fetch_add(&P.epoch, 1);
    if (atomic_load(&P.sleepers) > 0) futex_wake(&P.epoch, ntasks - 1 < nworkers ? ntasks - 1 : nworkers);
    run_tasks();
    wait_done((uint32_t)ntasks);
    in_task = 0;
    atomic_store_explicit(&P.busy, 0, memory_order_release);
}
