/* cache.c - what a model run one position at a time against a cache needs
 * (cf_model_load_cached), beside attention with positions (ops/attention.c).
 *
 * cache_write(c, x, pos): a cache of keys or values with the newest written in.
 *
 *   c (B, ..., S, D) the cache, x (B, ..., T, D) the new rows, pos (B, 1) where each
 *   sample's go -> y (B, ..., S, D): c, with rows pos[b] .. pos[b] + T - 1 of each of
 *   sample b's matrices x's.
 *
 * The cache is a carried state whose next value is y, so the rows written stay for the
 * steps after; the executor has it write them into the state's own memory
 * (CF_IN_PLACE), so nothing is copied but the new rows. A position that is not a whole number, or that leaves no room for T
 * rows, is an error (the cache is full). No gradient: it runs in inference.
 *
 * rows_at(P, pos): the rows of a table of positions at the positions reached,
 *   P (S, D), pos (B, 1) -> y (B, T, D), y[b] = P[pos[b] .. pos[b] + T - 1], T in
 *   attr.i[0]: what positions(P, x) gives for the T positions of x when they start
 *   at pos[b]. Past the table's end is the same error as the cache's, and so is past
 *   attr.i[1] positions when that is not 0 (the cache's size, which the table may
 *   exceed). */
#include <string.h>

#include "core/error.h"
#include "ops/op.h"

static int cache_infer(cf_node *n)
{
    const cf_node *c = n->in[0], *x = n->in[1], *pos = n->in[2];
    cf_shape cs = c->shape, xs = x->shape;
    char a[96], b[96];
    int r = cs.rank, ok = c->batched && x->batched && pos->batched && r >= 3 && xs.rank == r &&
                          xs.d[r - 1] == cs.d[r - 1] && xs.d[r - 2] <= cs.d[r - 2] && pos->shape.rank == 2 &&
                          pos->shape.d[1] == 1;
    for (int i = 1; ok && i < r - 2; i++) ok = xs.d[i] == cs.d[i];
    if (!ok)
        return cf_seterr("error: cache_write needs a cache (B, ..., S, D), rows (B, ..., T, D) with T at most S, "
                         "and positions (B, 1): %s, %s", cf_shape_str(cs, a, sizeof a), cf_shape_str(xs, b, sizeof b));
    n->shape = cs;
    n->batched = 1;
    return 0;
}

static int cache_forward(const cf_inst *k)
{
    cf_shape cs = k->xs[0], xs = k->xs[1];
    int r = cs.rank;
    size_t B = (size_t)cs.d[0], S = (size_t)cs.d[r - 2], T = (size_t)xs.d[r - 2], D = (size_t)cs.d[r - 1];
    size_t L = cf_shape_count_b(cs, 1) / (S * D), per_b = L / B;   /* matrices in all, per sample */
    if (cf_check_positions(k->x[2], B, T, S)) return -1;
    if (k->y != k->x[0]) memcpy(k->y, k->x[0], L * S * D * sizeof *k->y);
    for (size_t l = 0; l < L; l++) {
        size_t at = (size_t)k->x[2][l / per_b];
        memcpy(k->y + (l * S + at) * D, k->x[1] + l * T * D, T * D * sizeof *k->y);
    }
    return 0;
}

const cf_opdef cf_op_cache_write = {
    .name = "cache_write", .what = "cache write", .infer = cache_infer, .forward = cache_forward,
    .flags = CF_NO_FLOPS | CF_IN_PLACE, .nograd = 7, .nin = 3,
};

static int rows_infer(cf_node *n)
{
    const cf_node *P = n->in[0], *pos = n->in[1];
    char a[96];
    int T = n->attr.i[0];
    if (P->batched || P->shape.rank != 2 || !pos->batched || pos->shape.rank != 2 || pos->shape.d[1] != 1 || T < 1 ||
        T > P->shape.d[0])
        return cf_seterr("error: rows_at needs a table (S, D) of at least %d rows and positions (B, 1): %s", T,
                         cf_shape_str(P->shape, a, sizeof a));
    n->shape = (cf_shape){3, {CF_BATCH, T, P->shape.d[1]}};
    n->batched = 1;
    return 0;
}

static int rows_forward(const cf_inst *k)
{
    size_t B = (size_t)k->ys.d[0], T = (size_t)k->ys.d[1], D = (size_t)k->ys.d[2], S = (size_t)k->xs[0].d[0];
    int cache = k->node->attr.i[1];   /* the cache is full before the table's end: say so */
    if (cf_check_positions(k->x[1], B, T, cache > 0 && (size_t)cache < S ? (size_t)cache : S)) return -1;
    for (size_t b = 0; b < B; b++) memcpy(k->y + b * T * D, k->x[0] + (size_t)k->x[1][b] * D, T * D * sizeof *k->y);
    return 0;
}

const cf_opdef cf_op_rows_at = {
    .name = "rows_at", .what = "rows of positions", .infer = rows_infer, .forward = rows_forward,
    .flags = CF_NO_FLOPS, .nograd = 3, .nin = 2,
};
