/* loss.c - losses, each a number () averaged over the rows of its input.
 *
 * cross-entropy: input 0 is p (..., C), probabilities; input 1 the labels: class
 *   indices (...) stored as floats, or target probabilities (..., C).
 *   loss = mean over rows of -sum_c t_c log p_c.
 *   When p comes straight from a softmax (CF_FUSE_SOFTMAX), the executor also passes
 *   the softmax's input z as input 2; the loss is computed from z (logsumexp, stable)
 *   and the gradient goes to z alone: dz = (p sum(t) - t) / rows, MXNet's
 *   SoftmaxOutput.
 *   Label smoothing ε (attr.f[0], in training only): the targets are t' = (1 - ε) t +
 *   ε / C (t one-hot for an index), so that a row's loss is (1 - ε)(-log p_y) +
 *   ε / C sum_c (-log p_c), PyTorch's CrossEntropyLoss(label_smoothing = ε); in
 *   evaluation the loss is the plain cross-entropy, as cflux eval computes it.
 * mean squared error: mean over all elements of (a - b)^2. */
#include <math.h>

#include "core/error.h"
#include "ops/op.h"
#include "rt/vmath.h"

static int xent_infer(cf_node *n)
{
    const cf_node *p = n->in[0], *t = n->in[1];
    char s1[96], s2[96];
    if (p->shape.rank == 0 || (p->batched && p->shape.rank == 1))
        return cf_seterr("error: cross-entropy needs a dimension of classes, but the probabilities are %s",
                         cf_shape_str(p->shape, s1, sizeof s1));
    int same = t->shape.rank == p->shape.rank, idx = t->shape.rank == p->shape.rank - 1;
    for (int i = 0; i < t->shape.rank && (same || idx); i++) {
        if (i < p->shape.rank - 1 && t->shape.d[i] != p->shape.d[i]) same = idx = 0;
        if (i == p->shape.rank - 1 && t->shape.d[i] != p->shape.d[i]) same = 0;
    }
    if (!same && !idx) {
        char s3[96];
        cf_shape ix = p->shape;
        ix.rank--;
        return cf_seterr("error: cross-entropy labels %s do not fit the probabilities %s: give class indices %s "
                         "or probabilities %s",
                         cf_shape_str(t->shape, s2, sizeof s2), cf_shape_str(p->shape, s1, sizeof s1),
                         cf_shape_str(ix, s3, sizeof s3), s1);
    }
    n->shape.rank = 0;
    n->batched = 0;
    return 0;
}

/* Class index of row r, or -1 (with the error set) when it is not one. */
static int label_of(const cf_inst *k, size_t r, int C)
{
    float v = k->x[1][r];
    if (!(v >= 0 && v < (float)C) || v != (float)(int)v) {
        cf_seterr("error: label %g of row %zu is not a class index in 0..%d", (double)v, r, C - 1);
        return -1;
    }
    return (int)v;
}

/* The label smoothing of this run: ε in training, 0 in evaluation. */
static float smoothing(const cf_inst *k) { return k->ctx->train ? k->node->attr.f[0] : 0.0f; }

/* One row's loss with label smoothing eps: sum_c t'_c nl(c), nl(c) = -log p_c, from
 * the logits z (fused: (mx - z_c) + ls) or from p. */
static double smoothed_row(const float *p, const float *z, float mx, float ls, const float *t, int y, int C,
                           float eps)
{
    double row = 0;
    for (int c = 0; c < C; c++) {
        float tc = (1 - eps) * (y < 0 ? t[c] : (float)(c == y)) + eps / (float)C;
        row += tc * (z ? (mx - z[c]) + ls : -logf(p[c]));
    }
    return row;
}

static int xent_forward(const cf_inst *k)
{
    int C = k->xs[0].d[k->xs[0].rank - 1];
    size_t rows = cf_shape_count_b(k->xs[0], 1) / (size_t)C;
    int soft = k->xs[1].rank == k->xs[0].rank, fused = k->nin > 2;
    float eps = smoothing(k);
    double total = 0;
    for (size_t r = 0; r < rows; r++) {
        const float *p = k->x[0] + r * C, *t = k->x[1] + r * C;
        if (eps > 0) {
            int y = soft ? -1 : label_of(k, r, C);
            if (!soft && y < 0) return -1;
            const float *z = fused ? k->x[2] + r * C : NULL;
            float mx = 0, ls = 0;
            if (z) {
                mx = z[0];
                for (int c = 1; c < C; c++) mx = z[c] > mx ? z[c] : mx;
                ls = logf(cf_vexp_sum(NULL, z, mx, (size_t)C));
            }
            total += smoothed_row(p, z, mx, ls, t, y, C, eps);
        } else if (fused) {
            const float *z = k->x[2] + r * C;
            float mx = z[0];
            for (int c = 1; c < C; c++) mx = z[c] > mx ? z[c] : mx;
            float s = cf_vexp_sum(NULL, z, mx, (size_t)C);
            /* -log p_c = (max - z_c) + log s, in that order: max + log s first would
               drop log s against a large max (logits of 1e30 gave a loss of 0) */
            float ls = logf(s);
            if (soft) for (int c = 0; c < C; c++) total += t[c] * ((mx - z[c]) + ls);
            else {
                int y = label_of(k, r, C);
                if (y < 0) return -1;
                total += (mx - z[y]) + ls;
            }
        } else if (soft) {
            for (int c = 0; c < C; c++) if (t[c] != 0) total -= t[c] * logf(p[c]);
        } else {
            int y = label_of(k, r, C);
            if (y < 0) return -1;
            total -= logf(p[y]);
        }
    }
    k->y[0] = (float)(total / (double)rows);
    return 0;
}

static void xent_backward(const cf_inst *k)
{
    int C = k->xs[0].d[k->xs[0].rank - 1];
    size_t rows = cf_shape_count_b(k->xs[0], 1) / (size_t)C;
    int soft = k->xs[1].rank == k->xs[0].rank, fused = k->nin > 2;
    float g = k->dy[0] / (float)rows;
    int slot = fused ? 2 : 0;
    float *dx = k->dx[slot];
    if (!dx) return;
    int acc = k->acc[slot];
    float eps = smoothing(k), keep = 1 - eps, spread = eps / (float)C;   /* t' = keep t + spread */
    for (size_t r = 0; r < rows; r++) {
        const float *p = k->x[0] + r * C, *t = k->x[1] + r * C;
        float *d = dx + r * C;
        int y = soft ? -1 : (int)k->x[1][r];   /* checked by forward */
        float tsum = 1;   /* sum_c t'_c; for an index 1 */
        if (soft && fused) {
            tsum = 0;
            for (int c = 0; c < C; c++) tsum += keep * t[c] + spread;
        }
        for (int c = 0; c < C; c++) {
            float tc = keep * (soft ? t[c] : (float)(c == y)) + spread;
            float v = fused ? g * (p[c] * tsum - tc) : (tc != 0 ? -g * tc / p[c] : 0.0f);
            d[c] = acc ? d[c] + v : v;
        }
    }
}

/* Per probability: max, subtract, exp, sum; back: g (p - t), or -g t / p. Fused, the
 * gradient wanted is that of the softmax's input, the hidden last input (CF_FUSE_SOFTMAX). */
static void xent_flops(const cf_node *n, const unsigned char *want, double *fwd, double *bwd)
{
    int fused = n->in[0]->op == CF_OP_SOFTMAX;
    *fwd = 4 * cf_count1(n->in[0]->shape);
    *bwd = cf_grads_wanted(n, want) || (fused && want[n->nin]) ? 3 * cf_count1(n->in[0]->shape) : 0;
}

const cf_opdef cf_op_xent = {
    .name = "crossentropy", .what = "cross-entropy", .infer = xent_infer, .forward = xent_forward,
    .backward = xent_backward, .flags = CF_BWD_X | CF_FUSE_SOFTMAX, .nograd = 2u, .nin = 2,
    .flops = xent_flops,
};

static int mse_infer(cf_node *n)
{
    const cf_node *a = n->in[0], *b = n->in[1];
    int same = a->shape.rank == b->shape.rank;
    for (int i = 0; same && i < a->shape.rank; i++) same = a->shape.d[i] == b->shape.d[i];
    if (!same) {
        char s1[96], s2[96];
        return cf_seterr("error: mean squared error needs equal shapes: %s and %s",
                         cf_shape_str(a->shape, s1, sizeof s1), cf_shape_str(b->shape, s2, sizeof s2));
    }
    n->shape.rank = 0;
    n->batched = 0;
    return 0;
}

static int mse_forward(const cf_inst *k)
{
    size_t n = cf_shape_count_b(k->xs[0], 1);
    double s = 0;
    for (size_t i = 0; i < n; i++) {
        float d = k->x[0][i] - k->x[1][i];
        s += d * d;
    }
    k->y[0] = (float)(s / (double)n);
    return 0;
}

static void mse_backward(const cf_inst *k)
{
    size_t n = cf_shape_count_b(k->xs[0], 1);
    float g = 2.0f * k->dy[0] / (float)n;
    for (int w = 0; w < 2; w++) {
        float *dx = k->dx[w], s = w ? -g : g;
        if (!dx) continue;
        for (size_t i = 0; i < n; i++) {
            float v = s * (k->x[0][i] - k->x[1][i]);
            dx[i] = k->acc[w] ? dx[i] + v : v;
        }
    }
}

/* Subtract, square, sum; back: 2 per input's element. */
static void mse_flops(const cf_node *n, const unsigned char *want, double *fwd, double *bwd)
{
    *fwd = 3 * cf_count1(n->in[0]->shape);
    *bwd = 2 * cf_count1(n->in[0]->shape) * cf_grads_wanted(n, want);
}

const cf_opdef cf_op_mse = {
    .name = "mse", .what = "mean squared error", .infer = mse_infer, .forward = mse_forward,
    .backward = mse_backward, .flags = CF_BWD_X, .nin = 2,
    .flops = mse_flops,
};
