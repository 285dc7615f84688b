/* softplus.c - softplus(x) = log(1 + e^x), a smooth relu: y has x's shape; dy/dx is
 * the sigmoid of x. Computed as max(x, 0) + log1p(e^-|x|), which neither overflows for
 * large x nor loses small values for very negative x. The example of adding an op:
 * this file, its row in table.c and its gradient check in tests/test_grad.c. */
#include <math.h>

#include "ops/op.h"

typedef struct {
    const cf_inst *k;
} job;

static void forward_range(void *p, size_t b, size_t e)
{
    const cf_inst *k = ((const job *)p)->k;
    const float *restrict x = k->x[0];
    float *restrict y = k->y;
    for (size_t i = b; i < e; i++) y[i] = fmaxf(x[i], 0) + log1pf(expf(-fabsf(x[i])));
}

static void backward_range(void *p, size_t b, size_t e)
{
    const cf_inst *k = ((const job *)p)->k;
    const float *restrict x = k->x[0], *restrict dy = k->dy;
    float *restrict dx = k->dx[0];
    for (size_t i = b; i < e; i++) {
        float g = dy[i] / (1.0f + expf(-x[i]));
        dx[i] = k->acc[0] ? dx[i] + g : g;
    }
}

static int softplus_forward(const cf_inst *k)
{
    job j = {k};
    cf_parallel_range(cf_shape_count_b(k->ys, 1), 8, forward_range, &j);
    return 0;
}

static void softplus_backward(const cf_inst *k)
{
    job j = {k};
    cf_parallel_range(cf_shape_count_b(k->ys, 1), 8, backward_range, &j);
}

const cf_opdef cf_op_softplus = {
    .name = "softplus", .what = "softplus", .infer = cf_same_shape, .forward = softplus_forward,
    .backward = softplus_backward, .flags = CF_BWD_X | CF_CALL | CF_POSITIONWISE, .nin = 1,
    .flops = cf_flops_elementwise, .onnx = "Softplus",
};
