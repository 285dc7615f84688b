/* pool_busy.c - what a busy neighbour costs the thread pool (a benchmark, not a test).
 *
 *   gcc -std=gnu11 -O2 -Iinclude -Isrc src/exec/pool.c bench/pool_busy.c -o /tmp/pool_busy -lpthread
 *   /tmp/pool_busy [calls=1000] [reps=9] [work_us=40] [spinners=1]
 *
 * A loop of `calls` parallel regions, each ~work_us of arithmetic split into 2 tasks,
 * is timed (a) alone and (b) while a forked child spins on one core (or `spinners`
 * children each on one), for three ways
 * of running it:
 *   cflux   cf_parallel_for with 2 threads (bounded spin, then futex)
 *   naive   a pool whose worker and caller always spin, tasks assigned statically
 *           (how OpenMP / OpenBLAS behave with an active wait policy)
 *   serial  both tasks on the calling thread (the floor when one core is taken)
 * Runs are interleaved (every mode once per repetition); figures are medians of
 * microseconds per call. Also prints the cost of an empty 2-task cf_parallel_for. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rt/pool.h"

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

/* ---- the work: a dependent multiply-add chain, iters per task ---- */

static struct {
    long iters;
    double out[2 * 8];                                  /* one cache line per task */
} job;

static double chain(long iters, double x)
{
    for (long k = 0; k < iters; k++) x = x * 1.0000001 + 1e-9;
    return x;
}

static void task(void *ctx, int i) { job.out[i * 8] = chain(job.iters, 1.0 + i); }

/* ---- the naive pool: one worker, both sides spin forever, task 1 is the worker's ---- */

static struct {
    _Alignas(64) atomic_uint gen;
    _Alignas(64) atomic_uint done;
    atomic_int stop;
    pthread_t tid;
} naive;

static void *naive_worker(void *arg)
{
    unsigned seen = 0;
    for (;;) {
        unsigned g;
        while ((g = atomic_load_explicit(&naive.gen, memory_order_acquire)) == seen)
            __builtin_ia32_pause();
        seen = g;
        if (atomic_load(&naive.stop)) return NULL;
        task(NULL, 1);
        atomic_store_explicit(&naive.done, g, memory_order_release);
    }
}

static void naive_start(void)
{
    atomic_store(&naive.gen, 0);
    atomic_store(&naive.done, 0);
    atomic_store(&naive.stop, 0);
    pthread_create(&naive.tid, NULL, naive_worker, NULL);
}

static void naive_stop(void)
{
    atomic_store(&naive.stop, 1);
    atomic_fetch_add(&naive.gen, 1);
    pthread_join(naive.tid, NULL);
}

static void naive_parallel_for(void)
{
    unsigned g = atomic_fetch_add(&naive.gen, 1) + 1;
    task(NULL, 0);
    while (atomic_load_explicit(&naive.done, memory_order_acquire) != g) __builtin_ia32_pause();
}

/* ---- runs ---- */

enum { CFLUX, NAIVE, SERIAL, NMODES };
static const char *mode_name[NMODES] = {"cflux", "naive", "serial"};

/* Microseconds per call of `calls` regions in the given mode. */
static double run(int mode, int calls)
{
    if (mode == NAIVE) naive_start();
    double t0 = now_us();
    for (int c = 0; c < calls; c++) {
        if (mode == CFLUX) cf_parallel_for(2, task, NULL);
        else if (mode == NAIVE) naive_parallel_for();
        else task(NULL, 0), task(NULL, 1);
    }
    double t = (now_us() - t0) / calls;
    if (mode == NAIVE) naive_stop();
    return t;
}

/* n children that spin until killed (each holds a core). */
static void spinners_start(pid_t *pid, int n)
{
    for (int k = 0; k < n; k++)
        if ((pid[k] = fork()) == 0) {
            volatile unsigned long x = 0;
            for (;;) x++;
        }
    usleep(20000);                                      /* let them get going */
}

static void spinners_stop(pid_t *pid, int n)
{
    for (int k = 0; k < n; k++)
        if (pid[k] > 0) {
            kill(pid[k], SIGKILL);
            waitpid(pid[k], NULL, 0);
        }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void empty(void *ctx, int i) {}

int main(int argc, char **argv)
{
    int calls = argc > 1 ? atoi(argv[1]) : 1000;
    int reps = argc > 2 ? atoi(argv[2]) : 9;
    double work_us = argc > 3 ? atof(argv[3]) : 40;
    int nspin = argc > 4 ? atoi(argv[4]) : 1;
    if (calls < 1 || reps < 1 || reps > 100 || work_us <= 0 || nspin < 1 || nspin > 16) {
        fprintf(stderr, "usage: pool_busy [calls] [reps] [work_us] [spinners]\n");
        return 2;
    }
    cf_set_threads(2);

    /* Iterations per task so that both tasks together take work_us on one core. */
    double best = 1e18;
    for (int r = 0; r < 5; r++) {
        double t0 = now_us();
        job.out[0] = chain(1000000, job.out[0]);
        double t = now_us() - t0;
        if (t < best) best = t;
    }
    job.iters = (long)(work_us / 2 / (best / 1e6));
    double load[1] = {-1};
    getloadavg(load, 1);
    printf("work: %.1f us per call in 2 tasks of %ld iterations; %d calls, %d reps, "
           "%d spinner(s); load average before: %.2f\n", work_us, job.iters, calls, reps, nspin,
           load[0]);

    /* Overhead of a warm, empty 2-task call. */
    double over[100];
    for (int r = 0; r < reps; r++) {
        for (int k = 0; k < 10000; k++) cf_parallel_for(2, empty, NULL);
        double t0 = now_us();
        for (int k = 0; k < 100000; k++) cf_parallel_for(2, empty, NULL);
        over[r] = (now_us() - t0) / 100000;
    }
    printf("empty 2-task cf_parallel_for, 2 threads, warm: %.2f us (median)\n", median(over, reps));

    static double t[NMODES][2][100];
    for (int r = 0; r < reps; r++)
        for (int busy = 0; busy < 2; busy++) {
            pid_t pid[16];
            if (busy) spinners_start(pid, nspin);
            for (int m = 0; m < NMODES; m++) {
                int mode = (m + r) % NMODES;            /* rotate the order */
                run(mode, calls / 10 + 1);              /* warm up */
                t[mode][busy][r] = run(mode, calls);
            }
            if (busy) spinners_stop(pid, nspin);
        }

    printf("%-7s %12s %12s %9s\n", "mode", "alone us", "busy us", "slowdown");
    for (int m = 0; m < NMODES; m++) {
        double a = median(t[m][0], reps), b = median(t[m][1], reps);
        printf("%-7s %12.1f %12.1f %8.2fx\n", mode_name[m], a, b, b / a);
    }
    return 0;
}
