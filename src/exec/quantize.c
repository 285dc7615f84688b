/* quantize.c - the pass that runs a quantized model's products in 8-bit integers, in
 * binds that do not train and while cf_model_use_quantized leaves it on: an affine or
 * affine_relu node (what fuse_affine made) whose W the model holds quantized
 * (core/quant.h) becomes a qaffine node (ops/qaffine.c); a conv2d whose kernels it
 * holds quantized becomes a qconv2d (ops/qconv.c), with the batch norm and relu that
 * follow it (alone: nothing else reads the values between) folded in; and qaffine
 * nodes in a row, each read by the next alone, become one qchain (ops/qchain.c). The
 * weights' integers are packed for the kernel here, once for the model. It runs after the
 * batch-norm fusions, so that a batchnorm_relu is one node to fold. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/quant.h"
#include "exec/passes.h"
#include "ops/op.h"
#include "rt/qgemm.h"

/* The weights' integers packed for the default kernel, once for the model: a matrix
   (K, N) as it lies, a convolution's kernels (O, C, KH, KW) as the rows K = (KH, KW,
   C), taps outer, that ops/qconv.c gathers, and those of few channels also as the direct
   convolution takes them. 0 or -1. */
static int pack(cf_qparam *qp, const cf_model *m)
{
    if (qp->packed) return 0;
    cf_shape s = m->params[qp->param]->shape;
    int conv = s.rank == 4, N = qp->channels, K = (int)(cf_shape_count(s) / (size_t)N);
    const cf_qgemm_impl *im = cf_qgemm_for(cf_qgemm_default(), N);
    int direct = conv && im->direct && s.d[1] <= CF_QDIRECT_MAX_C && s.d[2] <= CF_QDIRECT_MAX_TAPS &&
                 s.d[3] <= CF_QDIRECT_MAX_TAPS;
    size_t gemm_bytes = cf_qweights_bytes(im, K, N), bytes = sizeof(cf_qweights) + gemm_bytes;
    if (direct) bytes += cf_qdirect_words(N, s.d[1], s.d[2], s.d[3]) * sizeof(int32_t) + 64;
    cf_qweights *qw = malloc(bytes);
    int8_t *bt = conv ? malloc((size_t)K * N) : NULL;
    if (!qw || (conv && !bt)) {
        free(qw);
        return cf_oom(bytes);
    }
    if (conv) {
        int C = s.d[1], KH = s.d[2], KW = s.d[3];
        for (int o = 0; o < N; o++)
            for (int c = 0; c < C; c++)
                for (int ki = 0; ki < KH; ki++)
                    for (int kj = 0; kj < KW; kj++)
                        bt[((size_t)(ki * KW + kj) * C + c) * N + o] = qp->q[(((size_t)o * C + c) * KH + ki) * KW + kj];
    }
    cf_qweights_pack(qw, im, K, N, conv ? bt : qp->q, N, 1, qp->scale, qw + 1);
    if (direct) {   /* and for the direct convolution, where the kernel has one (rt/qgemm.h) */
        qw->direct = (int32_t *)(((uintptr_t)(qw + 1) + gemm_bytes + 63) & ~(uintptr_t)63);
        cf_qdirect_pack(qw->direct, qp->q, N, s.d[1], s.d[2], s.d[3]);
    }
    free(bt);
    qp->packed = qw;
    return 0;
}

/* The one live reader of slot i, or -1 when it has more (or is given out). */
static int sole_reader(const cf_analysis *a, int i) { return a->uses[i] == 1 ? a->reader[i] : -1; }

/* affine (relu) -> qaffine */
static int affine(cf_graph *g, const cf_node *n, cf_qparam *qp, int *changed)
{
    if (pack(qp, g->m)) return -1;
    cf_node *f = cf_graph_node(g, n->id, CF_OP_QAFFINE, 3, n->in, n);
    if (!f) return -1;
    f->attr.i[0] = n->op == CF_OP_AFFINE_RELU;
    g->node[n->id] = f;
    *changed = 1;
    return 0;
}

/* conv2d [-> + bias] [-> batchnorm [-> relu] | batchnorm_relu | relu] [-> maxpool 2x2
   by 2] -> qconv2d, the bias, the batch norm (evaluation mode: an inference bind),
   relu and the pooling folded into the product's epilogue */
static int conv(cf_graph *g, const cf_analysis *a, const cf_node *n, cf_qparam *qp, int *changed)
{
    cf_shape ks = n->in[1]->shape;
    if (pack(qp, g->m)) return -1;
    const cf_node *last = n, *bn = NULL;
    cf_node *bias = n->nin > 2 ? n->in[2] : NULL;
    int r = sole_reader(a, n->id);
    const cf_node *next = r >= 0 ? g->node[r] : NULL;
    if (!bias && next && next->op == CF_OP_ADD && next->nin == 2 && next->in[0]->id != next->in[1]->id) {
        /* the layer's bias, added after (as the notation's Conv2D does): one number a channel */
        cf_node *b = next->in[next->in[0]->id == n->id];
        cf_shape bs = b->shape;
        if (!b->batched && cf_shape_count(bs) == (size_t)ks.d[0] && bs.rank >= 3 && bs.d[bs.rank - 3] == ks.d[0] &&
            next->batched == n->batched && cf_shape_count_b(next->shape, 1) == cf_shape_count_b(n->shape, 1)) {
            bias = b;
            last = next;
            r = sole_reader(a, next->id);
            next = r >= 0 ? g->node[r] : NULL;
        }
    }
    unsigned flags = bias ? 1u : 0u;   /* ops/qconv.c's: 1 bias, 2 batch norm, 4 relu, 8 pooling */
    if (next && (next->op == CF_OP_BATCHNORM || next->op == CF_OP_BATCHNORM_RELU) && next->nin == 5 &&
        next->in[0]->id == last->id) {
        bn = last = next;
        flags |= 2u | (next->op == CF_OP_BATCHNORM_RELU ? 4u : 0u);
        r = next->op == CF_OP_BATCHNORM ? sole_reader(a, next->id) : -1;
        next = r >= 0 ? g->node[r] : NULL;
    }
    if (!(flags & 4u) && next && next->op == CF_OP_RELU) {
        last = next;
        flags |= 4u;
        r = sole_reader(a, next->id);
        next = r >= 0 ? g->node[r] : NULL;
    } else if (flags & 4u) {   /* the batchnorm_relu's reader */
        r = sole_reader(a, last->id);
        next = r >= 0 ? g->node[r] : NULL;
    }
    const int *pa = next ? next->attr.i : NULL;
    if (next && next->op == CF_OP_MAXPOOL && pa[0] == 2 && pa[1] == 2 && (pa[2] == 2 || !pa[2]) &&
        (pa[3] == 2 || !pa[3]) && !pa[4] && !pa[5]) {   /* 2x2 max-pooling by 2, no padding */
        last = next;
        flags |= 8u;
    }
    cf_node *in[7];
    int nin = 0;
    in[nin++] = n->in[0];
    in[nin++] = n->in[1];
    if (bias) in[nin++] = bias;
    for (int i = 1; bn && i < 5; i++) in[nin++] = bn->in[i];
    cf_node *f = cf_graph_node(g, last->id, CF_OP_QCONV2D, nin, in, last);
    if (!f) return -1;
    memcpy(f->attr.i, n->attr.i, 7 * sizeof *f->attr.i);
    f->attr.i[7] = (int)flags;
    f->attr.f[0] = bn ? (bn->attr.f[0] > 0 ? bn->attr.f[0] : 1e-5f) : 0;
    f->loc = n->loc, f->frame = n->frame;   /* the convolution's place: the layer's */
    for (const cf_node *x = n; x != last; x = g->node[sole_reader(a, x->id)]) g->node[x->id] = NULL;
    g->node[last->id] = f;
    *changed = 1;
    return 0;
}

/* qaffine -> qaffine -> ..., each read by the next alone -> qchain (ops/qchain.c): one
   pass over the rows through every layer. The slots keep their ids, so the analysis
   still says who reads what. */
static int chains(cf_graph *g, const cf_analysis *a, int *changed)
{
    for (int i = 0; i < a->nn; i++) {
        const cf_node *n = g->node[i], *run[CF_QCHAIN_MAX];
        if (!n || n->op != CF_OP_QAFFINE) continue;
        int L = 1;
        run[0] = n;
        while (L < CF_QCHAIN_MAX) {
            int r = sole_reader(a, run[L - 1]->id);
            const cf_node *next = r >= 0 ? g->node[r] : NULL;
            if (!next || next->op != CF_OP_QAFFINE || next->in[0]->id != run[L - 1]->id) break;
            run[L++] = next;
        }
        if (L < 2) continue;
        cf_node *in[1 + 2 * CF_QCHAIN_MAX];
        in[0] = n->in[0];
        int relu = 0;
        for (int l = 0; l < L; l++) {
            in[1 + 2 * l] = run[l]->in[1];
            in[2 + 2 * l] = run[l]->in[2];
            relu |= run[l]->attr.i[0] << l;
        }
        const cf_node *last = run[L - 1];
        cf_node *f = cf_graph_node(g, last->id, CF_OP_QCHAIN, 1 + 2 * L, in, last);
        if (!f) return -1;
        f->attr.i[0] = L;
        f->attr.i[1] = relu;
        f->loc = n->loc, f->frame = n->frame;   /* the first layer's place */
        for (int l = 0; l < L - 1; l++) g->node[run[l]->id] = NULL;
        g->node[last->id] = f;
        *changed = 1;
    }
    return 0;
}

static int quantize(cf_graph *g, const cf_analysis *a, int *changed)
{
    cf_model *m = g->m;
    if ((a->flags & CF_TRAIN) || !m->nquant || m->quant_off) return 0;
    for (int i = 0; i < a->nn; i++) {
        const cf_node *n = g->node[i];   /* NULL: removed by this pass, a slot the analysis saw */
        if (!n || !a->live[i] || !cf_qproduct(n)) continue;
        cf_qparam *qp = cf_model_qparam(m, n->in[1]->index);
        if (!qp) continue;
        int rc = n->op == CF_OP_AFFINE || n->op == CF_OP_AFFINE_RELU ? affine(g, n, qp, changed)
                 : n->op == CF_OP_CONV2D                          ? conv(g, a, n, qp, changed)
                                                                  : 0;
        if (rc) return -1;
    }
    return chains(g, a, changed);
}

const cf_pass cf_pass_quantize = {"quantize", quantize, 0};
