/* test_pool.c - the thread pool: every task runs exactly once, at any size, nested,
 * from two threads at once, back to back by the hundred thousand, and without heap
 * allocation. A lost wakeup shows up as a hang, so run it under a timeout. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "rt/pool.h"
#include "ops/op.h"
#include "test.h"

/* Count heap calls made while `counting` is set, by interposing on glibc's malloc
 * (not under sanitizers, which interpose on it themselves). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define COUNT_ALLOCS 0
#else
#define COUNT_ALLOCS 1
static atomic_int counting, allocs;
extern void *__libc_malloc(size_t), *__libc_calloc(size_t, size_t), *__libc_realloc(void *, size_t);
void *malloc(size_t n)
{
    if (atomic_load_explicit(&counting, memory_order_relaxed)) atomic_fetch_add(&allocs, 1);
    return __libc_malloc(n);
}
void *calloc(size_t n, size_t m)
{
    if (atomic_load_explicit(&counting, memory_order_relaxed)) atomic_fetch_add(&allocs, 1);
    return __libc_calloc(n, m);
}
void *realloc(void *p, size_t n)
{
    if (atomic_load_explicit(&counting, memory_order_relaxed)) atomic_fetch_add(&allocs, 1);
    return __libc_realloc(p, n);
}
#endif

enum { MAXN = 10000, GUARD = 8 };

/* counts[i] = how many times task i ran; counts past n are a guard that must stay 0. */
static atomic_int counts[MAXN * 10 + GUARD];

static void count_task(void *ctx, int i)
{
    (void)ctx;
    atomic_fetch_add(&counts[i], 1);
}

static int all_once(int n)
{
    for (int i = 0; i < n; i++)
        if (atomic_load(&counts[i]) != 1) return 0;
    for (int i = n; i < n + GUARD; i++)
        if (atomic_load(&counts[i]) != 0) return 0;
    return 1;
}

static void clear_counts(void)
{
    for (int i = 0; i < MAXN * 10 + GUARD; i++) atomic_store(&counts[i], 0);
}

TEST(every_task_once)
{
    static const int threads[] = {1, 2, 3, 8}, sizes[] = {0, 1, 2, 3, 100, 10000};
    for (int t = 0; t < 4; t++) {
        cf_set_threads(threads[t]);
        CHECK(cf_threads() == threads[t]);
        for (int s = 0; s < 6; s++)
            for (int rep = 0; rep < 20; rep++) {
                clear_counts();
                cf_parallel_for(sizes[s], count_task, NULL);
                CHECK(all_once(sizes[s]));
            }
        clear_counts();
        cf_parallel_for(-5, count_task, NULL);
        CHECK(all_once(0));
    }
}

TEST(thread_count)
{
    cpu_set_t set;
    int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus > CF_POOL_MAX) cpus = CF_POOL_MAX;
    unsetenv("CFLUX_THREADS");
    cf_set_threads(0);
    CHECK(cf_threads() == cpus);
    setenv("CFLUX_THREADS", "3", 1);
    cf_set_threads(0);
    CHECK(cf_threads() == 3);
    setenv("CFLUX_THREADS", "2x", 1);                   /* not a number: CPUs */
    cf_set_threads(0);
    CHECK(cf_threads() == cpus);
    setenv("CFLUX_THREADS", "-4", 1);
    cf_set_threads(0);
    CHECK(cf_threads() == cpus);
    unsetenv("CFLUX_THREADS");
    cf_set_threads(1000);
    CHECK(cf_threads() == CF_POOL_MAX);
    clear_counts();
    cf_parallel_for(MAXN, count_task, NULL);
    CHECK(all_once(MAXN));
    cf_set_threads(1);
    CHECK(cf_threads() == 1);
}

/* Outer task o runs an inner loop of 100 tasks; the inner loop must run on o's thread. */
static atomic_int nested_wrong_thread;
static void inner_task(void *ctx, int i)
{
    int o = *(int *)ctx;
    atomic_fetch_add(&counts[o * 100 + i], 1);
}
static void outer_task(void *ctx, int o)
{
    pthread_t self = pthread_self();
    (void)ctx;
    cf_parallel_for(100, inner_task, &o);
    if (!pthread_equal(self, pthread_self())) atomic_fetch_add(&nested_wrong_thread, 1);
}
static void thread_check_task(void *ctx, int i)
{
    (void)i;
    if (!pthread_equal(*(pthread_t *)ctx, pthread_self())) atomic_fetch_add(&nested_wrong_thread, 1);
}
static void outer_same_thread(void *ctx, int o)
{
    (void)ctx, (void)o;
    pthread_t self = pthread_self();
    cf_parallel_for(50, thread_check_task, &self);
}

TEST(nested)
{
    static const int threads[] = {1, 2, 3, 8};
    for (int t = 0; t < 4; t++) {
        cf_set_threads(threads[t]);
        clear_counts();
        cf_parallel_for(37, outer_task, NULL);
        CHECK(all_once(3700));
        atomic_store(&nested_wrong_thread, 0);
        cf_parallel_for(16, outer_same_thread, NULL);
        CHECK(atomic_load(&nested_wrong_thread) == 0);
    }
}

/* cf_set_threads from a task is misuse; it must do nothing rather than hang. */
static void resize_task(void *ctx, int i)
{
    (void)ctx, (void)i;
    cf_set_threads(5);
}

TEST(resize_from_task)
{
    cf_set_threads(3);
    cf_parallel_for(4, resize_task, NULL);
    CHECK(cf_threads() == 3);
}

/* Tiny calls back to back: a lost wakeup hangs here. */
static atomic_long total;
static void add_task(void *ctx, int i)
{
    (void)ctx;
    atomic_fetch_add(&total, i + 1);
}

TEST(back_to_back)
{
    static const int threads[] = {2, 3, 8};
    for (int t = 0; t < 3; t++) {
        cf_set_threads(threads[t]);
        atomic_store(&total, 0);
        long want = 0;
        for (int k = 0; k < 100000; k++) {
            int n = 1 + k % 4;
            cf_parallel_for(n, add_task, NULL);
            want += (long)n * (n + 1) / 2;
        }
        CHECK(atomic_load(&total) == want);
    }
}

/* Gaps between calls long enough that workers fall asleep each time, and tasks long
 * enough that the caller falls asleep waiting for them: the futex paths. */
static void slow_task(void *ctx, int i)
{
    (void)ctx;
    if (i % 2) usleep(200);
    atomic_fetch_add(&total, 1);
}

TEST(sleep_and_wake)
{
    cf_set_threads(3);
    atomic_store(&total, 0);
    for (int k = 0; k < 300; k++) {
        cf_parallel_for(3, slow_task, NULL);
        if (k % 2) usleep(300);
    }
    CHECK(atomic_load(&total) == 900);
}

/* Two tasks that wait for each other (up to a second): they finish together only if
 * a sleeping worker was woken to run one of them while the caller runs the other. */
static atomic_int arrived, met;
static void rendezvous(void *ctx, int i)
{
    (void)ctx, (void)i;
    atomic_fetch_add(&arrived, 1);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        if (atomic_load(&arrived) >= 2) {
            atomic_fetch_add(&met, 1);
            return;
        }
        sched_yield();
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 1000000000L);
}

TEST(workers_wake)
{
    cf_set_threads(2);
    for (int k = 0; k < 20; k++) {
        usleep(2000);                                   /* the worker is asleep by now */
        atomic_store(&arrived, 0);
        atomic_store(&met, 0);
        cf_parallel_for(2, rendezvous, NULL);
        CHECK(atomic_load(&met) == 2);
    }
}

/* Each task sums a chunk into its own slot; the caller adds the slots in order. */
enum { SUM_N = 1000003, CHUNKS = 61 };
static double xs[SUM_N], partial[CHUNKS];
static void chunk_sum(void *ctx, int c)
{
    (void)ctx;
    long lo = (long)SUM_N * c / CHUNKS, hi = (long)SUM_N * (c + 1) / CHUNKS;
    double s = 0;
    for (long i = lo; i < hi; i++) s += xs[i];
    partial[c] = s;
}

TEST(sums)
{
    for (long i = 0; i < SUM_N; i++) xs[i] = 1.0 / (1 + i % 977);
    double want = 0;
    for (int c = 0; c < CHUNKS; c++) {
        chunk_sum(NULL, c);
        want += partial[c];
    }
    static const int threads[] = {1, 2, 3, 8};
    for (int t = 0; t < 4; t++) {
        cf_set_threads(threads[t]);
        for (int rep = 0; rep < 5; rep++) {
            for (int c = 0; c < CHUNKS; c++) partial[c] = -1;
            cf_parallel_for(CHUNKS, chunk_sum, NULL);
            double got = 0;
            for (int c = 0; c < CHUNKS; c++) got += partial[c];
            CHECK(got == want);                         /* same chunks, same order: exact */
        }
        atomic_store(&total, 0);
        cf_parallel_for(10000, add_task, NULL);
        CHECK(atomic_load(&total) == 10000L * 10001 / 2);
    }
}

/* Two user threads call at once: one gets the pool, the other runs serially. */
static atomic_int counts_b[1000];
static void count_b(void *ctx, int i)
{
    (void)ctx;
    atomic_fetch_add(&counts_b[i], 1);
}
static void *second_caller(void *arg)
{
    (void)arg;
    for (int k = 0; k < 2000; k++) cf_parallel_for(500, count_b, NULL);
    return NULL;
}

TEST(two_callers)
{
    cf_set_threads(3);
    clear_counts();
    pthread_t th;
    CHECK(pthread_create(&th, NULL, second_caller, NULL) == 0);
    for (int k = 0; k < 2000; k++) cf_parallel_for(1000, count_task, NULL);
    pthread_join(th, NULL);
    int ok = 1;
    for (int i = 0; i < 1000; i++) ok &= atomic_load(&counts[i]) == 2000;
    for (int i = 0; i < 500; i++) ok &= atomic_load(&counts_b[i]) == 2000;
    for (int i = 500; i < 1000; i++) ok &= atomic_load(&counts_b[i]) == 0;
    CHECK(ok);
}

/* cf_parallel_range: every index of [0, n) in exactly one chunk, chunks non-empty and
 * inside [0, n), the last chunk's remainder included; split over the threads when the
 * work is large (cost 1 << 20), run inline when it is small (cost 1). */
enum { RANGE_MAX = 100003 };
static atomic_int range_counts[RANGE_MAX + GUARD], range_calls, range_bad;

static void count_range(void *ctx, size_t b, size_t e)
{
    size_t n = *(size_t *)ctx;
    atomic_fetch_add(&range_calls, 1);
    if (!(b < e && e <= n)) atomic_fetch_add(&range_bad, 1);
    for (size_t i = b; i < e && i < RANGE_MAX + GUARD; i++) atomic_fetch_add(&range_counts[i], 1);
}

TEST(parallel_range_covers_once)
{
    static const int threads[] = {1, 2, 3, 8};
    static const size_t sizes[] = {1, 2, 7, 1001, 65536, RANGE_MAX};
    static const size_t costs[] = {1, 1 << 20};
    for (int t = 0; t < 4; t++) {
        cf_set_threads(threads[t]);
        for (int s = 0; s < 6; s++)
            for (int c = 0; c < 2; c++) {
                size_t n = sizes[s];
                for (int i = 0; i < RANGE_MAX + GUARD; i++) atomic_store(&range_counts[i], 0);
                atomic_store(&range_calls, 0);
                atomic_store(&range_bad, 0);
                cf_parallel_range(n, costs[c], count_range, &n);
                int once = 1;
                for (size_t i = 0; i < n; i++) once &= atomic_load(&range_counts[i]) == 1;
                for (size_t i = n; i < n + GUARD; i++) once &= atomic_load(&range_counts[i]) == 0;
                int calls = atomic_load(&range_calls), split = (size_t)threads[t] < n ? threads[t] : (int)n;
                if (!once || atomic_load(&range_bad) || (c == 1 && calls != split))
                    fprintf(stderr, "  threads %d, n %zu, cost %zu: %d chunks%s%s\n", threads[t], n, costs[c],
                            calls, once ? "" : ", not every index once", atomic_load(&range_bad) ? ", bad bounds" : "");
                CHECK(once);
                CHECK(atomic_load(&range_bad) == 0);
                if (c == 1) CHECK(calls == split);   /* big work: one chunk per thread */
            }
    }
    /* n = 0 calls nothing */
    size_t zero = 0;
    atomic_store(&range_calls, 0);
    cf_parallel_range(0, 1 << 20, count_range, &zero);
    CHECK(atomic_load(&range_calls) == 0);
    cf_set_threads(0);
}

TEST(no_allocation)
{
#if COUNT_ALLOCS
    /* The counter must see an allocation first; under valgrind it sees none: skip. */
    atomic_store(&allocs, 0);
    atomic_store(&counting, 1);
    void *volatile p = malloc(16);                      /* volatile: not elided */
    free(p);
    atomic_store(&counting, 0);
    if (atomic_load(&allocs) != 1) {
        fprintf(stderr, "no_allocation: malloc is not ours (valgrind?), skipped\n");
        return;
    }
    cf_set_threads(3);
    cf_parallel_for(10, count_task, NULL);              /* warm */
    atomic_store(&allocs, 0);
    atomic_store(&counting, 1);
    for (int k = 0; k < 1000; k++) cf_parallel_for(1 + k % 7, count_task, NULL);
    cf_parallel_for(16, outer_same_thread, NULL);
    atomic_store(&counting, 0);
    CHECK(atomic_load(&allocs) == 0);
#endif
}

int main(void)
{
    RUN(every_task_once);
    RUN(thread_count);
    RUN(nested);
    RUN(resize_from_task);
    RUN(back_to_back);
    RUN(sleep_and_wake);
    RUN(workers_wake);
    RUN(sums);
    RUN(two_callers);
    RUN(parallel_range_covers_once);
    RUN(no_allocation);
    return test_summary("pool");
}
