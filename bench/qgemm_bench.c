/* qgemm_bench.c - the 8-bit product's kernels (rt/qgemm.h) on the MLP's and the
 * CNN's products, one thread, in integer GOP/s (2 per multiply-add) and as a share
 * of the kernel's instruction peak on one core, measured here with chains of
 * independent vpdpbusd (or vpmaddubsw, vpmaddwd, vpaddd), beside the float32 GEMM on
 * the same shape. A benchmark, not a test.
 *
 *   build/bench_qgemm
 *
 * Each sample times enough calls to last ~20 ms; the median of 9 samples, the kernels
 * alternating. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <immintrin.h>

#include "cflux.h"
#include "rt/gemm.h"
#include "rt/pool.h"
#include "rt/qgemm.h"

enum { SAMPLES = 9 };

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

volatile int sink;

/* Peak integer multiply-adds per second of one core: 12 chains of the kernel's inner
   instruction(s) on 64 (512-bit) or 32 (256-bit) byte pairs each. */
#define CHAINS 12
__attribute__((target("avx512f,avx512vnni"))) static double peak_avx512vnni(long n)
{
    __m512i acc[CHAINS], a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
    for (int i = 0; i < CHAINS; i++) acc[i] = _mm512_set1_epi32(i);
    double t = now();
    for (long k = 0; k < n; k++) {
        _Pragma("GCC unroll 12") for (int i = 0; i < CHAINS; i++) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
        __asm__ volatile("" : "+v"(a));
    }
    t = now() - t;
    for (int i = 1; i < CHAINS; i++) acc[0] = _mm512_add_epi32(acc[0], acc[i]);
    sink = _mm_cvtsi128_si32(_mm512_castsi512_si128(acc[0]));
    return (double)n * CHAINS * 64 / t;
}
__attribute__((target("avx2,avxvnni"))) static double peak_avxvnni(long n)
{
    __m256i acc[CHAINS], a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2);
    for (int i = 0; i < CHAINS; i++) acc[i] = _mm256_set1_epi32(i);
    double t = now();
    for (long k = 0; k < n; k++) {
        _Pragma("GCC unroll 12") for (int i = 0; i < CHAINS; i++) acc[i] = _mm256_dpbusd_avx_epi32(acc[i], a, b);
        __asm__ volatile("" : "+v"(a));
    }
    t = now() - t;
    for (int i = 1; i < CHAINS; i++) acc[0] = _mm256_add_epi32(acc[0], acc[i]);
    sink = _mm_cvtsi128_si32(_mm256_castsi256_si128(acc[0]));
    return (double)n * CHAINS * 32 / t;
}
__attribute__((target("avx2"))) static double peak_avx2(long n)
{
    __m256i acc[CHAINS], a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2), one = _mm256_set1_epi16(1);
    for (int i = 0; i < CHAINS; i++) acc[i] = _mm256_set1_epi32(i);
    double t = now();
    for (long k = 0; k < n; k++) {
        _Pragma("GCC unroll 12") for (int i = 0; i < CHAINS; i++)
            acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), one));
        __asm__ volatile("" : "+v"(a));
    }
    t = now() - t;
    for (int i = 1; i < CHAINS; i++) acc[0] = _mm256_add_epi32(acc[0], acc[i]);
    sink = _mm_cvtsi128_si32(_mm256_castsi256_si128(acc[0]));
    return (double)n * CHAINS * 32 / t;
}

/* Multiply-adds per second of one core for the kernel im (0: not measured). */
static double peak_of(const cf_qgemm_impl *im)
{
    double best = 0;
    for (int r = 0; r < 5; r++) {
        double v = strcmp(im->name, "avx512-vnni") == 0 ? peak_avx512vnni(2000000)
                   : strcmp(im->name, "avx-vnni") == 0  ? peak_avxvnni(2000000)
                   : strcmp(im->name, "avx2") == 0      ? peak_avx2(2000000)
                                                         : 0;
        best = v > best ? v : best;
    }
    return best;
}

typedef struct { const char *name; int M, N, K; } shape_t;

int main(void)
{
    static const shape_t shapes[] = {
        {"mlp layer 1 (batch 1000)", 1000, 128, 784}, {"mlp layer 2 (batch 1000)", 1000, 64, 128},
        {"mlp layer 1 (batch 1)", 1, 128, 784},       {"cnn conv2 (one image)", 196, 64, 288},
        {"cnn dense (batch 1000)", 1000, 128, 3136},  {"square 1024", 1024, 1024, 1024},
    };
    static const char *const names[] = {"avx512-vnni", "avx-vnni", "avx2", "portable"};
    cf_set_threads(1);
    printf("cpu: %s (%s); one thread; integer kernel by default: %s (%s)\n", cf_cpu_name(), cf_cpu_isa(),
           cf_qgemm_name(), cf_qgemm_why());
    const cf_qgemm_impl *ims[4];
    double peaks[4];
    int nim = 0;
    for (int i = 0; i < 4; i++)
        if ((ims[nim] = cf_qgemm_impl_named(names[i]))) {
            peaks[nim] = peak_of(ims[nim]);
            if (peaks[nim] > 0) printf("peak of %s: %.1f GOP/s (2 per multiply-add)\n", names[i], 2e-9 * peaks[nim]);
            nim++;
        }
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const shape_t *sh = &shapes[s];
        int M = sh->M, N = sh->N, K = sh->K;
        float *A = malloc((size_t)M * K * 4), *Wf = malloc((size_t)K * N * 4), *C = malloc((size_t)M * N * 4),
              *sc = malloc((size_t)N * 4), *bias = calloc((size_t)N, 4);
        int8_t *W = malloc((size_t)K * N);
        for (int i = 0; i < M * K; i++) A[i] = (float)((i * 7919) % 1000) / 1000;
        for (int i = 0; i < K * N; i++) W[i] = (int8_t)((i * 31) % 255 - 127), Wf[i] = W[i] / 127.0f;
        for (int j = 0; j < N; j++) sc[j] = 1.0f / 127;
        void *wb[4], *ws[4];
        cf_qweights qw[4];
        for (int i = 0; i < nim; i++) {
            wb[i] = malloc(cf_qweights_bytes(ims[i], K, N));
            cf_qweights_pack(&qw[i], ims[i], K, N, W, N, 1, sc, wb[i]);
            ws[i] = aligned_alloc(64, (cf_qgemm_ws_bytes(&qw[i], M) + 63) / 64 * 64);
        }
        double t[5][SAMPLES];
        cf_gemm_ep ep = {bias, 1};
        cf_qact dyn = {1, 0, 0};
        for (int smp = 0; smp < SAMPLES; smp++)
            for (int i = 0; i <= nim; i++) {
                int reps = 0;
                double t0 = now(), el;
                do {
                    if (i == nim) cf_gemm_ep_run(0, 0, M, N, K, 1, A, K, Wf, N, 0, C, N, &ep);
                    else cf_qgemm(&qw[i], M, A, K, &dyn, C, N, &ep, ws[i]);
                    reps++;
                } while ((el = now() - t0) < 0.02);
                t[i][smp] = el / reps;
            }
        printf("%s, %d x %d x %d:\n", sh->name, M, N, K);
        double ops = 2.0 * M * N * K;
        for (int i = 0; i <= nim; i++) {
            qsort(t[i], SAMPLES, sizeof(double), cmp);
            double g = ops / t[i][SAMPLES / 2] * 1e-9;
            if (i == nim) printf("  float32 %-13s %8.1f GFLOP/s  %9.1f us\n", "", g, 1e6 * t[i][SAMPLES / 2]);
            else if (peaks[i] > 0)
                printf("  int8 %-16s %8.1f GOP/s    %9.1f us  (%.0f%% of its peak)\n", ims[i]->name, g,
                       1e6 * t[i][SAMPLES / 2], 100 * g / (2e-9 * peaks[i]));
            else printf("  int8 %-16s %8.1f GOP/s    %9.1f us\n", ims[i]->name, g, 1e6 * t[i][SAMPLES / 2]);
        }
        for (int i = 0; i < nim; i++) free(wb[i]), free(ws[i]);
        free(A), free(Wf), free(C), free(sc), free(bias), free(W);
    }
    return 0;
}
