/* quantize.c - the pass that runs a quantized model's products in 8-bit integers: an
 * affine or affine_relu node (what fuse_affine made) whose W the model holds quantized
 * (core/quant.h) becomes a qaffine node (ops/qaffine.c), in binds that do not train
 * and while cf_model_use_quantized leaves it on. W's integers are packed for the
 * kernel here, once for the model. */
#include <stdlib.h>

#include "core/error.h"
#include "core/quant.h"
#include "exec/passes.h"
#include "ops/op.h"
#include "rt/qgemm.h"

/* W's integers packed for the default kernel, once for the model. 0 or -1. */
static int pack(cf_qparam *qp, const cf_model *m)
{
    if (qp->packed) return 0;
    const cf_node *p = m->params[qp->param];
    int K = p->shape.d[0], N = p->shape.d[1];
    const cf_qgemm_impl *im = cf_qgemm_default();
    size_t bytes = sizeof(cf_qweights) + cf_qweights_bytes(im, K, N);
    cf_qweights *qw = malloc(bytes);
    if (!qw) return cf_oom(bytes);
    cf_qweights_pack(qw, im, K, N, qp->q, N, 1, qp->scale, qw + 1);
    qp->packed = qw;
    return 0;
}

static int quantize(cf_graph *g, const cf_analysis *a, int *changed)
{
    cf_model *m = g->m;
    if ((a->flags & CF_TRAIN) || !m->nquant || m->quant_off) return 0;
    for (int i = 0; i < a->nn; i++) {
        const cf_node *n = g->node[i];
        if (!n || !a->live[i] || (n->op != CF_OP_AFFINE && n->op != CF_OP_AFFINE_RELU)) continue;
        const cf_node *W = n->in[1];
        cf_qparam *qp = W->op == CF_OP_PARAM ? cf_model_qparam(m, W->index) : NULL;
        if (!qp || W->shape.d[0] > CF_QGEMM_MAX_K) continue;
        if (pack(qp, m)) return -1;
        cf_node *f = cf_graph_node(g, i, CF_OP_QAFFINE, 3, n->in, n);
        if (!f) return -1;
        f->attr.i[0] = n->op == CF_OP_AFFINE_RELU;
        g->node[i] = f;
        *changed = 1;
    }
    return 0;
}

const cf_pass cf_pass_quantize = {"quantize", quantize, 0};
