/* dconv_bench.c - GFLOP/s of the direct convolution kernels (src/rt/dconv.h) on one
 * image of each 3x3 layer of models/resnet.flux, one thread: the forward, the
 * weights' gradient and the input's gradient by scatter (the kernels a stride-2
 * layer's backward runs; at stride 1 the input's gradient is the forward kernel over
 * the output's gradient). The best of 15 runs of 10 calls each, on data that stays in
 * cache: what the kernels can do, not what a training step gets from them. Not a
 * test; nothing runs it.
 *
 *   build/bench_dconv [portable|avx2|avx512]   (default: the one cflux would pick) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt/dconv.h"

enum { RUNS = 15, CALLS = 10 };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float *buffer(size_t n)
{
    float *p = aligned_alloc(64, (n * sizeof *p + 63) / 64 * 64);
    if (!p) exit(1);
    for (size_t i = 0; i < n; i++) p[i] = (float)(rand() % 100) / 100.0f;
    return p;
}

typedef struct {
    const cf_dconv_impl *im;
    const cf_dconv_geom *g;
    float *xp, *wp, *yT, *dw, *wt, *dx;
} bufs;

/* Seconds of one call of kernel k (0 forward, 1 dw, 2 dx by scatter): the best run. */
static double best(const bufs *b, int k)
{
    double t = 1e30;
    for (int r = 0; r < RUNS; r++) {
        double t0 = now();
        for (int c = 0; c < CALLS; c++)
            if (k == 0) b->im->forward(b->g, b->xp, b->wp, b->yT);
            else if (k == 1) b->im->weight_grad(b->g, b->xp, b->yT, b->dw, 1);
            else b->im->input_grad(b->g, b->yT, b->wt, b->dx);
        double d = (now() - t0) / CALLS;
        if (d < t) t = d;
    }
    return t;
}

int main(int argc, char **argv)
{
    const cf_dconv_impl *im = cf_dconv_pick();
    const char *which = argc > 1 ? argv[1] : "picked";
    if (!strcmp(which, "portable")) im = &cf_dconv_portable;
#if defined(__x86_64__)
    else if (!strcmp(which, "avx2")) im = &cf_dconv_avx2;
    else if (!strcmp(which, "avx512")) im = &cf_dconv_avx512;
#endif
    /* in channels, out channels, input side, stride: the stem, then each stage */
    static const int layers[][4] = {{1, 32, 28, 1},  {32, 32, 28, 1},  {32, 64, 28, 2},
                                    {64, 64, 14, 1}, {64, 128, 14, 2}, {128, 128, 7, 1}};
    printf("direct convolution kernels (%s), 3x3, pad 1, one image, one thread, GFLOP/s:\n", which);
    for (size_t l = 0; l < sizeof layers / sizeof layers[0]; l++) {
        int C = layers[l][0], O = layers[l][1], H = layers[l][2], s = layers[l][3], OH = (H - 1) / s + 1;
        cf_dconv_geom g = {C, H + 2, H + 2, O, 3, 3, OH, OH, s, s, 1, 1};
        size_t K = (size_t)C * 9, P = (size_t)OH * OH, Or = (size_t)cf_dconv_or(O), Cr = (size_t)cf_dconv_or(C);
        bufs b = {im, &g, buffer((size_t)C * (H + 2) * (H + 2)), buffer(K * Or), buffer((P + CF_DCONV_QPAD) * Or),
                  buffer(K * Or), buffer(9 * (size_t)O * Cr), buffer((size_t)(H + 2) * (H + 2) * Cr)};
        double flop = 2.0 * O * K * P;
        printf("  %3d -> %3d, %2dx%-2d stride %d: forward %6.1f  dw %6.1f  dx (scatter) %6.1f\n", C, O, H, H, s,
               flop / best(&b, 0) * 1e-9, flop / best(&b, 1) * 1e-9, flop / best(&b, 2) * 1e-9);
        free(b.xp), free(b.wp), free(b.yT), free(b.dw), free(b.wt), free(b.dx);
    }
    return 0;
}
