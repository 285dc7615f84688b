/* attention.c - softmax(q k^T) v in one op, tiled over keys, never holding the
 * matrix of scores: what the fuse_attention pass makes of
 *   a = softmax(q * transpose(k, -2, -1), causal = c);  [a = dropout(a, p);]  a * v
 * q (..., T, D), k (..., S, D), v (..., S, Dv) -> y (..., T, Dv), the leading
 * dimensions the same for all three (one matrix of each per batch and head, l).
 * attr.f[0] non-zero: causal, query i sees keys 0 .. S - T + i (all of them when T is S:
 * 0 .. i; a query appended to S - 1 cached keys sees them all); attr.f[1] the dropout
 * rate p on the probabilities, attr.i[0] the id of the dropout node it came from,
 * whose mask it draws (element (l, i, j) of the (..., T, S) matrix is element
 * (l T + i) S + j of that dropout, with its key): the same numbers as the unfused ops.
 * The scale (1 / sqrt(D)) is q's, before.
 *
 * A fourth input, pos (B, 1), makes it a step against cached keys (cf_model_load_cached):
 * causal, the queries of sample b at positions pos[b] .. pos[b] + T - 1, query i seeing
 * keys 0 .. pos[b] + i of the S the cache holds (the keys past those are not yet
 * written). pos takes no gradient.
 *
 * Forward, for each l and block of BQ queries: the keys in tiles of BK, up to the
 * last one a query of the block sees (the masked tiles are skipped), with an online
 * softmax (FlashAttention): per row the running maximum m and sum s of exp(x - m);
 * a new tile's scores x raise m to m', the sum and the output row so far are scaled
 * by exp(m - m'), and y += exp(x - m') v (dropped out: times the mask's factor, the
 * sum not). y /= s at the end, and aux keeps L = m + log s per row, all the backward
 * needs to recompute the probabilities P = exp(x - L).
 *
 * Backward (per l, one thread, which owns dk and dv of l): Dr = dy_r . y_r per row
 * (the sum over j of dP_rj P_rj, dropout or not); then per block and tile, recomputed,
 * P = exp(q k^T - L), Pd = P f (f the mask's factor),
 *   dv += Pd^T dy,  dP = dy v^T,  dS = P (dP f - D),  dq += dS k,  dk += dS^T q. */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "ops/op.h"
#include "rt/cpu.h"
#include "rt/vmath.h"

#define BQ 32    /* queries in a block */
#define BK 128   /* keys in a tile */

static int attention_infer(cf_node *n)
{
    if (n->nin != 3 && n->nin != 4) return cf_seterr("error: attention takes q, k, v and, cached, the positions");
    const cf_node *q = n->in[0], *k = n->in[1], *v = n->in[2];
    cf_shape qs = q->shape, ks = k->shape, vs = v->shape;
    char a[96], b[96], c[96];
    int r = qs.rank, ok = r >= 2 && ks.rank == r && vs.rank == r && q->batched == k->batched &&
                          q->batched == v->batched && qs.d[r - 1] == ks.d[r - 1] && ks.d[r - 2] == vs.d[r - 2];
    for (int i = 0; ok && i < r - 2; i++) ok = qs.d[i] == ks.d[i] && qs.d[i] == vs.d[i];
    if (!ok)
        return cf_seterr("error: attention needs q (..., T, D), k (..., S, D) and v (..., S, Dv) with the same "
                         "leading dimensions: %s, %s, %s", cf_shape_str(qs, a, sizeof a),
                         cf_shape_str(ks, b, sizeof b), cf_shape_str(vs, c, sizeof c));
    if (n->attr.f[0] != 0 && ks.d[r - 2] < qs.d[r - 2])
        return cf_seterr("error: causal attention needs at least as many keys as queries: %s, %s",
                         cf_shape_str(qs, a, sizeof a), cf_shape_str(ks, b, sizeof b));
    if (n->nin == 4) {
        cf_shape ps = n->in[3]->shape;
        if (!n->in[3]->batched || !q->batched || ps.rank != 2 || ps.d[1] != 1 || n->attr.f[0] == 0)
            return cf_seterr("error: cached attention needs causal attention of a batch and its positions (B, 1), "
                             "not %s", cf_shape_str(ps, a, sizeof a));
    }
    if (!(n->attr.f[1] >= 0 && n->attr.f[1] < 1))
        return cf_seterr("error: dropout rate %g: it must be at least 0 and below 1", (double)n->attr.f[1]);
    n->shape = qs;
    n->shape.d[r - 1] = vs.d[r - 1];
    n->batched = q->batched;
    return 0;
}

/* The sizes of one instance, and the dropout it draws. */
typedef struct geom {
    const cf_inst *k;
    size_t L, T, S, D, Dv, off;   /* off: S - T, causal; the queries' first key past what they see */
    int causal, drop, isa;        /* isa 2: AVX-512, 1: AVX2 (exp), 0: neither */
    cf_dropout d;                 /* the dropout node's mask (ops/dropout.c) */
    size_t nqb;                   /* blocks of queries per l */
    const float *pos;             /* cached: each sample's first position, NULL otherwise */
    size_t per_b;                 /* matrices l per sample */
} geom;

static geom geom_of(const cf_inst *k)
{
    cf_shape qs = k->xs[0], vs = k->xs[2];
    int r = qs.rank;
    geom g = {.k = k, .T = (size_t)qs.d[r - 2], .S = (size_t)k->xs[1].d[r - 2], .D = (size_t)qs.d[r - 1],
              .Dv = (size_t)vs.d[r - 1], .causal = k->node->attr.f[0] != 0};
    g.L = cf_shape_count_b(qs, 1) / (g.T * g.D);
    g.off = g.causal ? g.S - g.T : 0;
    g.nqb = (g.T + BQ - 1) / BQ;
    if (k->nin == 4) {
        g.pos = k->x[3];
        g.per_b = g.L / (size_t)qs.d[0];
    }
    float p = k->node->attr.f[1];
    g.drop = k->ctx && k->ctx->train && p > 0;
    if (g.drop) g.d = cf_dropout_of(k->ctx, k->node->attr.i[0], p);
#if defined(__x86_64__)
    g.isa = cf_cpu_avx512(cf_cpu()) ? 2 : cf_cpu_avx2(cf_cpu());
#endif
    return g;
}

/* Keys that query i of matrix l sees: all S, or 0 .. off + i when causal (off the
 * sample's position, cached). */
static inline size_t seen(const geom *g, size_t l, size_t i)
{
    if (!g->causal) return g->S;
    return (g->pos ? (size_t)g->pos[l / g->per_b] : g->off) + i + 1;
}

/* The dropout of keys j0 .. j0 + n of query i of matrix l, as ops/dropout.c draws it:
 * f[j] its factor (0 or 1 / (1 - p)), y[j] = x[j] f[j] (y may be x). */
static void drop_row(const geom *g, size_t l, size_t i, size_t j0, size_t n, float *y, float *f, const float *x)
{
    cf_dropout_run(&g->d, y, f, x, (l * g->T + i) * g->S + j0, n);
}

/* x[j] = exp(x[j] - c) for j < n, the widest way the CPU has (the same bits each
 * way); their sum. */
static float exp_sum(const geom *g, float *x, float c, size_t n)
{
#if defined(__x86_64__)
    if (g->isa == 2) {
        float s = 0;
        for (size_t j = 0; j < n; j++) x[j] -= c;
        cf_vexp_avx512(x, x, n);
        for (size_t j = 0; j < n; j++) s += x[j];
        return s;
    }
#endif
    (void)g;
    return cf_vexp_sum(x, x, c, n);
}

/* s (bq x bk) = q (bq x D) k^T (k: bk x D). A few queries (a step against a cache)
 * as dot products, where packing k for the product would cost more than the product. */
static void scores(size_t bq, size_t bk, size_t D, const float *q, const float *k, float *s)
{
    if (bq > 4) {
        cf_gemm(0, 1, (int)bq, (int)bk, (int)D, 1.0f, q, (int)D, k, (int)D, 0.0f, s, (int)bk);
        return;
    }
    for (size_t r = 0; r < bq; r++)
        for (size_t j = 0; j < bk; j++) {
            const float *x = q + r * D, *y = k + j * D;
            float a[8] = {0};   /* eight partial sums: a vector's lanes */
            size_t d = 0;
            for (; d + 8 <= D; d += 8)
                for (int t = 0; t < 8; t++) a[t] += x[d + t] * y[d + t];
            float sum = ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
            for (; d < D; d++) sum += x[d] * y[d];
            s[r * bk + j] = sum;
        }
}

static void forward_blocks(void *p, size_t b, size_t e)
{
    const geom *g = p;
    const cf_inst *k = g->k;
    size_t T = g->T, S = g->S, D = g->D, Dv = g->Dv;
    float s[BQ * BK], f[BK], mx[BQ], sum[BQ];
    for (size_t t = b; t < e; t++) {
        size_t l = t / g->nqb, i0 = t % g->nqb * BQ, bq = T - i0 < BQ ? T - i0 : BQ;
        const float *q = k->x[0] + (l * T + i0) * D, *kk = k->x[1] + l * S * D, *v = k->x[2] + l * S * Dv;
        float *y = k->y + (l * T + i0) * Dv, *lse = k->aux ? k->aux + l * T + i0 : NULL;
        size_t last = seen(g, l, i0 + bq - 1);   /* keys the block's last query sees */
        for (size_t r = 0; r < bq; r++) mx[r] = -INFINITY, sum[r] = 0;
        for (size_t j0 = 0; j0 < last; j0 += BK) {
            size_t bk = last - j0 < BK ? last - j0 : BK;
            scores(bq, bk, D, q, kk + j0 * D, s);
            for (size_t r = 0; r < bq; r++) {
                float *x = s + r * bk, *yr = y + r * Dv;
                size_t n = seen(g, l, i0 + r) - j0;
                if ((ptrdiff_t)n <= 0) {   /* a causal row that sees none of this tile */
                    memset(x, 0, bk * sizeof *x);
                    continue;
                }
                n = n < bk ? n : bk;
                float m = mx[r];
                for (size_t j = 0; j < n; j++) m = x[j] > m ? x[j] : m;
                float c = mx[r] == -INFINITY ? 0.0f : expf(mx[r] - m);
                sum[r] = sum[r] * c + exp_sum(g, x, m, n);
                mx[r] = m;
                for (size_t j = n; j < bk; j++) x[j] = 0;
                if (j0 > 0)
                    for (size_t d = 0; d < Dv; d++) yr[d] *= c;
                if (g->drop) drop_row(g, l, i0 + r, j0, n, x, f, x);
            }
            cf_gemm(0, 0, (int)bq, (int)Dv, (int)bk, 1.0f, s, (int)bk, v + j0 * Dv, (int)Dv, j0 > 0 ? 1.0f : 0.0f, y,
                    (int)Dv);
        }
        for (size_t r = 0; r < bq; r++) {
            float inv = 1.0f / sum[r];
            for (size_t d = 0; d < Dv; d++) y[r * Dv + d] *= inv;
            if (lse) lse[r] = mx[r] + logf(sum[r]);
        }
    }
}

/* Each sample's position a whole number with room for its T queries in the S keys:
 * 0, or -1 with the message. */
int cf_check_positions(const float *pos, size_t B, size_t T, size_t S)
{
    for (size_t b = 0; b < B; b++)
        if (!(pos[b] >= 0 && pos[b] + (float)T <= (float)S && pos[b] == (float)(size_t)pos[b]))
            return cf_seterr("error: sample %zu is at position %g, and the cache holds %zu positions: it is full "
                             "(cf_exec_reset_state empties it)", b, (double)pos[b], S);
    return 0;
}

static int attention_forward(const cf_inst *k)
{
    geom g = geom_of(k);
    if (g.pos && cf_check_positions(g.pos, (size_t)k->xs[0].d[0], g.T, g.S)) return -1;
    size_t work = g.S * (g.D + g.Dv) * BQ;
    cf_parallel_range(g.L * g.nqb, work, forward_blocks, &g);
    return 0;
}

static size_t attention_aux(const cf_inst *k)
{
    cf_shape qs = k->xs[0];
    return cf_shape_count_b(qs, 1) / (size_t)qs.d[qs.rank - 1];   /* one per query */
}

static size_t attention_workspace(const cf_inst *k) { return attention_aux(k); }   /* backward's D, per query */

static void backward_mats(void *p, size_t b, size_t e)
{
    const geom *g = p;
    const cf_inst *k = g->k;
    size_t T = g->T, S = g->S, D = g->D, Dv = g->Dv;
    float s[BQ * BK], pd[BQ * BK], ds[BQ * BK], fs[BQ * BK];   /* P, P f, dS, f */
    float *dq = k->dx[0], *dk = k->dx[1], *dv = k->dx[2];
    for (size_t l = b; l < e; l++) {
        const float *q = k->x[0] + l * T * D, *kk = k->x[1] + l * S * D, *v = k->x[2] + l * S * Dv;
        const float *y = k->y + l * T * Dv, *dy = k->dy + l * T * Dv, *lse = k->aux + l * T;
        float *dd = k->ws + l * T;
        for (size_t i = 0; i < T; i++) {
            float a = 0;
            for (size_t d = 0; d < Dv; d++) a += dy[i * Dv + d] * y[i * Dv + d];
            dd[i] = a;
        }
        if (dk && !k->acc[1]) memset(dk + l * S * D, 0, S * D * sizeof *dk);
        if (dv && !k->acc[2]) memset(dv + l * S * Dv, 0, S * Dv * sizeof *dv);
        for (size_t i0 = 0; i0 < T; i0 += BQ) {
            size_t bq = T - i0 < BQ ? T - i0 : BQ, last = seen(g, l, i0 + bq - 1);
            const float *qb = q + i0 * D, *dyb = dy + i0 * Dv;
            for (size_t j0 = 0; j0 < last; j0 += BK) {
                size_t bk = last - j0 < BK ? last - j0 : BK;
                cf_gemm(0, 1, (int)bq, (int)bk, (int)D, 1.0f, qb, (int)D, kk + j0 * D, (int)D, 0.0f, s, (int)bk);
                for (size_t r = 0; r < bq; r++) {   /* P, and P f */
                    float *x = s + r * bk, *xd = pd + r * bk;
                    size_t n = seen(g, l, i0 + r) - j0;
                    n = (ptrdiff_t)n <= 0 ? 0 : n < bk ? n : bk;
                    exp_sum(g, x, lse[i0 + r], n);
                    for (size_t j = n; j < bk; j++) x[j] = 0;
                    if (g->drop) {
                        drop_row(g, l, i0 + r, j0, n, xd, fs + r * bk, x);
                        for (size_t j = n; j < bk; j++) xd[j] = fs[r * bk + j] = 0;
                    }
                }
                const float *pf = g->drop ? pd : s;
                if (dv)
                    cf_gemm(1, 0, (int)bk, (int)Dv, (int)bq, 1.0f, pf, (int)bk, dyb, (int)Dv, 1.0f,
                            dv + (l * S + j0) * Dv, (int)Dv);
                if (!dq && !dk) continue;
                cf_gemm(0, 1, (int)bq, (int)bk, (int)Dv, 1.0f, dyb, (int)Dv, v + j0 * Dv, (int)Dv, 0.0f, ds, (int)bk);
                for (size_t r = 0; r < bq; r++) {   /* dS = P (dP f - D) */
                    float *x = s + r * bk, *dr = ds + r * bk, dm = dd[i0 + r];
                    if (g->drop) {
                        const float *f = fs + r * bk;
                        for (size_t j = 0; j < bk; j++) dr[j] = x[j] * (dr[j] * f[j] - dm);
                    } else {
                        for (size_t j = 0; j < bk; j++) dr[j] = x[j] * (dr[j] - dm);
                    }
                }
                if (dq)
                    cf_gemm(0, 0, (int)bq, (int)D, (int)bk, 1.0f, ds, (int)bk, kk + j0 * D, (int)D,
                            j0 > 0 || k->acc[0] ? 1.0f : 0.0f, dq + (l * T + i0) * D, (int)D);
                if (dk)
                    cf_gemm(1, 0, (int)bk, (int)D, (int)bq, 1.0f, ds, (int)bk, qb, (int)D, 1.0f, dk + (l * S + j0) * D,
                            (int)D);
            }
        }
    }
}

static void attention_backward(const cf_inst *k)
{
    geom g = geom_of(k);
    cf_parallel_range(g.L, g.T * g.S * (2 * g.D + 3 * g.Dv), backward_mats, &g);
}

/* The pairs of query and key that are computed, times per pair: forward the score
 * (2 D), its exponential and sums (5) and the weighted values (2 Dv); backward the
 * score again, dv, dP (2 Dv each), dq, dk (2 D each) and dS (4). */
static void attention_flops(const cf_node *n, const unsigned char *want, double *fwd, double *bwd)
{
    (void)want;
    cf_shape qs = n->in[0]->shape;
    int r = qs.rank;
    double T = qs.d[r - 2], S = n->in[1]->shape.d[r - 2], D = qs.d[r - 1], Dv = n->shape.d[r - 1];
    double mats = cf_count1(qs) / (T * D);
    double pairs = n->attr.f[0] != 0 ? T * (S - T) + T * (T + 1) / 2 : T * S;
    *fwd = mats * pairs * (2 * D + 2 * Dv + 5);
    *bwd = mats * pairs * (6 * D + 4 * Dv + 4);
}

const cf_opdef cf_op_attention = {
    .name = "attention", .what = "attention", .infer = attention_infer, .aux = attention_aux,
    .workspace = attention_workspace, .forward = attention_forward, .backward = attention_backward,
    .flags = CF_BWD_X | CF_BWD_Y | CF_WS_BACKWARD, .nograd = 8, .nin = CF_NIN_ANY, .flops = attention_flops,
};
