/* vmath_bench.c - elements per second of sigmoid, tanh, exp and log forward on one
 * thread: the loops the activation kernels ran before (libm, one element at a time)
 * against src/rt/vmath.h's. Also a softmax row's exp and sum. Not a test; nothing
 * runs it.
 *
 *   build/bench_vmath [n]      n floats (default 1M) in [-10, 10] (log: |x|), median
 *                              of 5 runs */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rt/vmath.h"

enum { RUNS = 5 };

static void libm_sigmoid(float *restrict y, const float *restrict x, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] = 1.0f / (1.0f + expf(-x[i]));
}
static void libm_tanh(float *restrict y, const float *restrict x, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] = tanhf(x[i]);
}
static void libm_exp(float *restrict y, const float *restrict x, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] = expf(x[i]);
}
static void libm_log(float *restrict y, const float *restrict x, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] = logf(x[i]);
}
/* softmax's numerators and sum over rows of 1000, max subtracted */
static void libm_softmax(float *restrict y, const float *restrict x, size_t n)
{
    for (size_t r = 0; r + 1000 <= n; r += 1000) {
        float s = 0;
        for (size_t i = r; i < r + 1000; i++) s += (y[i] = expf(x[i] - 10.0f));
        y[r] = s;
    }
}
static void v_sigmoid(float *y, const float *x, size_t n) { cf_vsigmoid(y, x, n); }
static void v_tanh(float *y, const float *x, size_t n) { cf_vtanh(y, x, n); }
static void v_exp(float *y, const float *x, size_t n) { cf_vexp(y, x, n); }
static void v_log(float *y, const float *x, size_t n) { cf_vlog(y, x, n); }
static void v_softmax(float *y, const float *x, size_t n)
{
    for (size_t r = 0; r + 1000 <= n; r += 1000) y[r] = cf_vexp_sum(y + r, x + r, 10.0f, 1000);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median over RUNS of elements per second, each run at least 0.1 s of calls. */
static double rate(void (*fn)(float *, const float *, size_t), float *y, const float *x, size_t n)
{
    double r[RUNS];
    fn(y, x, n);   /* warm */
    for (int k = 0; k < RUNS; k++) {
        size_t calls = 0;
        double t0 = now(), t;
        do {
            fn(y, x, n);
            calls++;
        } while ((t = now()) - t0 < 0.1);
        r[k] = (double)calls * (double)n / (t - t0);
    }
    qsort(r, RUNS, sizeof r[0], cmp);
    return r[RUNS / 2];
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1u << 20;
    float *x = malloc(n * sizeof *x), *ax = malloc(n * sizeof *ax), *y = malloc(n * sizeof *y);
    if (!x || !ax || !y) return 1;
    unsigned long long s = 42;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((double)(s >> 40) / (double)(1u << 24) * 20 - 10);
        ax[i] = fabsf(x[i]);
    }
    struct { const char *name; void (*libm)(float *, const float *, size_t), (*vec)(float *, const float *, size_t); } f[] = {
        {"sigmoid", libm_sigmoid, v_sigmoid},
        {"tanh", libm_tanh, v_tanh},
        {"exp", libm_exp, v_exp},
        {"log", libm_log, v_log},
        {"softmax", libm_softmax, v_softmax},
    };
    printf("%zu floats in [-10, 10], 1 thread, median of %d runs; elements/s\n", n, RUNS);
    printf("%-8s %12s %12s %8s\n", "", "libm", "vmath", "speedup");
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
        const float *in = f[k].libm == libm_log ? ax : x;
        double a = rate(f[k].libm, y, in, n), b = rate(f[k].vec, y, in, n);
        printf("%-8s %12.3g %12.3g %7.2fx\n", f[k].name, a, b, b / a);
    }
    free(x);
    free(ax);
    free(y);
    return 0;
}
