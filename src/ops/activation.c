/* activation.c - elementwise functions of one value: -x, σ, tanh, relu, leakyrelu,
 * exp, log. y has x's shape. The transcendental ones run four at a time through
 * rt/vmath.h, whose result for an element does not depend on the chunk it is in. */
#include "ops/op.h"
#include "rt/cpu.h"
#include "rt/vmath.h"

typedef struct {
    const cf_inst *k;
    int avx2;   /* the transcendental maps eight at a time (the same results) */
} job;

static void forward_range(void *p, size_t b, size_t e)
{
    const cf_inst *k = ((job *)p)->k;
    const float *restrict x = k->x[0];
    float *restrict y = k->y;
    float a = k->node->attr.f[0];
#if defined(__x86_64__)
    if (((job *)p)->avx2) {
        switch (k->node->op) {
        case CF_OP_SIGMOID: cf_vsigmoid_avx2(y + b, x + b, e - b); return;
        case CF_OP_TANH:    cf_vtanh_avx2(y + b, x + b, e - b); return;
        case CF_OP_EXP:     cf_vexp_avx2(y + b, x + b, e - b); return;
        case CF_OP_LOG:     cf_vlog_avx2(y + b, x + b, e - b); return;
        default: break;
        }
    }
#endif
    switch (k->node->op) {
    case CF_OP_NEG:     for (size_t i = b; i < e; i++) y[i] = -x[i]; break;
    case CF_OP_SIGMOID: cf_vsigmoid(y + b, x + b, e - b); break;
    case CF_OP_TANH:    cf_vtanh(y + b, x + b, e - b); break;
    case CF_OP_RELU:    for (size_t i = b; i < e; i++) y[i] = x[i] > 0 ? x[i] : 0; break;
    case CF_OP_LEAKYRELU: for (size_t i = b; i < e; i++) y[i] = x[i] > 0 ? x[i] : a * x[i]; break;
    case CF_OP_EXP:     cf_vexp(y + b, x + b, e - b); break;
    case CF_OP_LOG:     cf_vlog(y + b, x + b, e - b); break;
    default: break;
    }
}

/* The derivative at element i, from x or y as the op's flags promise. */
/* g is dy[i], loaded before any condition so that the loops vectorise. */
#define GRAD_LOOP(EXPR)                                                                \
    do {                                                                               \
        if (acc) for (size_t i = b; i < e; i++) { float g = dy[i]; dx[i] += (EXPR); }  \
        else for (size_t i = b; i < e; i++) { float g = dy[i]; dx[i] = (EXPR); }       \
    } while (0)

static void backward_range(void *p, size_t b, size_t e)
{
    const cf_inst *k = ((job *)p)->k;
    const float *restrict x = k->x[0], *restrict y = k->y, *restrict dy = k->dy;
    float *restrict dx = k->dx[0];
    float a = k->node->attr.f[0];
    int acc = k->acc[0];
    switch (k->node->op) {
    case CF_OP_NEG:     GRAD_LOOP(-g); break;
    case CF_OP_SIGMOID: GRAD_LOOP(g * y[i] * (1.0f - y[i])); break;
    case CF_OP_TANH:    GRAD_LOOP(g * (1.0f - y[i] * y[i])); break;
    case CF_OP_RELU:    GRAD_LOOP(y[i] > 0 ? g : 0.0f); break;
    case CF_OP_LEAKYRELU: GRAD_LOOP(x[i] > 0 ? g : a * g); break;
    case CF_OP_EXP:     GRAD_LOOP(g * y[i]); break;
    case CF_OP_LOG:     GRAD_LOOP(g / x[i]); break;
    default: break;
    }
}

/* Rough cost per element, to decide when threads pay. */
static size_t cost(cf_opcode op)
{
    return op == CF_OP_SIGMOID || op == CF_OP_TANH || op == CF_OP_EXP || op == CF_OP_LOG ? 8 : 1;
}

static int act_forward(const cf_inst *k)
{
#if defined(__x86_64__)
    job j = {k, cf_cpu_avx2(cf_cpu())};
#else
    job j = {k, 0};
#endif
    cf_parallel_range(cf_shape_count_b(k->ys, 1), cost(k->node->op), forward_range, &j);
    return 0;
}

static void act_backward(const cf_inst *k)
{
    job j = {k, 0};
    cf_parallel_range(cf_shape_count_b(k->ys, 1), 2, backward_range, &j);
}

const cf_opdef cf_op_neg = {
    .name = "-", .what = "negation", .infer = cf_same_shape, .forward = act_forward, .backward = act_backward,
    .flags = CF_POSITIONWISE, .nin = 1,
    .flops = cf_flops_elementwise, .onnx = "Neg",
};
const cf_opdef cf_op_sigmoid = {
    .name = "sigmoid", .what = "sigmoid", .infer = cf_same_shape, .forward = act_forward,
    .backward = act_backward, .flags = CF_BWD_Y | CF_CALL | CF_POSITIONWISE, .nin = 1,
    .flops = cf_flops_elementwise, .onnx = "Sigmoid",
};
const cf_opdef cf_op_tanh = {
    .name = "tanh", .what = "tanh", .infer = cf_same_shape, .forward = act_forward, .backward = act_backward,
    .flags = CF_BWD_Y | CF_CALL | CF_POSITIONWISE, .nin = 1,
    .flops = cf_flops_elementwise, .onnx = "Tanh",
};
const cf_opdef cf_op_relu = {
    .name = "relu", .what = "relu", .infer = cf_same_shape, .forward = act_forward, .backward = act_backward,
    .flags = CF_BWD_Y | CF_CALL | CF_POSITIONWISE, .nin = 1,
    .flops = cf_flops_elementwise, .onnx = "Relu",
};
const cf_opdef cf_op_leakyrelu = {
    .name = "leakyrelu", .what = "leakyrelu", .infer = cf_same_shape, .forward = act_forward,
    .backward = act_backward, .flags = CF_BWD_X | CF_CALL | CF_POSITIONWISE, .nin = 1,
    .attrs = {{"slope", 'f', 0, 0.01f, .onnx_attr = "alpha"}},
    .flops = cf_flops_elementwise, .onnx = "LeakyRelu",
};
const cf_opdef cf_op_exp = {
    .name = "exp", .what = "exp", .infer = cf_same_shape, .forward = act_forward, .backward = act_backward,
    .flags = CF_BWD_Y | CF_CALL | CF_POSITIONWISE, .nin = 1,
    .flops = cf_flops_elementwise, .onnx = "Exp",
};
const cf_opdef cf_op_log = {
    .name = "log", .what = "log", .infer = cf_same_shape, .forward = act_forward, .backward = act_backward,
    .flags = CF_BWD_X | CF_CALL | CF_POSITIONWISE, .nin = 1,
    .flops = cf_flops_elementwise, .onnx = "Log",
};
