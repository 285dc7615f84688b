/* dropout.c - dropout(x, p), p in node->attr.f[0] (0 <= p < 1): y has x's shape.
 *
 * In training (k->ctx->train), element i is kept with probability 1 - p and scaled by
 * 1 / (1 - p), zeroed otherwise: kept when cf_rng_at(key ^ node id * golden, i) >= p,
 * with the run's key, which changes with every forward (the step) and follows the
 * model's seed. The same mask at any thread count. Forward saves each element's factor
 * (0 or 1 / (1 - p)) in aux; backward multiplies dy by it. In evaluation y = x, and
 * backward passes dy through. */
#include "core/error.h"
#include "core/rng.h"
#include "ops/op.h"

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
    float p, scale;
} job;

static void train_range(void *v, size_t b, size_t e)
{
    const job *j = v;
    const float *restrict x = j->k->x[0];
    float *restrict y = j->k->y, *restrict f = j->k->aux;
    for (size_t i = b; i < e; i++) {
        f[i] = cf_rng_at(j->key, i) >= j->p ? j->scale : 0.0f;
        y[i] = x[i] * f[i];
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
    job j = {k, k->ctx->key ^ ((uint64_t)k->node->id * 0x9e3779b97f4a7c15ull), p, 1.0f / (1.0f - p)};
    size_t n = cf_shape_count_b(k->ys, 1);
    if (k->ctx->train)
        cf_parallel_range(n, 8, train_range, &j);
    else
        cf_parallel_range(n, 1, copy_range, &j);
    return 0;
}

static void dropout_backward(const cf_inst *k)
{
    job j = {k, 0, 0, 0};
    cf_parallel_range(cf_shape_count_b(k->ys, 1), 2, backward_range, &j);
}

const cf_opdef cf_op_dropout = {"dropout", "dropout", dropout_infer, dropout_aux, NULL, dropout_forward,
                                dropout_backward, 0, 0, 1, 0, NULL};
