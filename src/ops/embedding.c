/* embedding.c - embedding(x, E): rows of a table picked by index, PyTorch's
 * nn.Embedding without a one-hot matrix product.
 *
 *   x (B, ...) class indices stored as floats, E (V, D) a parameter -> y (B, ..., D),
 *   y[..., :] = E[x[...], :]
 *
 * Forward first checks every index (cf_check_indices: a whole number in 0..V-1;
 * anything else fails with the value, its place in x and V), then copies the rows. No gradient reaches x
 * (nograd bit 0). dE is a scatter-add of dy's rows: dE[x[r], c] += dy[r, c] for every
 * row r in order. The columns c are split between threads, each thread adding its
 * columns of every row in the order of r, so every element of dE sums the same terms
 * in the same order at any thread count: the same bits.
 *
 * cf_model_input_classes, the public query that tells tools an input holds indices,
 * lives here too: it is a question about this op. */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"
#include "ops/op.h"

static int embedding_infer(cf_node *n)
{
    const cf_node *x = n->in[0], *E = n->in[1];
    char sx[96], se[96];
    if (E->shape.rank != 2 || E->batched)
        return cf_seterr("error: embedding takes the table E as (V, D) without the batch dimension, not %s",
                         cf_shape_str(E->shape, se, sizeof se));
    if (x->shape.rank >= CF_MAX_DIMS)
        return cf_seterr("error: embedding of indices %s would have more than %d dimensions",
                         cf_shape_str(x->shape, sx, sizeof sx), CF_MAX_DIMS);
    n->shape = x->shape;
    n->shape.d[n->shape.rank++] = E->shape.d[1];
    return 0;
}

/* Write x's multi-index of flat position r, "[3, 12]", into buf. */
static char *position(cf_shape s, size_t r, char *buf, size_t size)
{
    size_t idx[CF_MAX_DIMS];
    for (int i = s.rank - 1; i >= 0; i--) {
        idx[i] = r % (size_t)s.d[i];
        r /= (size_t)s.d[i];
    }
    size_t k = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < s.rank && k < size; i++) k += (size_t)snprintf(buf + k, size - k, "%s%zu", i ? ", " : "", idx[i]);
    if (k < size) snprintf(buf + k, size - k, "]");
    return buf;
}

typedef struct {
    const cf_inst *k;
    size_t rows;     /* indices in x */
    int V, D;
} job;

static void copy_rows(void *v, size_t b, size_t e)
{
    const job *j = v;
    const float *restrict x = j->k->x[0], *restrict E = j->k->x[1];
    float *restrict y = j->k->y;
    size_t D = (size_t)j->D;
    for (size_t r = b; r < e; r++) memcpy(y + r * D, E + (size_t)x[r] * D, D * sizeof *y);
}

int cf_check_indices(const float *x, cf_shape xs, int V)
{
    size_t n = cf_shape_count_b(xs, 1);
    for (size_t r = 0; r < n; r++) {
        float v = x[r];
        if (!(v >= 0 && v < (float)V && v == (float)(long)v)) {
            char at[160], s[96];
            return cf_seterr("error: embedding: x%s is %g, not an index in 0..%d (the table E has %d rows; x is %s)",
                             position(xs, r, at, sizeof at), (double)v, V - 1, V, cf_shape_str(xs, s, sizeof s));
        }
    }
    return 0;
}

static int embedding_forward(const cf_inst *k)
{
    job j = {k, cf_shape_count_b(k->xs[0], 1), k->xs[1].d[0], k->xs[1].d[1]};
    if (cf_check_indices(k->x[0], k->xs[0], j.V)) return -1;
    cf_parallel_range(j.rows, (size_t)j.D, copy_rows, &j);
    return 0;
}

/* Columns [b, e) of dE: zeroed unless accumulating, then every row of dy added in order. */
static void scatter_cols(void *v, size_t b, size_t e)
{
    const job *j = v;
    const float *restrict x = j->k->x[0], *restrict dy = j->k->dy;
    float *restrict dE = j->k->dx[1];
    size_t D = (size_t)j->D, w = e - b;
    if (!j->k->acc[1])
        for (size_t i = 0; i < (size_t)j->V; i++) memset(dE + i * D + b, 0, w * sizeof *dE);
    for (size_t r = 0; r < j->rows; r++) {
        if (!(x[r] >= 0 && x[r] < (float)j->V)) continue;   /* checked by forward; x rewritten since: never out of E */
        float *restrict to = dE + (size_t)x[r] * D + b;
        const float *restrict from = dy + r * D + b;
        for (size_t c = 0; c < w; c++) to[c] += from[c];
    }
}

static void embedding_backward(const cf_inst *k)
{
    if (!k->dx[1]) return;
    job j = {k, cf_shape_count_b(k->xs[0], 1), k->xs[1].d[0], k->xs[1].d[1]};
    cf_parallel_range((size_t)j.D, j.rows + (size_t)j.V, scatter_cols, &j);
}

/* A copy; back: dy's rows added into dE. */
static void embedding_flops(const cf_node *n, const unsigned char *want, double *fwd, double *bwd)
{
    *fwd = 0;
    *bwd = want[1] ? cf_count1(n->shape) : 0;
}

const cf_opdef cf_op_embedding = {
    .name = "embedding", .what = "embedding", .infer = embedding_infer, .forward = embedding_forward,
    .backward = embedding_backward, .flags = CF_BWD_X, .nograd = 1u, .nin = 2,
    .flops = embedding_flops,
};
