/* peak.c - cf_cpu_peak_gflops: one core's float32 multiply-add throughput, measured
 * with the widest vectors this CPU runs: chains of independent fused multiply-adds
 * (mul + add without FMA), enough of them to cover the latency of every FMA unit. */
#include <time.h>

#include "cflux.h"
#include "rt/cpu.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Runs n rounds of CHAINS independent vector FMAs; returns a value that depends on
   all of them so none is optimised away. */
#define CHAINS 12
#define PEAK_FN(fname, attr, VW)                                                      \
    attr static float fname(long n)                                                   \
    {                                                                                 \
        typedef float v __attribute__((vector_size(VW * sizeof(float))));            \
        v acc[CHAINS], x = (v){0} + 0.999999f, y = (v){0} + 1e-7f;                   \
        for (int i = 0; i < CHAINS; i++) acc[i] = (v){0} + (float)i;                 \
        for (long k = 0; k < n; k++) {                                                \
            _Pragma("GCC unroll 12") for (int i = 0; i < CHAINS; i++) acc[i] = acc[i] * x + y; \
        }                                                                             \
        v s = acc[0];                                                                 \
        for (int i = 1; i < CHAINS; i++) s += acc[i];                                 \
        return s[0];                                                                  \
    }

PEAK_FN(peak_base, , 4)
#if defined(__x86_64__)
PEAK_FN(peak_avx2, __attribute__((target("avx2,fma"))), 8)
PEAK_FN(peak_avx512, __attribute__((target("avx512f,fma"))), 16)
#endif

volatile float cf_peak_sink;

double cf_cpu_peak_gflops(void)
{
    float (*fn)(long) = peak_base;
    int vw = 4;
#if defined(__x86_64__)
    const cf_cpu_info *c = cf_cpu();
    if (cf_cpu_avx512(c)) fn = peak_avx512, vw = 16;
    else if (cf_cpu_avx2(c)) fn = peak_avx2, vw = 8;
#endif
    /* the best of several short runs: a run the scheduler interrupted reads low */
    double best = 0;
    long n = 1 << 16;
    for (int r = 0; r < 7; r++) {
        double t = now();
        cf_peak_sink = fn(n);
        t = now() - t;
        if (t < 0.005) {   /* too short to time: lengthen, and do not count it */
            n *= 4;
            r--;
            continue;
        }
        double g = (double)n * CHAINS * vw * 2 / t * 1e-9;
        if (g > best) best = g;
    }
    return best;
}
