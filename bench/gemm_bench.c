/* gemm_bench.c - every matrix-product engine of this build and CPU on the MLP's
 * products and two squares, one thread, in GFLOP/s and as a share of one core's
 * measured FMA peak (cf_cpu_peak_gflops). A benchmark, not a test.
 *
 *   build/bench_gemm [--openblas-coretype]    (make builds it)
 *
 * The engines run alternately on each shape (so machine noise hits all alike); each
 * sample times enough calls to last ~20 ms, and the median of the samples is
 * reported. Run it as OPENBLAS_CORETYPE=Prescott build/bench_gemm to see OpenBLAS at
 * its generic fallback. It checks only that the engines agree roughly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cflux.h"

enum { SAMPLES = 9, MAXE = 4 };

typedef struct { const char *name; int ta, tb, M, N, K; } shape_t;

/* the public API has no raw GEMM: time a one-product model, x (M x K) * W (K x N) */
typedef struct {
    cf_model *m;
    cf_exec *e;
} product;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int product_make(product *p, const shape_t *s)
{
    p->m = cf_model_new();
    cf_node *x = cf_input(p->m, "x", CF_SHAPE(s->K));
    cf_node *W = cf_param(p->m, "W", CF_SHAPE(s->K, s->N), CF_GLOROT);
    cf_output(p->m, cf_matmul(p->m, x, W));
    if (cf_model_init_params(p->m) || !(p->e = cf_bind(p->m, s->M, 0))) return -1;
    size_t n;
    float *in = cf_exec_input(p->e, 0, &n);
    for (size_t i = 0; i < n; i++) in[i] = (float)((i * 2654435761u) >> 8 & 0xffff) / 65536.0f - 0.5f;
    return 0;
}

/* Seconds per forward (one product), over reps calls. */
static double time_calls(product *p, int reps)
{
    double t0 = now();
    for (int r = 0; r < reps; r++) cf_forward(p->e, 0);
    return (now() - t0) / reps;
}

int main(void)
{
    /* the MLP's products at batch 64 and 1000 (forward), and two squares; the
       transposed ones of backward run through the same kernels after packing */
    static const shape_t shapes[] = {
        {"64x128x784 (fwd 1)", 0, 0, 64, 128, 784},  {"64x64x128 (fwd 2)", 0, 0, 64, 64, 128},
        {"64x10x64 (fwd 3)", 0, 0, 64, 10, 64},      {"1000x128x784 (infer)", 0, 0, 1000, 128, 784},
        {"1x128x784 (latency)", 0, 0, 1, 128, 784},  {"256 square", 0, 0, 256, 256, 256},
        {"512 square", 0, 0, 512, 512, 512},
    };
    static const char *all[] = {"builtin-avx512", "builtin-avx2", "builtin-portable", "openblas"};
    const char *eng[MAXE], *label[MAXE];
    static char labels[MAXE][48];
    int ne = 0;
    cf_set_threads(1);
    for (int i = 0; i < 4; i++)
        if (cf_set_gemm(all[i]) == 0) {
            eng[ne] = all[i];
            snprintf(labels[ne], sizeof labels[ne], "%s", cf_gemm_name());
            label[ne] = labels[ne];
            ne++;
        }
    double peak = cf_cpu_peak_gflops();
    printf("%s (%s); one core's measured FMA peak %.1f GFLOP/s; GFLOP/s (%% of peak):\n", cf_cpu_name(),
           cf_cpu_isa(), peak);
    printf("%-22s", "M x N x K");
    for (int w = 0; w < ne; w++) printf(" %18s", label[w]);
    printf("\n");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const shape_t *s = &shapes[i];
        product p = {0};
        if (product_make(&p, s)) {
            fprintf(stderr, "%s\n", cf_last_error());
            return 1;
        }
        size_t nc = (size_t)s->M * s->N;
        float *first = malloc(nc * sizeof *first);
        double maxdiff = 0, flops = 2.0 * s->M * s->N * s->K, t[MAXE][SAMPLES];
        int reps[MAXE];
        for (int w = 0; w < ne; w++) {
            cf_set_gemm(eng[w]);
            cf_forward(p.e, 0);
            const float *y = cf_exec_output(p.e, 0, NULL);
            if (w == 0) memcpy(first, y, nc * sizeof *first);
            for (size_t j = 0; j < nc; j++) maxdiff = fmax(maxdiff, fabs(first[j] - y[j]));
            reps[w] = (int)(0.02 / fmax(time_calls(&p, 1), 1e-7)) + 1;
        }
        for (int k = 0; k < SAMPLES; k++)
            for (int w = 0; w < ne; w++) {
                cf_set_gemm(eng[w]);
                t[w][k] = time_calls(&p, reps[w]);
            }
        printf("%-22s", s->name);
        for (int w = 0; w < ne; w++) {
            qsort(t[w], SAMPLES, sizeof(double), cmp_double);
            double g = flops / t[w][SAMPLES / 2] * 1e-9;
            printf(" %11.1f (%3.0f%%)", g, 100 * g / peak);
        }
        printf("%s\n", maxdiff > 1e-3 ? "  (results differ!)" : "");
        free(first);
        cf_exec_free(p.e);
        cf_model_free(p.m);
    }
    return 0;
}
