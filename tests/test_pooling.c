/* test_pooling.c - what the golden and gradient tests do not show of pooling: the
 * shape rule's refusals, with their messages, and results that do not depend on the
 * thread count. */
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "test.h"

/* Bind a model of one pooling of x (per-sample shape s) and return the error, or NULL
 * when it binds. */
static const char *bind_error(cf_shape s, cf_opcode op, const int *a)
{
    static char msg[512];
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", s);
    cf_output(m, op == CF_OP_GLOBALAVGPOOL ? cf_globalavgpool(m, x)
                                           : cf_op_at(m, op, 1, &x, a, 6, NULL, 0, __FILE__, __LINE__, 0));
    cf_exec *e = cf_bind(m, 2, 0);
    const char *r = NULL;
    if (!e) {
        snprintf(msg, sizeof msg, "%s", cf_last_error());
        r = msg;
    }
    cf_exec_free(e);
    cf_model_free(m);
    return r;
}

TEST(shape_errors)
{
    static const int k3s2[6] = {3, 3, 2, 2, 0, 0};
    CHECK(bind_error(CF_SHAPE(3, 7, 9), CF_OP_MAXPOOL, k3s2) == NULL);
    CHECK_HAS(bind_error(CF_SHAPE(7, 9), CF_OP_MAXPOOL, k3s2), "got (B, 7, 9), of rank 3");
    CHECK_HAS(bind_error(CF_SHAPE(2, 3, 7, 9), CF_OP_AVGPOOL, k3s2), "of rank 5");
    CHECK_HAS(bind_error(CF_SHAPE(7, 9), CF_OP_GLOBALAVGPOOL, NULL), "global average pooling needs an image batch");
    /* a window larger than the (padded) input */
    static const int k8[6] = {8, 3, 1, 1, 0, 0}, k8p1[6] = {8, 3, 1, 1, 1, 0};
    CHECK_HAS(bind_error(CF_SHAPE(3, 7, 9), CF_OP_MAXPOOL, k8), "window is larger than the input (B, 3, 7, 9)");
    CHECK(bind_error(CF_SHAPE(3, 7, 9), CF_OP_MAXPOOL, k8p1) == NULL);
    /* padding more than half the kernel, as PyTorch refuses */
    static const int p2[6] = {3, 3, 1, 1, 2, 0}, p1w[6] = {3, 1, 1, 1, 0, 1}, p2k4[6] = {4, 4, 1, 1, 2, 2};
    CHECK_HAS(bind_error(CF_SHAPE(3, 7, 9), CF_OP_AVGPOOL, p2), "padding 2x0 is more than half the kernel 3x3");
    CHECK_HAS(bind_error(CF_SHAPE(3, 7, 9), CF_OP_MAXPOOL, p1w), "more than half the kernel");
    CHECK(bind_error(CF_SHAPE(3, 7, 9), CF_OP_MAXPOOL, p2k4) == NULL);
    /* a kernel of 0, a negative stride or padding */
    static const int k0[6] = {0, 3, 1, 1, 0, 0}, sneg[6] = {3, 3, -1, 1, 0, 0}, pneg[6] = {3, 3, 1, 1, 0, -1};
    CHECK_HAS(bind_error(CF_SHAPE(3, 7, 9), CF_OP_MAXPOOL, k0), "the kernel must be positive");
    CHECK_HAS(bind_error(CF_SHAPE(3, 7, 9), CF_OP_AVGPOOL, sneg), "stride and padding not negative");
    CHECK_HAS(bind_error(CF_SHAPE(3, 7, 9), CF_OP_AVGPOOL, pneg), "stride and padding not negative");
    /* the error names where the node was made */
    CHECK_HAS(bind_error(CF_SHAPE(7, 9), CF_OP_MAXPOOL, k3s2), "test_pooling.c");
}

TEST(output_shapes)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(3, 7, 9));
    static const int a[6] = {3, 2, 2, 1, 1, 1};
    cf_node *y[4] = {cf_maxpool(m, x, 3, 2), cf_avgpool(m, x, 2, 0), cf_globalavgpool(m, x),
                     cf_op_at(m, CF_OP_AVGPOOL, 1, &x, a, 6, NULL, 0, __FILE__, __LINE__, 0)};
    for (int i = 0; i < 4; i++) cf_output(m, y[i]);
    cf_exec *e = cf_bind(m, 2, 0);
    CHECK(e != NULL);
    char s[96];
    CHECK_HAS(cf_shape_format(cf_node_shape(y[0]), s, sizeof s), "(B, 3, 3, 4)");
    CHECK_HAS(cf_shape_format(cf_node_shape(y[1]), s, sizeof s), "(B, 3, 3, 4)");
    CHECK_HAS(cf_shape_format(cf_node_shape(y[2]), s, sizeof s), "(B, 3)");
    CHECK_HAS(cf_shape_format(cf_node_shape(y[3]), s, sizeof s), "(B, 3, 4, 10)");
    cf_exec_free(e);
    cf_model_free(m);
}

/* Outputs and input gradient of three poolings of a (16, 8, 33, 31) batch. */
static void run(int threads, float *out, size_t nout, float *grad, size_t ngrad)
{
    cf_set_threads(threads);
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(8, 33, 31));
    static const int a[6] = {3, 2, 2, 1, 1, 1};
    cf_output(m, cf_maxpool(m, x, 3, 2));
    cf_output(m, cf_op_at(m, CF_OP_AVGPOOL, 1, &x, a, 6, NULL, 0, __FILE__, __LINE__, 0));
    cf_output(m, cf_globalavgpool(m, x));
    cf_exec *e = cf_bind(m, 16, CF_INPUT_GRADS);
    CHECK(e != NULL);
    if (!e) return;
    size_t n, k = 0;
    float *xv = cf_exec_input(e, 0, &n);
    CHECK(n == ngrad);
    for (size_t i = 0; i < n; i++) xv[i] = (float)((i * 7919) % 1009) / 500.0f - 1.0f;   /* with ties */
    for (int o = 0; o < 3; o++) {
        float *h = cf_exec_output_grad(e, o, &n);
        for (size_t i = 0; i < n; i++) h[i] = (float)((i * 31 + (size_t)o) % 17) / 8.0f - 1.0f;
    }
    CHECK(cf_forward(e, 1) == 0 && cf_backward(e) == 0);
    for (int o = 0; o < 3; o++) {
        const float *y = cf_exec_output(e, o, &n);
        CHECK(k + n <= nout);
        if (k + n <= nout) memcpy(out + k, y, n * sizeof *y);
        k += n;
    }
    CHECK(k == nout);
    memcpy(grad, cf_exec_input_grad(e, 0, NULL), ngrad * sizeof *grad);
    cf_exec_free(e);
    cf_model_free(m);
    cf_set_threads(0);
}

TEST(same_results_at_any_thread_count)
{
    size_t nout = 16 * 8 * (16 * 15 + 17 * 32 + 1), ngrad = 16 * 8 * 33 * 31;
    float *o1 = malloc(nout * sizeof *o1), *o2 = malloc(nout * sizeof *o2);
    float *g1 = malloc(ngrad * sizeof *g1), *g2 = malloc(ngrad * sizeof *g2);
    run(1, o1, nout, g1, ngrad);
    run(2, o2, nout, g2, ngrad);
    CHECK(memcmp(o1, o2, nout * sizeof *o1) == 0);
    CHECK(memcmp(g1, g2, ngrad * sizeof *g1) == 0);
    free(o1), free(o2), free(g1), free(g2);
}

/* maxpool by the definition: the first maximum of each window scanning rows then
 * columns, a NaN beating everything (the last NaN's position), padding never picked;
 * y (C, oh, ow) and dx (C, h, w) += dy routed to each maximum. */
static void max_reference(const float *x, int C, int h, int w, const int *a, float *y, const float *dy, float *dx)
{
    int kh = a[0], kw = a[1], sh = a[2], sw = a[3], ph = a[4], pw = a[5];
    int oh = (h + 2 * ph - kh) / sh + 1, ow = (w + 2 * pw - kw) / sw + 1;
    for (int c = 0; c < C; c++)
        for (int i = 0; i < oh; i++)
            for (int j = 0; j < ow; j++) {
                float best = -INFINITY;
                int at = -1;
                for (int r = i * sh - ph; r < i * sh - ph + kh; r++)
                    for (int q = j * sw - pw; q < j * sw - pw + kw; q++) {
                        if (r < 0 || r >= h || q < 0 || q >= w) continue;
                        float v = x[(c * h + r) * w + q];
                        if (at < 0 || v > best || isnan(v)) best = v, at = (c * h + r) * w + q;
                    }
                size_t o = ((size_t)c * oh + i) * ow + j;
                y[o] = best;
                dx[at] += dy[o];
            }
}

/* The fast paths of maxpool (2x2 windows moved by 2; windows without padding) give
 * the definition's outputs and gradients bit for bit: odd and even planes (columns
 * left over after the four-at-a-time loop, a last row or column no window covers),
 * ties, NaN and -inf, and a backward that adds (x read by two poolings). */
TEST(max_fast_paths)
{
    static const int shapes[][2] = {{8, 12}, {9, 11}, {4, 4}, {5, 19}, {2, 2}};
    static const int attrs[][6] = {{2, 2, 2, 2, 0, 0}, {3, 3, 1, 1, 0, 0}, {2, 3, 1, 2, 0, 0}, {3, 3, 2, 2, 1, 1}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (size_t ai = 0; ai < sizeof attrs / sizeof attrs[0]; ai++) {
            int C = 3, h = shapes[si][0], w = shapes[si][1], B = 2;
            const int *a = attrs[ai];
            if (h + 2 * a[4] < a[0] || w + 2 * a[5] < a[1]) continue;
            cf_model *m = cf_model_new();
            cf_node *x = cf_input(m, "x", CF_SHAPE(C, h, w));
            cf_output(m, cf_op_at(m, CF_OP_MAXPOOL, 1, &x, a, 6, NULL, 0, __FILE__, __LINE__, 0));
            cf_output(m, cf_op_at(m, CF_OP_MAXPOOL, 1, &x, a, 6, NULL, 0, __FILE__, __LINE__, 0));
            cf_exec *e = cf_bind(m, B, CF_INPUT_GRADS);
            CHECK(e != NULL);
            if (!e) {
                cf_model_free(m);
                continue;
            }
            size_t nx, ny;
            float *xv = cf_exec_input(e, 0, &nx);
            for (size_t i = 0; i < nx; i++) {
                unsigned r = (unsigned)(i * 2654435761u) >> 7;
                xv[i] = (float)(r % 7) - 3.0f;                   /* many ties */
                if (r % 29 == 0) xv[i] = NAN;
                if (r % 31 == 0) xv[i] = -INFINITY;
            }
            for (int o = 0; o < 2; o++) {
                float *hd = cf_exec_output_grad(e, o, &ny);
                for (size_t i = 0; i < ny; i++) hd[i] = (float)((i * 13 + (size_t)o * 5) % 11) - 5.0f;
            }
            CHECK(cf_forward(e, 1) == 0 && cf_backward(e) == 0);
            float *y = calloc(ny, sizeof *y), *dx = calloc(nx, sizeof *dx);
            size_t plane = ny / (size_t)B;
            for (int o = 0; o < 2; o++)
                for (int b = 0; b < B; b++)
                    max_reference(xv + (size_t)b * C * h * w, C, h, w, a, y + b * plane,
                                  cf_exec_output_grad(e, o, NULL) + b * plane, dx + (size_t)b * C * h * w);
            for (int o = 0; o < 2; o++)
                CHECK(memcmp(cf_exec_output(e, o, NULL), y, ny * sizeof *y) == 0);
            CHECK(memcmp(cf_exec_input_grad(e, 0, NULL), dx, nx * sizeof *dx) == 0);
            free(y), free(dx);
            cf_exec_free(e);
            cf_model_free(m);
        }
}

/* Backward writes a gradient buffer without zeroing it first (the first op to reach a
 * value overwrites, later ones add), so the 2x2 fast path must write every element of
 * its dx, the last column no window covers (odd w) and the last row (odd h) included.
 * Here those buffers hold stale numbers: two poolings, of x itself and of h = x .* p;
 * x's gradient, which the first pooling's backward writes, is filled with NaN before
 * each backward, and h's is whatever the plan left where it lives. Two backward
 * passes with different head gradients; dx and dp against the definition: each
 * pooling routes dy to its windows' maxima (0 elsewhere), dx = dx1 + dh p, and
 * dp = the sum over b, c and rows of dh x. */
TEST(max_2x2_backward_writes_every_column)
{
    enum { B = 2, C = 3, h = 5, w = 9, oh = 2, ow = 4, NX = B * C * h * w, NY = B * C * oh * ow };
    static const int a[6] = {2, 2, 2, 2, 0, 0};
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(C, h, w));
    cf_node *p = cf_param(m, "p", CF_SHAPE(w), CF_ZEROS);
    cf_node *hx = cf_mul(m, x, p);
    cf_output(m, cf_op_at(m, CF_OP_MAXPOOL, 1, &hx, a, 6, NULL, 0, __FILE__, __LINE__, 0));
    cf_output(m, cf_op_at(m, CF_OP_MAXPOOL, 1, &x, a, 6, NULL, 0, __FILE__, __LINE__, 0));   /* its backward first */
    CHECK(cf_model_init_params(m) == 0);
    cf_exec *e = cf_bind(m, B, CF_INPUT_GRADS);
    CHECK(e != NULL);
    if (!e) {
        cf_model_free(m);
        return;
    }
    float *pv = cf_model_param_data(m, 0), *xv = cf_exec_input(e, 0, NULL), hv[NX];
    for (int j = 0; j < w; j++) pv[j] = 0.5f + 0.25f * (float)j;
    for (int i = 0; i < NX; i++) xv[i] = (float)((i * 37) % 101) / 50.0f + 1.0f;   /* positive, few ties */
    for (int i = 0; i < NX; i++) hv[i] = xv[i] * pv[i % w];
    for (int pass = 0; pass < 2; pass++) {
        float *dy[2];
        for (int o = 0; o < 2; o++) {
            dy[o] = cf_exec_output_grad(e, o, NULL);
            for (int i = 0; i < NY; i++) dy[o][i] = (float)((i * 7 + pass * 3 + o * 5) % 11) - 5.0f;
        }
        float *gx = (float *)cf_exec_input_grad(e, 0, NULL);   /* the executor's buffer: stale on purpose */
        for (int i = 0; i < NX; i++) gx[i] = NAN;
        cf_model_zero_grad(m);
        CHECK(cf_forward(e, 1) == 0 && cf_backward(e) == 0);
        float y[2][NY], dh[NX] = {0}, dx1[NX] = {0};
        double dp[w] = {0};
        for (int b = 0; b < B; b++) {
            max_reference(hv + b * C * h * w, C, h, w, a, y[0] + b * C * oh * ow, dy[0] + b * C * oh * ow,
                          dh + b * C * h * w);
            max_reference(xv + b * C * h * w, C, h, w, a, y[1] + b * C * oh * ow, dy[1] + b * C * oh * ow,
                          dx1 + b * C * h * w);
        }
        for (int o = 0; o < 2; o++) CHECK(memcmp(cf_exec_output(e, o, NULL), y[o], sizeof y[o]) == 0);
        int bad = 0, bad_last = 0;
        for (int i = 0; i < NX; i++) {
            double want = (double)dx1[i] + (double)dh[i] * pv[i % w];
            if (!(fabs(gx[i] - want) <= 1e-5 * (fabs(want) + 1))) bad++, bad_last += i % w == w - 1;
            dp[i % w] += (double)dh[i] * xv[i];
        }
        if (bad) fprintf(stderr, "  pass %d: dx: %d of %d differ, %d in the last column\n", pass, bad, NX, bad_last);
        CHECK(bad == 0);
        const float *gp = cf_model_param_grad(m, 0);
        for (int j = 0; j < w; j++) CHECK_NEAR(gp[j], dp[j], 1e-4 * (fabs(dp[j]) + 1));
    }
    cf_exec_free(e);
    cf_model_free(m);
}

int main(void)
{
    RUN(shape_errors);
    RUN(output_shapes);
    RUN(same_results_at_any_thread_count);
    RUN(max_fast_paths);
    RUN(max_2x2_backward_writes_every_column);
    return test_summary("pooling");
}
