/* clamp.c - clamp(x, lo, hi) = min(max(x, lo), hi), elementwise, as PyTorch's
 * torch.clamp(x, min, max): y has x's shape. lo and hi default to -inf and +inf, so
 * either may be left out (clamp(x, lo = 0), as torch.clamp(x, min=0)); with neither
 * it would change nothing and is refused, as PyTorch refuses torch.clamp(x). Where
 * lo > hi every element is hi; NaN stays NaN.
 *
 * dy/dx is 1 where lo < x < hi and 0 elsewhere, at the bounds too: the least
 * subgradient, which relu takes at 0 (ops/activation.c) and PyTorch's clamp, relu6
 * and hardtanh take at their bounds (PyTorch 2.15; torch.clamp gave 1 there up to
 * 2.12). */
#include <math.h>

#include "core/error.h"
#include "ops/op.h"

typedef struct {
    const cf_inst *k;
    float lo, hi;
} job;

static void forward_range(void *p, size_t b, size_t e)
{
    const job *j = p;
    const float *restrict x = j->k->x[0];
    float *restrict y = j->k->y;
    for (size_t i = b; i < e; i++) {
        float v = x[i] < j->lo ? j->lo : x[i];   /* comparisons, not fmaxf: NaN stays */
        y[i] = v > j->hi ? j->hi : v;
    }
}

static void backward_range(void *p, size_t b, size_t e)
{
    const job *j = p;
    const float *restrict x = j->k->x[0], *restrict dy = j->k->dy;
    float *restrict dx = j->k->dx[0];
    int acc = j->k->acc[0];
    for (size_t i = b; i < e; i++) {
        float g = x[i] > j->lo && x[i] < j->hi ? dy[i] : 0.0f;
        dx[i] = acc ? dx[i] + g : g;
    }
}

static int clamp_infer(cf_node *n)
{
    if (n->attr.f[0] == -INFINITY && n->attr.f[1] == INFINITY)
        return cf_seterr("error: clamp with neither lo nor hi changes nothing: give one or both, as clamp(x, lo = 0) "
                         "or clamp(x, 0, 6) (in a Chain: x -> clamp(x, 0, 6))");
    return cf_same_shape(n);
}

static int clamp_forward(const cf_inst *k)
{
    job j = {k, k->node->attr.f[0], k->node->attr.f[1]};
    cf_parallel_range(cf_shape_count_b(k->ys, 1), 1, forward_range, &j);
    return 0;
}

static void clamp_backward(const cf_inst *k)
{
    job j = {k, k->node->attr.f[0], k->node->attr.f[1]};
    cf_parallel_range(cf_shape_count_b(k->ys, 1), 2, backward_range, &j);
}

const cf_opdef cf_op_clamp = {
    .name = "clamp", .what = "clamp", .infer = clamp_infer, .forward = clamp_forward, .backward = clamp_backward,
    .flags = CF_BWD_X | CF_CALL | CF_POSITIONWISE, .nin = 1,
    .attrs = {{"lo", 'f', 0, -INFINITY, .onnx_input = "min"}, {"hi", 'f', 1, INFINITY, .onnx_input = "max"}},
    .flops = cf_flops_elementwise, .onnx = "Clip",
};
