/* qchain.c - several 8-bit products in a row, each reading only the one before (an
 * MLP's Affine layers), as one node: what the quantize pass makes of a chain of
 * qaffine nodes (ops/qaffine.c). The rows are split into a contiguous part for each
 * thread, as evenly as whole tiles of 8 rows allow, and a thread takes each block of
 * its part through every layer in turn while the block's values are in cache: one
 * split over the threads instead of one a layer, and the values between layers never
 * leave the core. The first layer's kernels prefetch the next block's inputs
 * meanwhile. Each layer quantizes its rows and multiplies them as
 * rt/qgemm.h does (cf_qgemm_quantize, cf_qgemm_rows): the same bits as the qaffine
 * nodes it replaces.
 *
 * Inputs: x (..., K1), then each layer's W (K, N) and b (N numbers); attributes: i[0]
 * the layers L (2..CF_QCHAIN_MAX), bit l of i[1]: relu after layer l. No backward;
 * once an update of the parameters has dropped the model's quantization, the node
 * computes the float32 products. */
#include "core/error.h"
#include "core/quant.h"
#include "ops/op.h"
#include "rt/pool.h"
#include "rt/qgemm.h"

#define ROWS CF_QGEMM_ROWS   /* a block, as rt/qgemm.c splits one product */
#define UNIT 8               /* the rows are split between threads in multiples of this */

static size_t up(size_t n, size_t m) { return (n + m - 1) / m * m; }

static int qchain_infer(cf_node *n)
{
    int L = n->attr.i[0];
    if (L < 2 || n->nin != 1 + 2 * L) return cf_seterr("error: qchain: %d inputs for %d layers", n->nin, L);
    cf_shape x = n->in[0]->shape;
    for (int l = 0; l < L; l++) {
        cf_shape w = n->in[1 + 2 * l]->shape;
        if (w.rank != 2 || x.d[x.rank - 1] != w.d[0]) return cf_seterr("error: qchain: layer %d does not fit", l);
        x.d[x.rank - 1] = w.d[1];
    }
    n->shape = x;
    n->batched = n->in[0]->batched;
    return 0;
}

typedef struct layer {
    const cf_qweights *w;
    cf_qact qa;
    const float *bias;
    int relu;
} layer;

/* The layers' weights, input quantization and (k->x there: in a forward) biases; 0,
   or -1 when the quantization was dropped since the bind (the parameters trained). */
static int layers_of(const cf_inst *k, layer *ly)
{
    int L = k->node->attr.i[0];
    for (int l = 0; l < L; l++) {
        const cf_qparam *qp = cf_model_qparam(k->node->model, k->node->in[1 + 2 * l]->index);
        if (!qp || !qp->packed) return -1;
        ly[l] = (layer){.w = qp->packed, .qa = {!qp->act_static, qp->act_scale, qp->act_zero},
                        .bias = k->x ? k->x[2 + 2 * l] : NULL, .relu = (k->node->attr.i[1] >> l) & 1};
    }
    return 0;
}

/* The widest layer's Kp and N, and one block's scratch in bytes: quantized rows,
   their scales and zero points, and two blocks of values between layers. */
static size_t block_bytes(const layer *ly, int L, size_t *kp, size_t *n)
{
    *kp = *n = 0;
    for (int l = 0; l < L; l++) {
        *kp = (size_t)ly[l].w->Kp > *kp ? (size_t)ly[l].w->Kp : *kp;
        *n = (size_t)ly[l].w->N > *n ? (size_t)ly[l].w->N : *n;
    }
    return up(ROWS * *kp, 64) + up(ROWS * (sizeof(float) + sizeof(int)), 64) + 2 * up(ROWS * *n * sizeof(float), 64);
}

static size_t rows_of(const cf_inst *k) { return cf_shape_count_b(k->xs[0], 1) / (size_t)k->xs[0].d[k->xs[0].rank - 1]; }

static size_t qchain_workspace(const cf_inst *k)
{
    layer ly[CF_QCHAIN_MAX];
    if (layers_of(k, ly)) return 0;
    size_t blocks = (rows_of(k) + ROWS - 1) / ROWS, kp, n;
    return (blocks * block_bytes(ly, k->node->attr.i[0], &kp, &n) + 64 + 3) / 4;
}

typedef struct job {
    const cf_inst *k;
    const layer *ly;
    int L, M, parts;
    unsigned char *scratch;
    size_t bytes, kp, n;   /* a block's scratch; the widest layer's Kp and N */
} job;

/* Rows [r0, r0 + m) (at most a block) through every layer, in the scratch at base;
   the first layer's kernels prefetch the `next` rows after them meanwhile. */
static void block_task(const job *j, unsigned char *base, int r0, int m, int next)
{
    const layer *ly = j->ly;
    size_t kp = j->kp, n = j->n;
    uint8_t *q = base;
    float *rs = (float *)(base + up(ROWS * kp, 64));
    int *rz = (int *)(rs + ROWS);
    float *tmp[2] = {(float *)((unsigned char *)rs + up(ROWS * (sizeof(float) + sizeof(int)), 64)), NULL};
    tmp[1] = (float *)((unsigned char *)tmp[0] + up(ROWS * n * sizeof(float), 64));
    const float *in = j->k->x[0] + (size_t)r0 * ly[0].w->K;
    for (int l = 0; l < j->L; l++) {
        const cf_qweights *w = ly[l].w;
        int last = l == j->L - 1;
        float *out = last ? j->k->y + (size_t)r0 * w->N : tmp[l % 2];
        cf_qgemm_quantize(w, m, in, w->K, &ly[l].qa, q, rs, rz);
        cf_qgemm_rows(w, m, q, w->Kp, rs, rz, NULL, out, w->N, &(cf_gemm_ep){ly[l].bias, ly[l].relu},
                      j->k->x[0] + (size_t)(r0 + m) * w->K, l == 0 ? (size_t)next * w->K * sizeof(float) : 0);
        in = out;
    }
}

/* The float32 products of the layers' (trained) weights, through two buffers of the
   scratch (each M x N of the widest layer: the scratch is at least that): what the
   node computes once an update dropped the model's quantization. */
static void float_chain(const cf_inst *k, unsigned char *scratch)
{
    int L = k->node->attr.i[0], M = (int)rows_of(k);
    size_t n = 0;
    for (int l = 0; l < L; l++) n = (size_t)k->xs[1 + 2 * l].d[1] > n ? (size_t)k->xs[1 + 2 * l].d[1] : n;
    float *tmp[2] = {(float *)scratch, (float *)(scratch + up((size_t)M * n * sizeof(float), 64))};
    const float *in = k->x[0];
    for (int l = 0; l < L; l++) {
        cf_shape w = k->xs[1 + 2 * l];
        float *out = l == L - 1 ? k->y : tmp[l % 2];
        cf_gemm_ep_run(0, 0, M, w.d[1], w.d[0], 1.0f, in, w.d[0], k->x[1 + 2 * l], w.d[1], 0.0f, out, w.d[1],
                       &(cf_gemm_ep){k->x[2 + 2 * l], (k->node->attr.i[1] >> l) & 1});
        in = out;
    }
}

/* Part t of the rows (of j->parts, in whole tiles of UNIT rows, as even as that
   allows), a block at a time in its own scratch: contiguous, so that each block
   prefetches the next one's inputs. */
static void part_task(void *ctx, int t)
{
    const job *j = ctx;
    int units = (j->M + UNIT - 1) / UNIT;
    int r = (int)((long)units * t / j->parts) * UNIT, end = (int)((long)units * (t + 1) / j->parts) * UNIT;
    end = end < j->M ? end : j->M;
    unsigned char *base = j->scratch + (size_t)t * j->bytes;
    for (; r < end; r += ROWS) {
        int m = end - r < ROWS ? end - r : ROWS, after = end - r - m;
        block_task(j, base, r, m, after < ROWS ? after : ROWS);
    }
}

static int qchain_forward(const cf_inst *k)
{
    layer ly[CF_QCHAIN_MAX];
    if (layers_of(k, ly)) {   /* the parameters were trained since the bind */
        float_chain(k, (unsigned char *)(((uintptr_t)k->ws + 63) & ~(uintptr_t)63));
        return 0;
    }
    job j = {.k = k, .ly = ly, .L = k->node->attr.i[0], .M = (int)rows_of(k),
             .scratch = (unsigned char *)(((uintptr_t)k->ws + 63) & ~(uintptr_t)63)};
    j.bytes = block_bytes(ly, j.L, &j.kp, &j.n);
    int blocks = (j.M + ROWS - 1) / ROWS;   /* the scratch holds as many */
    double ops = 0;
    for (int l = 0; l < j.L; l++) ops += (double)j.M * ly[l].w->N * ly[l].w->K;
    j.parts = ops < CF_QGEMM_SERIAL_OPS ? 1 : cf_threads() < blocks ? cf_threads() : blocks;
    if (j.parts == 1) part_task(&j, 0);
    else cf_parallel_for(j.parts, part_task, &j);
    return 0;
}

/* As the float products count them: 2 per multiply-add, each bias's and relu's 1 per
   element. */
static void qchain_flops(const cf_node *n, const unsigned char *want, double *fwd, double *bwd)
{
    double rows = (double)cf_shape_count_b(n->shape, 1) / n->shape.d[n->shape.rank - 1];
    (void)want;
    *fwd = 0;
    for (int l = 0; l < n->attr.i[0]; l++) {
        cf_shape w = n->in[1 + 2 * l]->shape;
        double E = rows * w.d[1];
        *fwd += 2 * E * w.d[0] + E + ((n->attr.i[1] >> l) & 1) * E;
    }
    *bwd = 0;
}

const cf_opdef cf_op_qchain = {
    .name = "qchain", .what = "8-bit products in a row", .infer = qchain_infer, .workspace = qchain_workspace,
    .forward = qchain_forward, .nograd = ~0u, .nin = CF_NIN_ANY, .flops = qchain_flops,
};
