/* reduce.c - sum and mean over the last dimension: (..., n) -> (...).
 * On a (B) value the last dimension is the batch, and the result is (). */
#include "core/error.h"
#include "ops/op.h"

static int reduce_infer(cf_node *n)
{
    const cf_node *x = n->in[0];
    if (x->shape.rank == 0)
        return cf_seterr("error: %s of a single number: there is no dimension to reduce", cf_ops[n->op]->name);
    n->shape = x->shape;
    n->shape.rank--;
    n->batched = x->batched && n->shape.rank > 0;
    return 0;
}

static int reduce_forward(const cf_inst *k)
{
    size_t n = (size_t)k->xs[0].d[k->xs[0].rank - 1], rows = cf_shape_count_b(k->ys, 1);
    float scale = k->node->op == CF_OP_MEAN ? 1.0f / (float)n : 1.0f;
    for (size_t r = 0; r < rows; r++) {
        const float *x = k->x[0] + r * n;
        float s = 0;
        for (size_t i = 0; i < n; i++) s += x[i];
        k->y[r] = s * scale;
    }
    return 0;
}

static void reduce_backward(const cf_inst *k)
{
    size_t n = (size_t)k->xs[0].d[k->xs[0].rank - 1], rows = cf_shape_count_b(k->ys, 1);
    float scale = k->node->op == CF_OP_MEAN ? 1.0f / (float)n : 1.0f;
    for (size_t r = 0; r < rows; r++) {
        float g = k->dy[r] * scale, *dx = k->dx[0] + r * n;
        if (k->acc[0]) for (size_t i = 0; i < n; i++) dx[i] += g;
        else for (size_t i = 0; i < n; i++) dx[i] = g;
    }
}

/* One addition per element summed; back: dy scaled per row, spreading it is a copy. */
static void reduce_flops(const cf_node *n, const unsigned char *want, double *fwd, double *bwd)
{
    (void)want;
    *fwd = cf_count1(n->in[0]->shape);
    *bwd = cf_count1(n->shape);
}

const cf_opdef cf_op_sum = {
    .name = "sum", .what = "sum", .infer = reduce_infer, .forward = reduce_forward,
    .backward = reduce_backward, .flags = CF_CALL, .nin = 1,
    .flops = reduce_flops, .onnx = "ReduceSum",
};
const cf_opdef cf_op_mean = {
    .name = "mean", .what = "mean", .infer = reduce_infer, .forward = reduce_forward,
    .backward = reduce_backward, .flags = CF_CALL, .nin = 1,
    .flops = reduce_flops, .onnx = "ReduceMean",
};
