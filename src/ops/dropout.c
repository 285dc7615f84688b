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

cf_dropout cf_dropout_of(const cf_runctx *ctx, int id, float p)
{
    double t = ldexp((double)p, 32);
    cf_dropout d = {cf_rng_mix(ctx->key ^ ((uint64_t)id * 0x9e3779b97f4a7c15ull)),
                    t < 4294967295.0 ? (uint32_t)t : 0xffffffffu, 1.0f / (1.0f - p), 0};
#if defined(__x86_64__)
    d.isa = cf_cpu_avx512(cf_cpu()) ? 2 : cf_cpu_avx2(cf_cpu());
#endif
    return d;
}

void cf_dropout_run(const cf_dropout *d, float *y, float *f, const float *x, size_t first, size_t n)
{
    size_t b = first, e = first + n;
    while (b < e) {   /* in blocks of 2^32 indices, each with its own key */
        size_t hi = b >> 32, end = (hi + 1) << 32 < e ? (hi + 1) << 32 : e, at = b - first;
        uint64_t key = d->key ^ (uint64_t)hi * 0xd1b54a32d192ed03ull;
        uint32_t k1 = (uint32_t)key, k2 = (uint32_t)(key >> 32);
#if defined(__x86_64__)
        if (d->isa == 2)
            cf_vdropout_avx512(y + at, f + at, x + at, end - b, (uint32_t)b, k1, k2, d->thr, d->scale);
        else if (d->isa == 1)
            cf_vdropout_avx2(y + at, f + at, x + at, end - b, (uint32_t)b, k1, k2, d->thr, d->scale);
        else
#endif
            cf_vdropout(y + at, f + at, x + at, end - b, (uint32_t)b, k1, k2, d->thr, d->scale);
        b = end;
    }
}

typedef struct {
    const cf_inst *k;
    cf_dropout d;
} job;

static void train_range(void *v, size_t b, size_t e)
{
    const job *j = v;
    const cf_inst *k = j->k;
    cf_dropout_run(&j->d, k->y + b, k->aux + b, k->x[0] + b, b, e - b);
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
    job j = {k, cf_dropout_of(k->ctx, k->node->id, k->node->attr.f[0])};
    size_t n = cf_shape_count_b(k->ys, 1);
    if (k->ctx->train)
        cf_parallel_range(n, 8, train_range, &j);
    else
        cf_parallel_range(n, 1, copy_range, &j);
    return 0;
}

static void dropout_backward(const cf_inst *k)
{
    job j = {k, {0}};
    cf_parallel_range(cf_shape_count_b(k->ys, 1), 2, backward_range, &j);
}

const cf_opdef cf_op_dropout = {
    .name = "dropout", .what = "dropout", .infer = dropout_infer, .aux = dropout_aux,
    .forward = dropout_forward, .backward = dropout_backward, .nin = 1,
    .flops = cf_flops_elementwise,   /* in training, x times its mask */
};
