/* qaffine.c - x W + b, and relu after it, as an 8-bit integer product: what the
 * quantize pass (src/exec/quantize.c) makes of an affine or affine_relu node whose W
 * the model holds quantized (core/quant.h), in inference binds.
 *
 * Inputs: x (..., K), W (K, N), b (N numbers): those of the affine node it replaces.
 * Attributes: i[0] 1 for relu after the bias. W's integers, scales and the input's
 * quantization (fixed, or per row) are the model's quantization of W; the product is
 * rt/qgemm.h's, with the bias and relu in its epilogue. No backward: an executor that
 * trains runs the float32 products; and once an update of the parameters has dropped
 * the model's quantization, this node computes the float32 product too. */
#include "core/error.h"
#include "core/quant.h"
#include "ops/op.h"
#include "rt/qgemm.h"

static int qaffine_infer(cf_node *n)
{
    return cf_ops[CF_OP_AFFINE]->infer(n);
}

/* W's packed integers and how the input is quantized; NULL when the model's
   quantization was dropped since the bind (its parameters trained). */
static const cf_qweights *weights(const cf_inst *k, cf_qact *qa)
{
    const cf_node *W = k->node->in[1];
    cf_qparam *qp = cf_model_qparam(k->node->model, W->index);
    if (!qp || !qp->packed) return NULL;
    *qa = (cf_qact){.dynamic = !qp->act_static, .scale = qp->act_scale, .zero = qp->act_zero};
    return qp->packed;   /* packed by the pass */
}

static size_t qaffine_workspace(const cf_inst *k)
{
    cf_qact qa;
    const cf_qweights *w = weights(k, &qa);
    size_t rows = cf_shape_count_b(k->ys, 1) / (size_t)k->ys.d[k->ys.rank - 1];
    return w ? (cf_qgemm_ws_bytes(w, (int)rows) + 3) / 4 + 16 : 0;
}

static int qaffine_forward(const cf_inst *k)
{
    cf_qact qa;
    const cf_qweights *w = weights(k, &qa);
    if (!w) {   /* the parameters were trained since: the float32 product */
        cf_matmul_fused(k, k->x[2], k->node->attr.i[0]);
        return 0;
    }
    int N = k->ys.d[k->ys.rank - 1], K = w->K;
    size_t rows = cf_shape_count_b(k->ys, 1) / (size_t)N;
    void *ws = (void *)(((uintptr_t)k->ws + 63) & ~(uintptr_t)63);
    cf_gemm_ep ep = {k->x[2], k->node->attr.i[0]};
    cf_qgemm(w, (int)rows, k->x[0], K, &qa, k->y, N, &ep, ws);
    return 0;
}

/* As the float product counts it: 2 per multiply-add, the bias's and relu's 1 per element. */
static void qaffine_flops(const cf_node *n, const unsigned char *want, double *fwd, double *bwd)
{
    double E = (double)cf_shape_count_b(n->shape, 1), K = n->in[1]->shape.d[0];
    (void)want;
    *fwd = 2 * E * K + E + n->attr.i[0] * E;
    *bwd = 0;
}

const cf_opdef cf_op_qaffine = {
    .name = "qaffine", .what = "8-bit product x W + b", .infer = qaffine_infer, .workspace = qaffine_workspace,
    .forward = qaffine_forward, .flags = 0, .nograd = 7, .nin = 3, .flops = qaffine_flops,
};
