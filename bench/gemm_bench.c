/* gemm_bench.c - the built-in GEMM against single-threaded OpenBLAS, in GFLOP/s.
 *
 * Build and run from the repository root:
 *   gcc -std=gnu11 -O2 -Isrc bench/gemm_bench.c src/rt/gemm_builtin.c \
 *       $(pkg-config --cflags --libs openblas) -lm -o /tmp/gemm_bench && /tmp/gemm_bench
 *
 * For each shape the two implementations run alternately (so machine noise hits
 * both alike); each sample times enough repetitions to last ~20 ms, and the
 * median of the samples is reported. A benchmark, not a test: it checks only that
 * the two agree roughly. */
#include "rt/gemm_builtin.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void openblas_set_num_threads(int);

enum { SAMPLES = 9 };

typedef struct { const char *name; int ta, tb, M, N, K; } shape_t;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void run(int which, const shape_t *s, const float *A, const float *B, float *C)
{
    int lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N;
    if (which == 0)
        cf_gemm_builtin(s->ta, s->tb, s->M, s->N, s->K, 1, A, lda, B, ldb, 0, C, s->N);
    else
        cblas_sgemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans,
                    s->tb ? CblasTrans : CblasNoTrans, s->M, s->N, s->K, 1, A, lda,
                    B, ldb, 0, C, s->N);
}

/* Seconds per call, timing reps calls. */
static double time_calls(int which, const shape_t *s, int reps, const float *A,
                         const float *B, float *C)
{
    double t0 = now();
    for (int r = 0; r < reps; r++) run(which, s, A, B, C);
    return (now() - t0) / reps;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    static const shape_t shapes[] = {
        {"NN  64x128x784 (fwd)", 0, 0, 64, 128, 784},
        {"NN  64x64x128", 0, 0, 64, 64, 128},
        {"NT  64x784x128 (dX)", 0, 1, 64, 784, 128},
        {"TN  784x128x64 (dW)", 1, 0, 784, 128, 64},
        {"NN  256 square", 0, 0, 256, 256, 256},
        {"NN  512 square", 0, 0, 512, 512, 512},
    };
    openblas_set_num_threads(1);
    printf("%-24s %10s %10s %7s\n", "shape (M x N x K)", "builtin", "openblas", "ratio");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const shape_t *s = &shapes[i];
        size_t na = (size_t)s->M * s->K, nb = (size_t)s->K * s->N, nc = (size_t)s->M * s->N;
        float *A = malloc(na * sizeof(float)), *B = malloc(nb * sizeof(float));
        float *C0 = malloc(nc * sizeof(float)), *C1 = malloc(nc * sizeof(float));
        unsigned x = 12345;
        for (size_t j = 0; j < na; j++) A[j] = (float)((x = x * 1664525u + 1013904223u) >> 8) / (1 << 24) - 0.5f;
        for (size_t j = 0; j < nb; j++) B[j] = (float)((x = x * 1664525u + 1013904223u) >> 8) / (1 << 24) - 0.5f;
        run(0, s, A, B, C0);
        run(1, s, A, B, C1);
        double maxdiff = 0;
        for (size_t j = 0; j < nc; j++) maxdiff = fmax(maxdiff, fabs(C0[j] - C1[j]));

        double flops = 2.0 * s->M * s->N * s->K;
        int reps = (int)(0.02 / fmax(time_calls(1, s, 1, A, B, C1), 1e-7)) + 1;
        double t[2][SAMPLES];
        for (int k = 0; k < SAMPLES; k++)
            for (int w = 0; w < 2; w++) t[w][k] = time_calls(w, s, reps, A, B, w ? C1 : C0);
        qsort(t[0], SAMPLES, sizeof(double), cmp_double);
        qsort(t[1], SAMPLES, sizeof(double), cmp_double);
        double g0 = flops / t[0][SAMPLES / 2] * 1e-9, g1 = flops / t[1][SAMPLES / 2] * 1e-9;
        printf("%-24s %10.1f %10.1f %6.0f%%%s\n", s->name, g0, g1, 100 * g0 / g1,
               maxdiff > 1e-3 ? "  (results differ!)" : "");
        free(A); free(B); free(C0); free(C1);
    }
    return 0;
}
