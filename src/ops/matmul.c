/* matmul.c - the matrix product a * b.
 *   a (..., n, k) * b (k, m)      -> (..., n, m)   a's leading dims fold into rows
 *   a (..., n, k) * b (..., k, m) -> (..., n, m)   leading dims broadcast (numpy matmul)
 * Backward: da = dy b^T, db = a^T dy (summed over leading dims that were broadcast). */
#include <string.h>

#include "core/error.h"
#include "ops/op.h"

static int matmul_infer(cf_node *n)
{
    cf_shape a = n->in[0]->shape, b = n->in[1]->shape;
    char sa[96], sb[96];
    if (a.rank < 2 || b.rank < 2)
        return cf_seterr("error: matrix product needs two dimensions on each side: %s * %s",
                         cf_shape_str(a, sa, sizeof sa), cf_shape_str(b, sb, sizeof sb));
    if (a.d[a.rank - 1] != b.d[b.rank - 2] || a.d[a.rank - 1] == CF_BATCH) {
        /* an image (B, C, H, W) meeting an Affine's weights: the newcomer's slip */
        if (a.rank >= 4 && n->in[0]->batched && b.rank == 2 && n->frame && !strcmp(n->frame->name, "Affine"))
            return cf_seterr("error: an image %s reaches Affine: flatten first? (Chain(..., flatten, Affine(out)); "
                             "matrix product shapes do not match: %s * %s)", cf_shape_str(a, sa, sizeof sa), sa,
                             cf_shape_str(b, sb, sizeof sb));
        return cf_seterr("error: matrix product shapes do not match: %s * %s",
                         cf_shape_str(a, sa, sizeof sa), cf_shape_str(b, sb, sizeof sb));
    }
    int m = b.d[b.rank - 1];
    if (b.rank == 2) {
        n->shape = a;
        n->shape.d[a.rank - 1] = m;
        n->batched = n->in[0]->batched;
        return 0;
    }
    /* leading dims broadcast */
    cf_shape la = a, lb = b, lo;
    la.rank -= 2;
    lb.rank -= 2;
    int ob;
    if (cf_broadcast_shapes(n, la, n->in[0]->batched && la.rank > 0, lb, n->in[1]->batched, &lo, &ob))
        return cf_seterr("error: matrix product leading dimensions do not broadcast: %s * %s",
                         cf_shape_str(a, sa, sizeof sa), cf_shape_str(b, sb, sizeof sb));
    if (lo.rank + 2 > CF_MAX_DIMS)
        return cf_seterr("error: matrix product result has more than %d dimensions", CF_MAX_DIMS);
    n->shape = lo;
    n->shape.rank = lo.rank + 2;
    n->shape.d[lo.rank] = a.d[a.rank - 2];
    n->shape.d[lo.rank + 1] = m;
    n->batched = n->shape.d[0] == CF_BATCH;
    return 0;
}

/* For the broadcast case: per output matrix l, the index of a's and b's matrix. */
typedef struct {
    int rank;
    size_t od[CF_MAX_DIMS], sa[CF_MAX_DIMS], sb[CF_MAX_DIMS];
    size_t count;
} lead;

static void lead_init(lead *L, const cf_inst *k)
{
    int ol = k->ys.rank - 2;
    L->rank = ol;
    L->count = 1;
    for (int i = 0; i < ol; i++) {
        L->od[i] = (size_t)k->ys.d[i];
        L->count *= L->od[i];
    }
    cf_broadcast_strides(k->xs[0], k->xs[0].rank - 2, k->ys, ol, L->sa);
    cf_broadcast_strides(k->xs[1], k->xs[1].rank - 2, k->ys, ol, L->sb);
}

static void lead_at(const lead *L, size_t l, size_t *ia, size_t *ib)
{
    cf_walk_offsets(L->od, L->rank, L->sa, L->sb, l, ia, ib);
}

/* The products of a batch of matrices, as ranges of l for the pool: each matrix's
 * own product runs on one thread (its GEMM is small: attention's are T x d x T), so
 * the batch is what is split. The bits are those of one product after another. */
typedef struct {
    const cf_inst *k;
    lead L;
    int N, M, K;
} batch_job;

static void forward_range(void *p, size_t b, size_t e)
{
    const batch_job *j = p;
    const cf_inst *k = j->k;
    int N = j->N, M = j->M, K = j->K;
    for (size_t l = b; l < e; l++) {
        size_t ia, ib;
        lead_at(&j->L, l, &ia, &ib);
        cf_gemm(0, 0, N, M, K, 1.0f, k->x[0] + ia * N * K, K, k->x[1] + ib * K * M, M, 0.0f, k->y + l * N * M, M);
    }
}

static int matmul_forward(const cf_inst *k)
{
    const cf_shape a = k->xs[0], b = k->xs[1];
    int K = a.d[a.rank - 1], M = b.d[b.rank - 1];
    if (b.rank == 2) {
        int rows = (int)(cf_shape_count_b(a, 1) / (size_t)K);
        cf_gemm(0, 0, rows, M, K, 1.0f, k->x[0], K, k->x[1], M, 0.0f, k->y, M);
        return 0;
    }
    batch_job j = {k, {0}, a.d[a.rank - 2], M, K};
    lead_init(&j.L, k);
    cf_parallel_range(j.L.count, (size_t)j.N * (size_t)M * (size_t)K, forward_range, &j);
    return 0;
}

void cf_matmul_fused(const cf_inst *k, const float *bias, int relu)
{
    const cf_shape a = k->xs[0], b = k->xs[1];
    int K = a.d[a.rank - 1], M = b.d[b.rank - 1];
    int rows = (int)(cf_shape_count_b(a, 1) / (size_t)K);
    cf_gemm_ep ep = {bias, relu};
    cf_gemm_ep_run(0, 0, rows, M, K, 1.0f, k->x[0], K, k->x[1], M, 0.0f, k->y, M, &ep);
}

static void backward_range(void *p, size_t b, size_t e)
{
    const batch_job *j = p;
    const cf_inst *k = j->k;
    int N = j->N, M = j->M, K = j->K;
    float *da = k->dx[0], *db = k->dx[1];
    for (size_t l = b; l < e; l++) {
        size_t ia, ib;
        lead_at(&j->L, l, &ia, &ib);
        const float *dy = k->dy + l * N * M;
        if (da) cf_gemm(0, 1, N, K, M, 1.0f, dy, M, k->x[1] + ib * K * M, M, 1.0f, da + ia * N * K, K);
        if (db) cf_gemm(1, 0, K, M, N, 1.0f, k->x[0] + ia * N * K, K, dy, M, 1.0f, db + ib * K * M, M);
    }
}

static void matmul_backward(const cf_inst *k)
{
    const cf_shape a = k->xs[0], b = k->xs[1];
    int K = a.d[a.rank - 1], M = b.d[b.rank - 1];
    float *da = k->dx[0], *db = k->dx[1];
    if (b.rank == 2) {
        int rows = (int)(cf_shape_count_b(a, 1) / (size_t)K);
        if (da) cf_gemm(0, 1, rows, K, M, 1.0f, k->dy, M, k->x[1], M, k->acc[0] ? 1.0f : 0.0f, da, K);
        if (db) cf_gemm(1, 0, K, M, rows, 1.0f, k->x[0], K, k->dy, M, k->acc[1] ? 1.0f : 0.0f, db, M);
        return;
    }
    batch_job j = {k, {0}, a.d[a.rank - 2], M, K};
    lead_init(&j.L, k);
    if (da && !k->acc[0]) memset(da, 0, cf_shape_count_b(a, 1) * sizeof *da);
    if (db && !k->acc[1]) memset(db, 0, cf_shape_count_b(b, 1) * sizeof *db);
    /* matrices of a side that was broadcast take the sum of several products: one
       after another then, never two threads adding to one */
    int whole = cf_shape_count_b(a, 1) == j.L.count * (size_t)j.N * (size_t)K &&
                cf_shape_count_b(b, 1) == j.L.count * (size_t)K * (size_t)M;
    if (whole) cf_parallel_range(j.L.count, 2 * (size_t)j.N * (size_t)M * (size_t)K, backward_range, &j);
    else backward_range(&j, 0, j.L.count);
}

/* Each output element a dot product of k; da = dy b^T, db = a^T dy, each the same again. */
static void matmul_flops(const cf_node *n, const unsigned char *want, double *fwd, double *bwd)
{
    cf_shape a = n->in[0]->shape;
    *fwd = 2 * cf_count1(n->shape) * a.d[a.rank - 1];
    *bwd = *fwd * cf_grads_wanted(n, want);
}

const cf_opdef cf_op_matmul = {
    .name = "*", .what = "matrix product", .infer = matmul_infer, .forward = matmul_forward,
    .backward = matmul_backward, .flags = CF_BWD_X, .nin = 2,
    .flops = matmul_flops,
    .onnx = "MatMul",   /* numpy's matmul, as cflux's */
};
