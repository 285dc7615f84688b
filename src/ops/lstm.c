/* lstm.c - a whole LSTM layer over a sequence in one node: what the standard
 * library's LSTM computes at every step of an unroll, fused (the compiler puts it in
 * place of the per-step graphs, lang/unroll.c; the notation stays the definition, and
 * tests/test_lstm_fused.c holds the two to the same numbers).
 *
 *   inputs: h0, c0 (B, H) the carried states, W (I, 4H), U (H, 4H), b (1, 4H) with
 *   the gates side by side in PyTorch's order i, f, g, o, then either the sequences
 *   x (B, T, I), or a table E (V, I) and indices x (B, T): the rows of E picked by
 *   index are the sequences (an Embedding before the LSTM, folded in).
 *   output: y (B, T, 2H), at each step h then c.
 *
 *   z = x_t W + h_{t-1} U + b;  i, f, o = σ(z_i, z_f, z_o);  g = tanh(z_g)
 *   c_t = f c_{t-1} + i g;      h_t = o tanh(c_t)
 *
 * The input products of all steps are one product before the loop; with indices
 * into a table of fewer rows than the sequences hold, it is the table's product E W
 * (V rows, not B T) and a look-up. Each step is then one product h_{t-1} U and the
 * gates. Backward runs the steps in reverse, one product dz_t U^T each, and after the
 * loop the parameters' gradients are one product each over all B T rows.
 *
 * Threads: each sequence's steps depend on that sequence alone, so with 8 or more
 * sequences a thread, the threads split the sequences and run all their steps in one
 * parallel region, never waiting for each other (U packed once, shared). With fewer,
 * they split each step's units, a region a step: the gate columns are regrouped in
 * blocks of w hidden units (32 or 8 where they divide H, else w = H), a block holding
 * its units' i, f, o and g side by side, so that a thread owning some blocks owns
 * every gate of its units. The value of an element does not depend on the split.
 *
 * aux: the gates (B T 4H, regrouped, after σ and tanh), tanh(c_t) (B T H), W, U and
 * b regrouped, and with indices not folded the rows of E they pick (made once by
 * forward, read by backward). h0, c0 and the indices take no gradient (the carried
 * states are where truncated back-propagation through time stops). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ops/op.h"
#include "rt/cpu.h"
#include "rt/lstm_cell.h"

enum { IN_H0, IN_C0, IN_W, IN_U, IN_B, IN_X, IN_IDS };

static int indexed(const cf_node *n) { return n->nin == 7; }

static int lstm_infer(cf_node *n)
{
    char s1[96], s2[96];
    if (n->nin != 6 && n->nin != 7) return cf_seterr("error: lstm takes 6 or 7 inputs, not %d", n->nin);
    const cf_node *W = n->in[IN_W], *U = n->in[IN_U], *b = n->in[IN_B];
    if (U->batched || U->shape.rank != 2 || U->shape.d[1] != 4 * U->shape.d[0])
        return cf_seterr("error: lstm: U must be (H, 4H), not %s", cf_shape_str(U->shape, s1, sizeof s1));
    int H = U->shape.d[0];
    if (W->batched || W->shape.rank != 2 || W->shape.d[1] != 4 * H)
        return cf_seterr("error: lstm: W must be (I, %d), not %s", 4 * H, cf_shape_str(W->shape, s1, sizeof s1));
    if (b->batched || cf_shape_count(b->shape) != (size_t)(4 * H))
        return cf_seterr("error: lstm: b must hold %d numbers, not %s", 4 * H, cf_shape_str(b->shape, s1, sizeof s1));
    for (int i = IN_H0; i <= IN_C0; i++) {
        const cf_node *s = n->in[i];
        if (!s->batched || s->shape.rank != 2 || s->shape.d[1] != H)
            return cf_seterr("error: lstm: the state %s must be (B, %d), not %s", i == IN_H0 ? "h" : "c", H,
                             cf_shape_str(s->shape, s1, sizeof s1));
    }
    const cf_node *x = n->in[indexed(n) ? IN_IDS : IN_X];
    int I = W->shape.d[0];
    if (indexed(n)) {
        const cf_node *E = n->in[IN_X];
        if (E->batched || E->shape.rank != 2 || E->shape.d[1] != I)
            return cf_seterr("error: lstm: the table E must be (V, %d), not %s", I,
                             cf_shape_str(E->shape, s1, sizeof s1));
        if (!x->batched || x->shape.rank != 2)
            return cf_seterr("error: lstm: indices must be (B, T), not %s", cf_shape_str(x->shape, s1, sizeof s1));
    } else if (!x->batched || x->shape.rank != 3 || x->shape.d[2] != I) {
        return cf_seterr("error: lstm: sequences must be (B, T, %d) for W %s, not %s", I,
                         cf_shape_str(W->shape, s1, sizeof s1), cf_shape_str(x->shape, s2, sizeof s2));
    }
    n->shape = (cf_shape){3, {CF_BATCH, x->shape.d[1], 2 * H}};
    n->batched = 1;
    return 0;
}

typedef struct dims {
    int B, T, I, H, w, V;   /* V: rows of the table, 0 with sequences */
    size_t rows;            /* B T */
    int fold;               /* the table's product E W, looked up (V < B T) */
} dims;

static dims dims_of(const cf_inst *k)
{
    dims d = {0};
    d.H = k->xs[IN_U].d[0];
    d.I = k->xs[IN_W].d[0];
    d.B = k->xs[IN_H0].d[0];
    d.T = k->ys.d[1];
    d.w = d.H % 32 == 0 ? 32 : d.H % 8 == 0 ? 8 : d.H;
    d.rows = (size_t)d.B * (size_t)d.T;
    if (indexed(k->node)) {
        d.V = k->xs[IN_X].d[0];
        d.fold = (size_t)d.V < d.rows;
    }
    return d;
}

/* The regrouped column of gate q (0 i, 1 f, 2 g, 3 o) of unit j. */
static size_t col(const dims *d, int q, int j)
{
    static const int slot[4] = {0, 1, 3, 2};   /* i f o g: the three sigmoids first */
    return (size_t)(j / d->w) * 4 * d->w + (size_t)slot[q] * d->w + (size_t)(j % d->w);
}

/* Rows of 4H columns: regroup src into dst, a run of w units at a time. */
static void regroup(const dims *d, const float *src, float *dst, size_t rows)
{
    size_t G = 4 * (size_t)d->H, w = (size_t)d->w;
    for (size_t r = 0; r < rows; r++)
        for (int q = 0; q < 4; q++)
            for (int j = 0; j < d->H; j += d->w)
                memcpy(dst + r * G + col(d, q, j), src + r * G + (size_t)q * d->H + j, w * sizeof *dst);
}

/* The inverse, into a gradient: dst = src (acc 0) or dst += src. */
static void ungroup(const dims *d, const float *src, float *dst, size_t rows, int acc)
{
    size_t G = 4 * (size_t)d->H;
    for (size_t r = 0; r < rows; r++)
        for (int q = 0; q < 4; q++)
            for (int j = 0; j < d->H; j += d->w) {
                const float *from = src + r * G + col(d, q, j);
                float *to = dst + r * G + (size_t)q * d->H + j;
                if (acc)
                    for (int k = 0; k < d->w; k++) to[k] += from[k];
                else
                    memcpy(to, from, (size_t)d->w * sizeof *to);
            }
}

/* Workspace layout, shared by forward and backward. */
typedef struct space {
    float *W, *U, *b;     /* regrouped parameters (in aux: forward makes them, backward reads them) */
    float *X;             /* gathered rows of E (indices, not folded): B T x I, in aux */
    float *P;             /* folded: E W (V x 4H); in backward its gradient */
    float *Up;            /* U packed for the steps' products: forward U, backward U^T */
    float *dZ, *dh, *dc, *db, *Hp, *dW, *dU, *dX;
} space;

static size_t carve(const dims *d, float *base, space *s, int backward)
{
    size_t G = 4 * (size_t)d->H, n = 0;
#define TAKE(p, count) do { if (s) s->p = base + n; n += (count); } while (0)
    if (d->fold) TAKE(P, (size_t)d->V * G);
    size_t pf = cf_gemm_pb_floats(d->H, (int)G), pb = cf_gemm_pb_floats((int)G, d->H);
    TAKE(Up, (pf > pb ? pf : pb) + 16);   /* + 16: room to start it on 64 bytes, as packed panels must */
    if (s) s->Up = (float *)(((uintptr_t)s->Up + 63) & ~(uintptr_t)63);
    if (backward) {
        TAKE(dZ, d->rows * G);
        TAKE(dh, (size_t)d->B * d->H);
        TAKE(dc, (size_t)d->B * d->H);
        TAKE(Hp, d->rows * d->H);
        TAKE(dW, (size_t)d->I * G);
        TAKE(dU, (size_t)d->H * G);
        TAKE(db, G);
        if (d->V && !d->fold) TAKE(dX, d->rows * d->I);
    }
#undef TAKE
    return n;
}

static size_t lstm_workspace(const cf_inst *k)
{
    dims d = dims_of(k);
    return carve(&d, NULL, NULL, 1);
}

static size_t lstm_aux(const cf_inst *k)
{
    dims d = dims_of(k);
    size_t gathered = d.V && !d.fold ? d.rows * (size_t)d.I : 0;
    return d.rows * 5 * (size_t)d.H + ((size_t)d.I + (size_t)d.H + 1) * 4 * (size_t)d.H + gathered;
}

typedef struct job {
    const cf_inst *k;
    dims d;
    space s;
    float *Z, *tc;   /* aux */
    cf_gemm_pb U;    /* the steps' products' U (forward) or U^T (backward), packed */
    int t, tasks, nb, grain, avx2;
    int by_rows;     /* tasks split the sequences (all steps in one region), else the units */
} job;

/* A task's blocks: whole grains of blocks, so that its units start at a multiple of
 * 32 where they can (the packed products' panels). */
static void blocks_of(const job *j, int task, int *u0, int *u1)
{
    int n = j->nb / j->grain;
    *u0 = (int)((long)n * task / j->tasks) * j->grain;
    *u1 = (int)((long)n * (task + 1) / j->tasks) * j->grain;
}

/* A task's sequences [b0, b1) and blocks [u0, u1): some sequences and all units (by
 * rows, in fours where it can: the 4-row tile), or all sequences and some units. */
static void part_of(const job *j, int task, int *b0, int *b1, int *u0, int *u1)
{
    if (j->by_rows) {
        int n = (j->d.B + 3) / 4;
        *b0 = 4 * (int)((long)n * task / j->tasks);
        *b1 = 4 * (int)((long)n * (task + 1) / j->tasks);
        if (*b1 > j->d.B) *b1 = j->d.B;
        *u0 = 0;
        *u1 = j->nb;
    } else {
        *b0 = 0;
        *b1 = j->d.B;
        blocks_of(j, task, u0, u1);
    }
}

/* Step t of forward for sequences [b0, b1) and blocks [u0, u1): z += h_{t-1} U (after,
 * folded, z = (E W)[x] + b), the gates, c_t and h_t. */
static void forward_part(const job *j, int t, int b0, int b1, int u0, int u1)
{
    const dims *d = &j->d;
    int w = d->w;
    if (u0 == u1 || b0 == b1) return;
    size_t G = 4 * (size_t)d->H, Y2 = 2 * (size_t)d->H, c0 = (size_t)u0 * 4 * w;
    size_t nc = (size_t)(u1 - u0) * 4 * w;
    if (d->fold)   /* this step's input products: rows of E W, plus b */
        for (int bi = b0; bi < b1; bi++) {
            size_t r = (size_t)bi * d->T + t;
            const float *restrict pr = j->s.P + (size_t)j->k->x[IN_IDS][r] * G + c0, *restrict bias = j->s.b + c0;
            float *restrict z = j->Z + r * G + c0;
            for (size_t c = 0; c < nc; c++) z[c] = pr[c] + bias[c];
        }
    const float *hp = t ? j->k->y + ((size_t)b0 * d->T + t - 1) * Y2 : j->k->x[IN_H0] + (size_t)b0 * d->H;
    int ldh = t ? (int)((size_t)d->T * Y2) : d->H;
    cf_gemm_pb_run(&j->U, b1 - b0, (int)c0, (int)nc, 1.0f, hp, ldh, 1.0f, j->Z + ((size_t)b0 * d->T + t) * G + c0,
                   (int)((size_t)d->T * G));
    for (int bi = b0; bi < b1; bi++) {
        size_t r = (size_t)bi * d->T + t;
        float *y = j->k->y + r * Y2, *tc = j->tc + r * d->H;
        const float *cp = t ? y - Y2 + d->H : j->k->x[IN_C0] + (size_t)bi * d->H;
        int j0 = u0 * w;
        float *z = j->Z + r * G + c0;
#if defined(__x86_64__)
        if (j->avx2) cf_lstm_cell_fwd_avx2(z, w, u1 - u0, cp + j0, y + d->H + j0, tc + j0, y + j0);
        else
#endif
            cf_lstm_cell_fwd(z, w, u1 - u0, cp + j0, y + d->H + j0, tc + j0, y + j0);
    }
}

/* Step t of backward for sequences [b0, b1) and blocks [u0, u1): their part of dh_t
 * from the step after (dz_{t+1} U^T), then dz_t of their gates and dc_{t-1}. */
static void backward_part(const job *j, int t, int b0, int b1, int u0, int u1)
{
    const dims *d = &j->d;
    int w = d->w;
    if (u0 == u1 || b0 == b1) return;
    size_t G = 4 * (size_t)d->H, Y2 = 2 * (size_t)d->H;
    int j0 = u0 * w, nj = (u1 - u0) * w;
    if (t + 1 < d->T)
        cf_gemm_pb_run(&j->U, b1 - b0, j0, nj, 1.0f, j->s.dZ + ((size_t)b0 * d->T + t + 1) * G,
                       (int)((size_t)d->T * G), 0.0f, j->s.dh + (size_t)b0 * d->H + j0, d->H);
    else
        for (int bi = b0; bi < b1; bi++) memset(j->s.dh + (size_t)bi * d->H + j0, 0, (size_t)nj * sizeof(float));
    for (int bi = b0; bi < b1; bi++) {
        size_t r = (size_t)bi * d->T + t;
        const float *dy = j->k->dy + r * Y2, *y = j->k->y + r * Y2, *tc = j->tc + r * d->H;
        const float *cp = t ? y - Y2 + d->H : j->k->x[IN_C0] + (size_t)bi * d->H;
        float *dh = j->s.dh + (size_t)bi * d->H + j0, *dc = j->s.dc + (size_t)bi * d->H + j0;
        const float *z = j->Z + r * G + (size_t)u0 * 4 * w;
        float *dz = j->s.dZ + r * G + (size_t)u0 * 4 * w;
        int fresh = t + 1 == d->T;
#if defined(__x86_64__)
        if (j->avx2)
            cf_lstm_cell_bwd_avx2(z, w, u1 - u0, tc + j0, cp + j0, dy + j0, dy + d->H + j0, dh, dc, fresh, dz);
        else
#endif
            cf_lstm_cell_bwd(z, w, u1 - u0, tc + j0, cp + j0, dy + j0, dy + d->H + j0, dh, dc, fresh, dz);
    }
}

/* One task's share of one step (split by units: a region a step), or of every step
 * (split by sequences: each task's rows depend on its own rows only, one region). */
static void forward_task(void *p, int task)
{
    const job *j = p;
    int b0, b1, u0, u1;
    part_of(j, task, &b0, &b1, &u0, &u1);
    if (!j->by_rows) forward_part(j, j->t, b0, b1, u0, u1);
    else
        for (int t = 0; t < j->d.T; t++) forward_part(j, t, b0, b1, u0, u1);
}

static void backward_task(void *p, int task)
{
    const job *j = p;
    int b0, b1, u0, u1;
    part_of(j, task, &b0, &b1, &u0, &u1);
    if (!j->by_rows) backward_part(j, j->t, b0, b1, u0, u1);
    else
        for (int t = j->d.T - 1; t >= 0; t--) backward_part(j, t, b0, b1, u0, u1);
}

static void run_steps(job *j, void (*fn)(void *, int), int forward)
{
    if (j->by_rows) {
        if (j->tasks > 1) cf_parallel_for(j->tasks, fn, j);
        else fn(j, 0);
        return;
    }
    for (int s = 0; s < j->d.T; s++) {
        j->t = forward ? s : j->d.T - 1 - s;
        if (j->tasks > 1) cf_parallel_for(j->tasks, fn, j);
        else fn(j, 0);
    }
}

static void job_init(job *j, const cf_inst *k, int backward)
{
    memset(j, 0, sizeof *j);
    j->k = k;
    j->d = dims_of(k);
    carve(&j->d, k->ws, &j->s, backward);
    size_t G = 4 * (size_t)j->d.H;
    j->Z = k->aux;
    j->tc = j->Z + j->d.rows * G;
    j->s.W = j->tc + j->d.rows * (size_t)j->d.H;
    j->s.U = j->s.W + (size_t)j->d.I * G;
    j->s.b = j->s.U + (size_t)j->d.H * G;
    j->s.X = j->s.b + G;   /* the rows of E gathered, when indexed and not folded */
    j->nb = j->d.H / j->d.w;
    j->grain = j->d.w == 8 && j->nb % 4 == 0 ? 4 : 1;
    /* Split the sequences where each thread gets 8 or more (no waiting between steps),
     * else a step's units (a region a step) when its product, 8 B H^2 flops, pays for
     * waking the pool. */
    double flops = 8.0 * j->d.B * (double)j->d.H * j->d.H;
    int th = cf_threads(), n = j->nb / j->grain;
    j->by_rows = 1;
    j->tasks = 1;
    if (th > 1 && j->d.B >= 16 && flops >= 2e5) {
        j->tasks = th < j->d.B / 8 ? th : j->d.B / 8;
    } else if (th > 1 && flops >= 2e5) {
        j->by_rows = 0;
        j->tasks = th < n ? th : n;
    }
    j->avx2 = cf_cpu_avx2(cf_cpu());
    if (!backward) {   /* backward finds them in aux as forward left them */
        regroup(&j->d, k->x[IN_W], j->s.W, (size_t)j->d.I);
        regroup(&j->d, k->x[IN_U], j->s.U, (size_t)j->d.H);
        regroup(&j->d, k->x[IN_B], j->s.b, 1);
    }
    /* U packed once for all steps, unless a step's product has so few rows that it
     * streams U unpacked (batch 1, as when sampling) */
    float *pack = j->d.B > 4 ? j->s.Up : NULL;
    if (backward) cf_gemm_pb_make(&j->U, 1, (int)G, j->d.H, j->s.U, (int)G, pack);
    else cf_gemm_pb_make(&j->U, 0, j->d.H, (int)G, j->s.U, (int)G, pack);
}

/* The rows of E that the indices pick, when not folded. */
static void gather(const job *j)
{
    const float *x = j->k->x[IN_IDS], *E = j->k->x[IN_X];
    size_t I = (size_t)j->d.I;
    for (size_t r = 0; r < j->d.rows; r++) memcpy(j->s.X + r * I, E + (size_t)x[r] * I, I * sizeof(float));
}

/* Columns [b, e) of the bias's gradient: dZ summed over the rows in order, the same
 * bits at any thread count. */
static void sum_columns(void *p, size_t b, size_t e)
{
    const job *j = p;
    size_t G = 4 * (size_t)j->d.H;
    float *restrict db = j->s.db;
    memset(db + b, 0, (e - b) * sizeof *db);
    for (size_t r = 0; r < j->d.rows; r++) {
        const float *restrict dz = j->s.dZ + r * G;
        for (size_t c = b; c < e; c++) db[c] += dz[c];
    }
}

/* Columns [b, e) of the folded product's gradient, into P: dZ's rows added up by
 * index, in row order. */
static void scatter_columns(void *p, size_t b, size_t e)
{
    const job *j = p;
    const float *x = j->k->x[IN_IDS];
    size_t G = 4 * (size_t)j->d.H;
    for (size_t v = 0; v < (size_t)j->d.V; v++) memset(j->s.P + v * G + b, 0, (e - b) * sizeof(float));
    for (size_t r = 0; r < j->d.rows; r++) {
        float *restrict to = j->s.P + (size_t)x[r] * G;
        const float *restrict dz = j->s.dZ + r * G;
        for (size_t c = b; c < e; c++) to[c] += dz[c];
    }
}

static int lstm_forward(const cf_inst *k)
{
    job j;
    job_init(&j, k, 0);
    const dims *d = &j.d;
    int G = 4 * d->H;
    if (d->V && cf_check_indices(k->x[IN_IDS], k->xs[IN_IDS], d->V)) return cf_fail_folded(k->node);
    if (d->fold) {
        /* P = E W; then each row's input product is a row of P */
        cf_gemm(0, 0, d->V, G, d->I, 1.0f, k->x[IN_X], d->I, j.s.W, G, 0.0f, j.s.P, G);
        /* each step adds b and its rows of P (forward_step) */
    } else {
        const float *X = k->x[IN_X];
        if (d->V) {
            gather(&j);
            X = j.s.X;
        }
        cf_gemm_ep ep = {j.s.b, 0};
        cf_gemm_ep_run(0, 0, (int)d->rows, G, d->I, 1.0f, X, d->I, j.s.W, G, 0.0f, j.Z, G, &ep);
    }
    run_steps(&j, forward_task, 1);
    return 0;
}

static void lstm_backward(const cf_inst *k)
{
    job j;
    job_init(&j, k, 1);
    const dims *d = &j.d;
    int G = 4 * d->H, H = d->H;
    run_steps(&j, backward_task, 0);
    const float *dZ = j.s.dZ;
    /* h_{t-1} of every row, for dU */
    for (int bi = 0; bi < d->B; bi++)
        for (int t = 0; t < d->T; t++) {
            size_t r = (size_t)bi * d->T + t;
            const float *src = t ? k->y + (r - 1) * 2 * H : k->x[IN_H0] + (size_t)bi * H;
            memcpy(j.s.Hp + r * H, src, (size_t)H * sizeof(float));
        }
    if (k->dx[IN_U]) {
        cf_gemm(1, 0, H, G, (int)d->rows, 1.0f, j.s.Hp, H, dZ, G, 0.0f, j.s.dU, G);
        ungroup(d, j.s.dU, k->dx[IN_U], (size_t)H, k->acc[IN_U]);
    }
    if (k->dx[IN_B]) {
        cf_parallel_range((size_t)G, d->rows, sum_columns, &j);
        ungroup(d, j.s.db, k->dx[IN_B], 1, k->acc[IN_B]);
    }
    float *dE = d->V ? k->dx[IN_X] : NULL;
    if (d->fold) {
        /* dP (in P) = the rows of dZ added up by index; dW = E^T dP, dE = dP W^T */
        cf_parallel_range((size_t)G, d->rows, scatter_columns, &j);
        if (k->dx[IN_W]) {
            cf_gemm(1, 0, d->I, G, d->V, 1.0f, k->x[IN_X], d->I, j.s.P, G, 0.0f, j.s.dW, G);
            ungroup(d, j.s.dW, k->dx[IN_W], (size_t)d->I, k->acc[IN_W]);
        }
        if (dE) cf_gemm(0, 1, d->V, d->I, G, 1.0f, j.s.P, G, j.s.W, G, k->acc[IN_X] ? 1.0f : 0.0f, dE, d->I);
        return;
    }
    const float *X = d->V ? j.s.X : k->x[IN_X];   /* gathered by forward */
    if (k->dx[IN_W]) {
        cf_gemm(1, 0, d->I, G, (int)d->rows, 1.0f, X, d->I, dZ, G, 0.0f, j.s.dW, G);
        ungroup(d, j.s.dW, k->dx[IN_W], (size_t)d->I, k->acc[IN_W]);
    }
    if (!d->V && k->dx[IN_X])
        cf_gemm(0, 1, (int)d->rows, d->I, G, 1.0f, dZ, G, j.s.W, G, k->acc[IN_X] ? 1.0f : 0.0f, k->dx[IN_X], d->I);
    if (dE) {
        /* the rows' gradients, added into E's rows in row order */
        cf_gemm(0, 1, (int)d->rows, d->I, G, 1.0f, dZ, G, j.s.W, G, 0.0f, j.s.dX, d->I);
        if (!k->acc[IN_X]) memset(dE, 0, (size_t)d->V * d->I * sizeof *dE);
        const float *x = k->x[IN_IDS];
        for (size_t r = 0; r < d->rows; r++) {
            float *to = dE + (size_t)x[r] * d->I;
            const float *from = j.s.dX + r * d->I;
            for (int c = 0; c < d->I; c++) to[c] += from[c];
        }
    }
}

/* I inputs, H units, T steps, G = 4H gates. Forward: the input products of all steps
 * (2 T I G) and the bias (T G), the steps' products h U (2 T H G), the cells (9 T H: 4
 * gate functions, c, tanh c, h). Backward: the cells (24 T H), dh through U^T from the
 * second step on (2 (T-1) H G); dU (2 T H G), db (T G) and dW (2 T I G) when wanted;
 * the input's gradient dZ W^T (2 T I G), added into E's rows (T I) when the input is
 * an embedding folded in. */
static void lstm_flops(const cf_node *n, const unsigned char *want, double *fwd, double *bwd)
{
    double I = n->in[2]->shape.d[0], H = n->in[3]->shape.d[0], T = n->shape.d[1], G = 4 * H;
    double f = 2 * T * I * G + T * G + 2 * T * H * G + 9 * T * H;
    double b = 24 * T * H + 2 * (T - 1) * H * G;
    if (want[3]) b += 2 * T * H * G;
    if (want[4]) b += T * G;
    if (want[2]) b += 2 * T * I * G;
    if (want[5]) b += 2 * T * I * G + (n->nin == 7 ? T * I : 0);
    *fwd = f;
    *bwd = b;
}

const cf_opdef cf_op_lstm = {
    .name = "lstm", .what = "LSTM layer", .infer = lstm_infer, .aux = lstm_aux, .workspace = lstm_workspace,
    .forward = lstm_forward, .backward = lstm_backward, .flags = CF_BWD_X | CF_BWD_Y,
    .nograd = (1u << IN_H0) | (1u << IN_C0) | (1u << IN_IDS), .nin = CF_NIN_ANY,
    .flops = lstm_flops,
};
