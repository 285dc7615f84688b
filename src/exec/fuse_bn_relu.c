/* fuse_bn_relu.c - the pass that makes  batchnorm -> relu  one batchnorm_relu node
 * (ops/batchnorm.c), whose forward writes relu's output alone and whose backward
 * takes relu's gradient in passing: two passes over the values fewer each way, and
 * batchnorm's output is never kept. The same bits as the two ops.
 *
 * Only where relu is batchnorm's one reader and batchnorm's value is not given out
 * (an output, the loss or a carried state's next value), since it is gone once fused. */
#include "exec/passes.h"
#include "ops/op.h"

static int fuse_bn_relu(cf_graph *g, const cf_analysis *a, int *changed)
{
    for (int i = 0; i < a->nn; i++) {
        const cf_node *bn = g->node[i];   /* NULL: removed by a pass */
        if (!bn || !a->live[i] || bn->op != CF_OP_BATCHNORM || a->uses[i] != 1) continue;
        const cf_node *relu = g->node[a->reader[i]];
        if (!relu || relu->op != CF_OP_RELU) continue;
        cf_node *f = cf_graph_node(g, relu->id, CF_OP_BATCHNORM_RELU, bn->nin, bn->in, relu);
        if (!f) return -1;
        f->attr = bn->attr;                        /* eps and momentum */
        f->loc = bn->loc, f->frame = bn->frame;    /* the normalisation's place: the layer's */
        g->node[relu->id] = f;
        g->node[i] = NULL;
        *changed = 1;
    }
    return 0;
}

const cf_pass cf_pass_fuse_bn_relu = {"fuse_bn_relu", fuse_bn_relu, 0};
