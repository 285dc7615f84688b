/* transpose.c - two dimensions of a value swapped (dims in attr.i[0..1], counted over
 * the whole shape with the batch at 0, which cannot move):
 *   x (B, T, H, d), transpose(x, 1, 2) -> (B, H, T, d)
 * The kernel sees the shape as (outer, P, mid, Q, inner) with P and Q the two dims
 * (P before Q) and writes y (outer, Q, mid, P, inner); the backward is the same move
 * of dy, back. Rows of `inner` floats move whole; when inner is 1 (the last dim is
 * one of the two), 8 x 8 blocks keep both sides' reads and writes near. */
#include <string.h>

#include "core/error.h"
#include "ops/op.h"

static int transpose_infer(cf_node *n)
{
    const cf_node *x = n->in[0];
    char s[96];
    int r = x->shape.rank, i = cf_norm_dim(n->attr.i[0], r), j = cf_norm_dim(n->attr.i[1], r);
    if (i < 0 || j < 0)
        return cf_seterr("error: transpose of dimensions %d and %d of %s: no such dimension", n->attr.i[0],
                         n->attr.i[1], cf_shape_str(x->shape, s, sizeof s));
    if (x->batched && (i == 0 || j == 0))
        return cf_seterr("error: transpose cannot move the batch dimension: %s (dimension 0 is B; the first of a "
                         "sample is 1)", cf_shape_str(x->shape, s, sizeof s));
    n->shape = x->shape;
    n->shape.d[i] = x->shape.d[j];
    n->shape.d[j] = x->shape.d[i];
    n->batched = x->batched;
    n->attr.i[2] = i < j ? i : j;   /* normalised and ordered, for the kernels */
    n->attr.i[3] = i < j ? j : i;
    return 0;
}

typedef struct {
    size_t outer, P, mid, Q, inner;
} split5;

static split5 split_of(const cf_node *node, cf_shape xs)
{
    int p = node->attr.i[2], q = node->attr.i[3];
    split5 s = {1, (size_t)xs.d[p], 1, (size_t)xs.d[q], 1};
    for (int k = 0; k < p; k++) s.outer *= (size_t)xs.d[k];
    for (int k = p + 1; k < q; k++) s.mid *= (size_t)xs.d[k];
    for (int k = q + 1; k < xs.rank; k++) s.inner *= (size_t)xs.d[k];
    return s;
}

/* y (outer, Q, mid, P, inner) from x (outer, P, mid, Q, inner): y = x moved, or
 * y += x moved when acc. */
static void move(const float *x, float *y, split5 s, int acc)
{
    size_t P = s.P, Q = s.Q, M = s.mid, I = s.inner;
    size_t xq = I, xm = Q * I, xp = M * Q * I;   /* x's strides */
    size_t yp = I, ym = P * I, yq = M * P * I;   /* y's strides */
    for (size_t o = 0; o < s.outer; o++) {
        const float *xo = x + o * P * M * Q * I;
        float *yo = y + o * P * M * Q * I;
        for (size_t m = 0; m < M; m++) {
            if (I > 1) {
                for (size_t p = 0; p < P; p++)
                    for (size_t q = 0; q < Q; q++) {
                        const float *src = xo + p * xp + m * xm + q * xq;
                        float *dst = yo + q * yq + m * ym + p * yp;
                        if (acc)
                            for (size_t i = 0; i < I; i++) dst[i] += src[i];
                        else memcpy(dst, src, I * sizeof *dst);
                    }
                continue;
            }
            for (size_t p0 = 0; p0 < P; p0 += 8)
                for (size_t q0 = 0; q0 < Q; q0 += 8) {
                    size_t pe = p0 + 8 < P ? p0 + 8 : P, qe = q0 + 8 < Q ? q0 + 8 : Q;
                    for (size_t q = q0; q < qe; q++)
                        for (size_t p = p0; p < pe; p++) {
                            float v = xo[p * xp + m * xm + q];
                            float *dst = yo + q * yq + m * ym + p;
                            *dst = acc ? *dst + v : v;
                        }
                }
        }
    }
}

static int transpose_forward(const cf_inst *k)
{
    move(k->x[0], k->y, split_of(k->node, k->xs[0]), 0);
    return 0;
}

static void transpose_backward(const cf_inst *k)
{
    /* dy has y's shape (outer, Q, mid, P, inner): moving it back swaps the roles */
    split5 s = split_of(k->node, k->xs[0]), b = {s.outer, s.Q, s.mid, s.P, s.inner};
    move(k->dy, k->dx[0], b, k->acc[0]);
}

/* The floats keep their order when, of the two dimensions and those between them,
 * at most one is longer than 1 (a transpose of a single step, or of one head). */
static int transpose_view(const cf_inst *k, size_t *off)
{
    int longer = 0;
    for (int d = k->node->attr.i[2]; d <= k->node->attr.i[3]; d++) longer += k->xs[0].d[d] > 1;
    *off = 0;
    return longer <= 1;
}

const cf_opdef cf_op_transpose = {
    .name = "transpose", .what = "transpose", .infer = transpose_infer, .forward = transpose_forward,
    .backward = transpose_backward, .flags = CF_NO_FLOPS, .nin = 1, .view = transpose_view,
};
