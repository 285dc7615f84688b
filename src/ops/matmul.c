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
    if (a.d[a.rank - 1] != b.d[b.rank - 2] || a.d[a.rank - 1] == CF_BATCH)
        return cf_seterr("error: matrix product shapes do not match: %s * %s",
                         cf_shape_str(a, sa, sizeof sa), cf_shape_str(b, sb, sizeof sb));
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

static int matmul_forward(const cf_inst *k)
{
    const cf_shape a = k->xs[0], b = k->xs[1];
    int K = a.d[a.rank - 1], M = b.d[b.rank - 1];
    if (b.rank == 2) {
        int rows = (int)(cf_shape_count_b(a, 1) / (size_t)K);
        cf_gemm(0, 0, rows, M, K, 1.0f, k->x[0], K, k->x[1], M, 0.0f, k->y, M);
        return 0;
    }
    int N = a.d[a.rank - 2];
    lead L;
    lead_init(&L, k);
    for (size_t l = 0; l < L.count; l++) {
        size_t ia, ib;
        lead_at(&L, l, &ia, &ib);
        cf_gemm(0, 0, N, M, K, 1.0f, k->x[0] + ia * N * K, K, k->x[1] + ib * K * M, M, 0.0f,
                k->y + l * N * M, M);
    }
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
    int N = a.d[a.rank - 2];
    lead L;
    lead_init(&L, k);
    if (da && !k->acc[0]) memset(da, 0, cf_shape_count_b(a, 1) * sizeof *da);
    if (db && !k->acc[1]) memset(db, 0, cf_shape_count_b(b, 1) * sizeof *db);
    for (size_t l = 0; l < L.count; l++) {
        size_t ia, ib;
        lead_at(&L, l, &ia, &ib);
        const float *dy = k->dy + l * N * M;
        if (da) cf_gemm(0, 1, N, K, M, 1.0f, dy, M, k->x[1] + ib * K * M, M, 1.0f, da + ia * N * K, K);
        if (db) cf_gemm(1, 0, K, M, N, 1.0f, k->x[0] + ia * N * K, K, dy, M, 1.0f, db + ib * K * M, M);
    }
}

const cf_opdef cf_op_matmul = {"*", "matrix product", matmul_infer, NULL, NULL, matmul_forward, matmul_backward, CF_BWD_X, 0, 2, 0, NULL};
