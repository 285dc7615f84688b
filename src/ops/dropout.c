/* dropout.c - dropout(x, p), p in node->attr.f[0] (0 <= p < 1): y has x's shape.
 *
 * In training (k->ctx->train), element i is kept with probability 1 - p and scaled by
 * 1 / (1 - p), zeroed otherwise. Its mask is a 32-bit hash of i and the key
 * (cf_vdropout, rt/vmath.h), the key the run's (it changes with every forward, the
 * step, and follows the model's seed) mixed with the node's id, and with i's bits past
 * 32 for a tensor that large: the same mask at any thread count, up to sixteen
 * elements at a time. Forward saves each element's factor (0 or 1 / (1 - p)) in aux; backward
 * multiplies dy by it. In evaluation y = x, and backward passes dy through. */
#include <math.h>

#include "core/error.h"
#include "core/rng.h"
#include "ops/op.h"
#include "rt/cpu.h"
#include "rt/vmath.h"

static int dropout_infer(cf_node *n)
{
    float p = n->attr.f[0];
    if (!(p >= 0 && p < 1))
        return cf_seterr("error: dropout rate %g: it must be at least 0 and below 1", (double)p);
    return cf_same_shape(n);
}

static size_t dropout_aux(const cf_inst *k) { return cf_shape_count_b(k->ys, 1); }

typedef struct {
    const cf_inst *k;
    uint64_t key;
    float scale;
    uint32_t thr;   /* kept when the hash is at least this: p 2^32 */
    int isa;          /* 2: AVX-512, 1: AVX2, 0: neither */
} job;

static void train_range(void *v, size_t b, size_t e)
{
    const job *j = v;
    const cf_inst *k = j->k;
    while (b < e) {   /* in blocks of 2^32 indices, each with its own key */
        size_t hi = b >> 32, end = (hi + 1) << 32 < e ? (hi + 1) << 32 : e;
        uint64_t key = j->key ^ (uint64_t)hi * 0xd1b54a32d192ed03ull;
        uint32_t k1 = (uint32_t)key, k2 = (uint32_t)(key >> 32);
#if defined(__x86_64__)
        if (j->isa == 2)
            cf_vdropout_avx512(k->y + b, k->aux + b, k->x[0] + b, end - b, (uint32_t)b, k1, k2, j->thr, j->scale);
        else if (j->isa == 1)
            cf_vdropout_avx2(k->y + b, k->aux + b, k->x[0] + b, end - b, (uint32_t)b, k1, k2, j->thr, j->scale);
        else
#endif
            cf_vdropout(k->y + b, k->aux + b, k->x[0] + b, end - b, (uint32_t)b, k1, k2, j->thr, j->scale);
        b = end;
    }
}

static void copy_range(void *v, size_t b, size_t e)
{
    const cf_inst *k = ((const job *)v)->k;
    for (size_t i = b; i < e; i++) k->y[i] = k->x[0][i];
}

static void backward_range(void *v, size_t b, size_t e)
{
    const cf_inst *k = ((const job *)v)->k;
    const float *restrict dy = k->dy, *restrict f = k->aux;
    float *restrict dx = k->dx[0];
    for (size_t i = b; i < e; i++) {
        float g = k->ctx->train ? dy[i] * f[i] : dy[i];
        dx[i] = k->acc[0] ? dx[i] + g : g;
    }
}

static int dropout_forward(const cf_inst *k)
{
    float p = k->node->attr.f[0];
    double t = ldexp((double)p, 32);
    job j = {k, cf_rng_mix(k->ctx->key ^ ((uint64_t)k->node->id * 0x9e3779b97f4a7c15ull)), 1.0f / (1.0f - p),
             t < 4294967295.0 ? (uint32_t)t : 0xffffffffu, cf_cpu_avx512(cf_cpu()) ? 2 : cf_cpu_avx2(cf_cpu())};
    size_t n = cf_shape_count_b(k->ys, 1);
    if (k->ctx->train)
        cf_parallel_range(n, 8, train_range, &j);
    else
        cf_parallel_range(n, 1, copy_range, &j);
    return 0;
}

static void dropout_backward(const cf_inst *k)
{
    job j = {k, 0, 0, 0, 0};
    cf_parallel_range(cf_shape_count_b(k->ys, 1), 2, backward_range, &j);
}

const cf_opdef cf_op_dropout = {
    .name = "dropout", .what = "dropout", .infer = dropout_infer, .aux = dropout_aux,
    .forward = dropout_forward, .backward = dropout_backward, .nin = 1,
    .flops = cf_flops_elementwise,   /* in training, x times its mask */
};
