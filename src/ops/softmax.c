/* softmax.c - softmax and logsoftmax over the last dimension.
 *   softmax:    y = exp(x - max) / sum exp(x - max);  dx = y .* (dy - sum(dy .* y))
 *   logsoftmax: y = x - logsumexp(x);                 dx = dy - exp(y) * sum(dy)
 * Causal softmax (attr.f[0] non-zero; x (..., T, T)): row i of each T x T matrix over
 * columns 0..i, the rest 0 (attention that never looks ahead); the same backward,
 * since y is 0 where the row was masked.
 * The forward's exponentials run four at a time (rt/vmath.h). */
#include <math.h>

#include "core/error.h"
#include "ops/op.h"
#include "rt/vmath.h"

static int rows_infer(cf_node *n)
{
    const cf_node *x = n->in[0];
    if (x->shape.rank == 0 || (x->batched && x->shape.rank == 1)) {
        char s[96];
        return cf_seterr("error: %s needs a dimension to normalise over, but its input is %s",
                         cf_ops[n->op]->name, cf_shape_str(x->shape, s, sizeof s));
    }
    if (n->attr.f[0] != 0) {
        char s[96];
        int r = x->shape.rank - x->batched;
        if (n->op != CF_OP_SOFTMAX || r < 2 || x->shape.d[x->shape.rank - 1] != x->shape.d[x->shape.rank - 2])
            return cf_seterr("error: causal %s needs square matrices in its last two dimensions, (..., T, T), "
                             "but its input is %s", cf_ops[n->op]->name, cf_shape_str(x->shape, s, sizeof s));
    }
    n->shape = x->shape;
    n->batched = x->batched;
    return 0;
}

typedef struct {
    const cf_inst *k;
    size_t n;   /* row length */
} job;

static void forward_rows(void *p, size_t r0, size_t r1)
{
    const job *j = p;
    size_t n = j->n;
    int log = j->k->node->op == CF_OP_LOGSOFTMAX;
    for (size_t r = r0; r < r1; r++) {
        const float *x = j->k->x[0] + r * n;
        float *y = j->k->y + r * n;
        size_t seen = j->k->node->attr.f[0] != 0 ? r % n + 1 : n;   /* causal: row i sees 0..i */
        if (seen < n) {
            float mx = x[0];
            for (size_t i = 1; i < seen; i++) mx = x[i] > mx ? x[i] : mx;
            float inv = 1.0f / cf_vexp_sum(y, x, mx, seen);
            for (size_t i = 0; i < seen; i++) y[i] *= inv;
            for (size_t i = seen; i < n; i++) y[i] = 0;
            continue;
        }
        float mx = x[0];
        for (size_t i = 1; i < n; i++) mx = x[i] > mx ? x[i] : mx;
        if (log) {
            float lse = mx + logf(cf_vexp_sum(NULL, x, mx, n));
            for (size_t i = 0; i < n; i++) y[i] = x[i] - lse;
        } else {
            float inv = 1.0f / cf_vexp_sum(y, x, mx, n);
            for (size_t i = 0; i < n; i++) y[i] *= inv;
        }
    }
}

static void backward_rows(void *p, size_t r0, size_t r1)
{
    const job *j = p;
    size_t n = j->n;
    int log = j->k->node->op == CF_OP_LOGSOFTMAX, acc = j->k->acc[0];
    for (size_t r = r0; r < r1; r++) {
        const float *y = j->k->y + r * n, *dy = j->k->dy + r * n;
        float *dx = j->k->dx[0] + r * n;
        float s = 0;
        if (log) {
            for (size_t i = 0; i < n; i++) s += dy[i];
            for (size_t i = 0; i < n; i++) {
                float g = dy[i] - expf(y[i]) * s;
                dx[i] = acc ? dx[i] + g : g;
            }
        } else {
            for (size_t i = 0; i < n; i++) s += dy[i] * y[i];
            for (size_t i = 0; i < n; i++) {
                float g = y[i] * (dy[i] - s);
                dx[i] = acc ? dx[i] + g : g;
            }
        }
    }
}

static int softmax_forward(const cf_inst *k)
{
    job j = {k, (size_t)k->ys.d[k->ys.rank - 1]};
    cf_parallel_range(cf_shape_count_b(k->ys, 1) / j.n, j.n * 8, forward_rows, &j);
    return 0;
}

static void softmax_backward(const cf_inst *k)
{
    job j = {k, (size_t)k->ys.d[k->ys.rank - 1]};
    cf_parallel_range(cf_shape_count_b(k->ys, 1) / j.n, j.n * 4, backward_rows, &j);
}

/* Forward: max, subtract, exp, sum, scale (or log-sum); backward: sum dy y (2),
 * y (dy - s) (2). */
static void softmax_flops(const cf_node *n, const unsigned char *want, double *fwd, double *bwd)
{
    (void)want;
    *fwd = 5 * cf_count1(n->shape);
    *bwd = 4 * cf_count1(n->shape);
}

const cf_opdef cf_op_softmax = {
    .name = "softmax", .what = "softmax", .infer = rows_infer, .forward = softmax_forward,
    .backward = softmax_backward, .flags = CF_BWD_Y | CF_CALL | CF_POSITIONWISE, .nin = 1,
    .flops = softmax_flops, .onnx = "Softmax",
};
const cf_opdef cf_op_logsoftmax = {
    .name = "logsoftmax", .what = "logsoftmax", .infer = rows_infer, .forward = softmax_forward,
    .backward = softmax_backward, .flags = CF_BWD_Y | CF_CALL | CF_POSITIONWISE, .nin = 1,
    .flops = softmax_flops, .onnx = "LogSoftmax",
};
