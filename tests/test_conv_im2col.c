/* test_conv_im2col.c - conv2d at a batch larger than its backward's chunks: the
 * samples are split into at most 16 chunks (ops/conv.c), and a batch of 37 gives
 * chunks of 2 and 3 samples, so that a chunk that lost a sample, or a partial dw
 * summed short, shows. Output, dx and dw against the definition computed here in
 * double, with stride 2 and dilation 2 (the direct path) and 2 groups (im2col), the
 * last also with a stride and a dilation, so that im2col's own are tested. */
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "golden.h"
#include "test.h"

#define BATCH 37   /* more than 16 chunks' worth, and not a multiple of 16 */

typedef struct {
    const char *name;
    int C, H, W, O, KH, KW;
    int ia[7];   /* stride h, w, pad h, w, dilation h, w, groups */
} config;

static const config configs[] = {
    {"stride2", 3, 9, 8, 4, 3, 3, {2, 2, 1, 1, 1, 1, 1}},
    {"dil2", 2, 8, 9, 3, 3, 2, {1, 1, 2, 1, 2, 2, 1}},
    {"groups2", 4, 6, 7, 6, 3, 3, {1, 1, 1, 1, 1, 1, 2}},
    {"groups2s2d2", 4, 9, 8, 6, 3, 3, {2, 2, 1, 2, 2, 2, 2}},
};
#define NCONFIGS (int)(sizeof configs / sizeof configs[0])

typedef struct {
    int B, C, H, W, O, KH, KW, Cg, Og, sh, sw, ph, pw, dh, dw, G, OH, OW;
} geom;

static geom geom_of(const config *c)
{
    geom g = {BATCH, c->C, c->H, c->W, c->O, c->KH, c->KW, 0, 0, c->ia[0], c->ia[1], c->ia[2], c->ia[3],
              c->ia[4], c->ia[5], c->ia[6], 0, 0};
    g.Cg = g.C / g.G, g.Og = g.O / g.G;
    g.OH = (g.H + 2 * g.ph - g.dh * (g.KH - 1) - 1) / g.sh + 1;
    g.OW = (g.W + 2 * g.pw - g.dw * (g.KW - 1) - 1) / g.sw + 1;
    return g;
}

/* y (B, O, OH, OW), dx (B, C, H, W) and dw (O, Cg, KH, KW) of y = conv(x, w) with head
 * gradient r, by the definition: y[b, o, i, j] = sum over the group's channels c and
 * taps (ki, kj) of w[o, c, ki, kj] x[b, g Cg + c, i sh - ph + ki dh, j sw - pw + kj dw]. */
static void reference(const geom *g, const float *x, const float *w, const float *r, double *y, double *dx,
                      double *dw)
{
    memset(dx, 0, (size_t)g->B * g->C * g->H * g->W * sizeof *dx);
    memset(dw, 0, (size_t)g->O * g->Cg * g->KH * g->KW * sizeof *dw);
    for (int b = 0; b < g->B; b++)
        for (int o = 0; o < g->O; o++)
            for (int i = 0; i < g->OH; i++)
                for (int j = 0; j < g->OW; j++) {
                    size_t yi = (((size_t)b * g->O + o) * g->OH + i) * g->OW + j;
                    double acc = 0;
                    for (int c = 0; c < g->Cg; c++)
                        for (int ki = 0; ki < g->KH; ki++)
                            for (int kj = 0; kj < g->KW; kj++) {
                                int hi = i * g->sh - g->ph + ki * g->dh, wj = j * g->sw - g->pw + kj * g->dw;
                                if (hi < 0 || hi >= g->H || wj < 0 || wj >= g->W) continue;
                                int ch = o / g->Og * g->Cg + c;
                                size_t wi = (((size_t)o * g->Cg + c) * g->KH + ki) * g->KW + kj;
                                size_t xi = (((size_t)b * g->C + ch) * g->H + hi) * g->W + wj;
                                acc += (double)w[wi] * x[xi];
                                dw[wi] += (double)r[yi] * x[xi];
                                dx[xi] += (double)r[yi] * w[wi];
                            }
                    y[yi] = acc;
                }
}

/* |got - want| <= 1e-4 (|want| + 1) for each element; the mismatches, the first few
 * printed with the sample they belong to (n / B elements a sample). */
static int compare(const char *cfg, const char *what, const float *got, const double *want, size_t n, size_t per)
{
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= 1e-4 * (fabs(want[i]) + 1)))
            if (bad++ < 3)
                fprintf(stderr, "  %s %s[%zu] (sample %zu): %.7g, want %.7g\n", cfg, what, i, i / per, got[i],
                        want[i]);
    if (bad) fprintf(stderr, "  %s %s: %d of %zu elements differ\n", cfg, what, bad, n);
    return bad;
}

static void run_config(const config *c)
{
    geom g = geom_of(c);
    cf_model *m = cf_model_new();
    cf_node *in[2];
    in[0] = cf_input(m, "x", CF_SHAPE(c->C, c->H, c->W));
    in[1] = cf_param(m, "w", CF_SHAPE(c->O, g.Cg, c->KH, c->KW), CF_ZEROS);
    cf_output(m, cf_op_at(m, CF_OP_CONV2D, 2, in, c->ia, 7, NULL, 0, __FILE__, __LINE__, 0));
    CHECK(cf_model_init_params(m) == 0);
    cf_exec *e = cf_bind(m, BATCH, CF_INPUT_GRADS);
    CHECK(e != NULL);
    if (!e) {
        fprintf(stderr, "%s: %s\n", c->name, cf_last_error());
        cf_model_free(m);
        return;
    }
    size_t nx, ny, nw = (size_t)g.O * g.Cg * g.KH * g.KW;
    float *w = cf_model_param_data(m, 0), *x = cf_exec_input(e, 0, &nx);
    for (size_t i = 0; i < nw; i++) w[i] = golden_sym();
    for (size_t i = 0; i < nx; i++) x[i] = golden_sym();
    float *r = cf_exec_output_grad(e, 0, &ny);
    CHECK(ny == (size_t)g.B * g.O * g.OH * g.OW);
    for (size_t i = 0; i < ny; i++) r[i] = golden_sym();
    cf_model_zero_grad(m);
    CHECK(cf_forward(e, 1) == 0 && cf_backward(e) == 0);
    double *y = malloc(ny * sizeof *y), *dx = malloc(nx * sizeof *dx), *dw = malloc(nw * sizeof *dw);
    reference(&g, x, w, r, y, dx, dw);
    CHECK(compare(c->name, "y", cf_exec_output(e, 0, NULL), y, ny, ny / BATCH) == 0);
    CHECK(compare(c->name, "dx", cf_exec_input_grad(e, 0, NULL), dx, nx, nx / BATCH) == 0);
    CHECK(compare(c->name, "dw", cf_model_param_grad(m, 0), dw, nw, nw) == 0);
    free(y), free(dx), free(dw);
    cf_exec_free(e);
    cf_model_free(m);
}

/* Every configuration at 1 and 2 threads (the chunks depend on the batch alone). */
TEST(batch_of_37_against_definition)
{
    golden_state = 3737;
    for (int threads = 1; threads <= 2; threads++) {
        cf_set_threads(threads);
        for (int i = 0; i < NCONFIGS; i++) run_config(&configs[i]);
    }
    cf_set_threads(0);
}

int main(void)
{
    RUN(batch_of_37_against_definition);
    return test_summary("conv_im2col");
}
