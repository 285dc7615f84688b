/* test_conv_direct.c - conv2d's direct path (one group, any stride and dilation:
 * rt/dconv.h) against the definition, computed here in double: outputs, dx and dw for
 * shapes that reach every edge of its tiles (output positions and weight rows not a
 * multiple of a tile, a third of a tile or any vector; channels not a multiple of 8 or
 * 16, one vector of them or an odd number; padding as large as the kernel and larger,
 * a 1x1 kernel, one input channel), the widths of a small ResNet (28, 14, 7, 4) with
 * its strides, strides and dilations that differ between the directions, through the
 * backward that adds (x and w read by two convolutions), with each engine's kernels
 * and at 1 and 2 threads (the same bits). */
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "golden.h"
#include "test.h"

typedef struct shape {
    int B, C, H, W, O, KH, KW, ph, pw;
    int sh, sw, dh, dw;   /* stride, dilation */
} shape;

static const shape shapes[] = {
    {3, 1, 28, 28, 8, 5, 5, 0, 0, 1, 1, 1, 1},      /* the first layer of models/cnn.flux */
    {3, 8, 12, 12, 16, 5, 5, 0, 0, 1, 1, 1, 1},     /* its second */
    {2, 3, 7, 11, 5, 3, 3, 1, 1, 1, 1, 1, 1},       /* 77 positions, 5 channels out */
    {2, 5, 6, 5, 9, 3, 2, 2, 1, 1, 1, 1, 1},        /* 9 channels out, padding as large as the kernel's height */
    {2, 2, 4, 4, 3, 3, 3, 4, 3, 1, 1, 1, 1},        /* padding larger than the kernel */
    {2, 4, 5, 9, 17, 1, 1, 0, 0, 1, 1, 1, 1},       /* 1x1, 17 channels out: one or two vectors and one */
    {1, 13, 3, 20, 4, 2, 4, 0, 1, 1, 1, 1, 1},      /* K = 104 weight rows: whole tiles and a rest */
    {2, 2, 9, 9, 24, 3, 3, 1, 1, 1, 1, 1, 1},       /* three vectors of 8 channels */
    {3, 16, 28, 28, 16, 3, 3, 1, 1, 1, 1, 1, 1},    /* a small ResNet's layers: 784 positions, 16 channels */
    {3, 16, 28, 28, 32, 3, 3, 1, 1, 2, 2, 1, 1},    /* 28 -> 14 */
    {3, 16, 28, 28, 32, 1, 1, 0, 0, 2, 2, 1, 1},    /* its 1x1 projection */
    {2, 32, 14, 14, 64, 3, 3, 1, 1, 2, 2, 1, 1},    /* 14 -> 7 */
    {2, 64, 7, 7, 64, 3, 3, 1, 1, 1, 1, 1, 1},      /* 49 positions: four tiles and one short */
    {3, 5, 7, 7, 11, 3, 3, 1, 1, 2, 2, 1, 1},       /* 7 -> 4, channels not a multiple of 8 */
    {3, 20, 7, 7, 13, 1, 1, 0, 0, 2, 2, 1, 1},      /* 7 -> 4 by a 1x1 */
    {2, 9, 4, 4, 40, 3, 3, 1, 1, 1, 1, 1, 1},       /* width 4; 40 channels: a pair of vectors and one */
    {2, 3, 11, 13, 6, 3, 2, 2, 1, 3, 2, 2, 3},      /* stride and dilation differ by direction */
    {2, 18, 5, 6, 33, 2, 2, 0, 1, 1, 1, 2, 1},      /* dilation 2 along rows only */
    {2, 6, 9, 10, 8, 3, 3, 0, 0, 1, 1, 1, 1},       /* 3x3 unpadded, 8 out: windows reach the rows' ends */
    {2, 7, 10, 9, 35, 3, 3, 2, 2, 2, 1, 2, 2},      /* 3x3 (its unrolled taps) dilated 2, stride 2 down */
};
#define NSHAPES (int)(sizeof shapes / sizeof shapes[0])

static float at(const float *x, const shape *s, int b, int c, int i, int j)
{
    if (i < 0 || i >= s->H || j < 0 || j >= s->W) return 0;
    return x[(((size_t)b * s->C + c) * s->H + i) * s->W + j];
}

/* The output's height and width. */
static void out_size(const shape *s, int *OH, int *OW)
{
    *OH = (s->H + 2 * s->ph - s->dh * (s->KH - 1) - 1) / s->sh + 1;
    *OW = (s->W + 2 * s->pw - s->dw * (s->KW - 1) - 1) / s->sw + 1;
}

/* y, dx and dw of two convolutions of x by w whose outputs get head gradients r1, r2. */
static void reference(const shape *s, const float *x, const float *w, const float *r1, const float *r2, double *y,
                      double *dx, double *dw)
{
    int OH, OW;
    out_size(s, &OH, &OW);
    size_t nx = (size_t)s->B * s->C * s->H * s->W, nw = (size_t)s->O * s->C * s->KH * s->KW;
    memset(dx, 0, nx * sizeof *dx);
    memset(dw, 0, nw * sizeof *dw);
    for (int b = 0; b < s->B; b++)
        for (int o = 0; o < s->O; o++)
            for (int i = 0; i < OH; i++)
                for (int j = 0; j < OW; j++) {
                    size_t yi = (((size_t)b * s->O + o) * OH + i) * OW + j;
                    double acc = 0, r = (double)r1[yi] + r2[yi];
                    for (int c = 0; c < s->C; c++)
                        for (int ki = 0; ki < s->KH; ki++)
                            for (int kj = 0; kj < s->KW; kj++) {
                                size_t wi = (((size_t)o * s->C + c) * s->KH + ki) * s->KW + kj;
                                int hi = i * s->sh + ki * s->dh - s->ph;
                                int wj = j * s->sw + kj * s->dw - s->pw;
                                acc += (double)w[wi] * at(x, s, b, c, hi, wj);
                                dw[wi] += r * at(x, s, b, c, hi, wj);
                                if (hi >= 0 && hi < s->H && wj >= 0 && wj < s->W)
                                    dx[(((size_t)b * s->C + c) * s->H + hi) * s->W + wj] += r * w[wi];
                            }
                    y[yi] = acc;
                }
}

static int close_all(const char *what, const float *got, const double *want, size_t n)
{
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= 1e-4 * fabs(want[i]) + 1e-4)) {
            if (bad++ < 3) fprintf(stderr, "  %s[%zu]: %.7g, want %.7g\n", what, i, got[i], want[i]);
        }
    return bad;
}

/* Runs shape s; returns y, dx and dw (malloc'd, for the bitwise comparison). */
static void run_shape(const shape *s, float **keep)
{
    int ia[7] = {s->sh, s->sw, s->ph, s->pw, s->dh, s->dw, 1};
    cf_model *m = cf_model_new();
    cf_node *in[2];
    in[0] = cf_input(m, "x", CF_SHAPE(s->C, s->H, s->W));
    in[1] = cf_param(m, "w", CF_SHAPE(s->O, s->C, s->KH, s->KW), CF_ZEROS);
    cf_output(m, cf_op_at(m, CF_OP_CONV2D, 2, in, ia, 7, NULL, 0, __FILE__, __LINE__, 0));
    cf_output(m, cf_op_at(m, CF_OP_CONV2D, 2, in, ia, 7, NULL, 0, __FILE__, __LINE__, 0));
    CHECK(cf_model_init_params(m) == 0);
    cf_exec *e = cf_bind(m, s->B, CF_INPUT_GRADS);
    CHECK(e != NULL);
    if (!e) {
        fprintf(stderr, "%s\n", cf_last_error());
        cf_model_free(m);
        return;
    }
    size_t nx, ny, nw = (size_t)s->O * s->C * s->KH * s->KW;
    float *w = cf_model_param_data(m, 0), *x = cf_exec_input(e, 0, &nx);
    for (size_t i = 0; i < nw; i++) w[i] = golden_sym();
    for (size_t i = 0; i < nx; i++) x[i] = golden_sym();
    CHECK(cf_forward(e, 1) == 0);
    float *r[2];
    for (int o = 0; o < 2; o++) {
        r[o] = cf_exec_output_grad(e, o, &ny);
        for (size_t i = 0; i < ny; i++) r[o][i] = golden_sym();
    }
    cf_model_zero_grad(m);
    CHECK(cf_backward(e) == 0);
    double *y = malloc(ny * sizeof *y), *dx = malloc(nx * sizeof *dx), *dw = malloc(nw * sizeof *dw);
    reference(s, x, w, r[0], r[1], y, dx, dw);
    CHECK(close_all("y", cf_exec_output(e, 0, NULL), y, ny) == 0);
    CHECK(memcmp(cf_exec_output(e, 0, NULL), cf_exec_output(e, 1, NULL), ny * sizeof(float)) == 0);
    CHECK(close_all("dx", cf_exec_input_grad(e, 0, NULL), dx, nx) == 0);
    CHECK(close_all("dw", cf_model_param_grad(m, 0), dw, nw) == 0);
    const float *src[3] = {cf_exec_output(e, 0, NULL), cf_exec_input_grad(e, 0, NULL), cf_model_param_grad(m, 0)};
    size_t n[3] = {ny, nx, nw};
    for (int i = 0; i < 3; i++) {
        keep[i] = malloc(n[i] * sizeof(float));
        memcpy(keep[i], src[i], n[i] * sizeof(float));
    }
    free(y), free(dx), free(dw);
    cf_exec_free(e);
    cf_model_free(m);
}

/* Each shape at 1 thread, then at 2 (compared bit for bit), with one engine. */
static void run_engine(const char *engine, int threads)
{
    if (threads != 1) return;   /* this runs both */
    CHECK(cf_set_gemm(engine) == 0);
    float *ref[NSHAPES][3];
    for (int t = 1; t <= 2; t++) {
        cf_set_threads(t);
        golden_state = 4242;
        for (int i = 0; i < NSHAPES; i++) {
            float *got[3];
            run_shape(&shapes[i], t == 1 ? ref[i] : got);
            if (t == 1) continue;
            const shape *s = &shapes[i];
            int OH, OW;
            out_size(s, &OH, &OW);
            size_t n[3] = {(size_t)s->B * s->O * OH * OW, (size_t)s->B * s->C * s->H * s->W,
                           (size_t)s->O * s->C * s->KH * s->KW};
            for (int j = 0; j < 3; j++) {
                CHECK(memcmp(got[j], ref[i][j], n[j] * sizeof(float)) == 0);
                free(got[j]), free(ref[i][j]);
            }
        }
    }
    cf_set_threads(0);
    cf_set_gemm(NULL);
}

TEST(direct_against_definition) { CHECK(golden_each_engine(run_engine) >= 1); }

int main(void)
{
    RUN(direct_against_definition);
    return test_summary("conv_direct");
}
