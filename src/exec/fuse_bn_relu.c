/* fuse_bn_relu.c - the passes that make  batchnorm -> relu  one batchnorm_relu node
 * and  batchnorm -> + r -> relu  (a residual block's end) one batchnorm_add_relu node
 * (ops/batchnorm.c), whose forward writes relu's output alone and whose backward
 * takes relu's gradient in passing: passes over the values fewer each way, and the
 * values in between are never kept. The same bits as the ops they replace.
 *
 * Only where each value in between has the next op as its one reader and is not given
 * out (an output, the loss or a carried state's next value), since it is gone once
 * fused; and the sum only of two values of one shape (no broadcasting), the value
 * added other than the one normalised (relu(n(x) + x) stays as it is). */
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

/* Whether node i is a batchnorm whose one reader is node `reader`. */
static int bn_read_once(const cf_graph *g, const cf_analysis *a, int i, int reader)
{
    const cf_node *n = g->node[i];
    return n && a->live[i] && n->op == CF_OP_BATCHNORM && a->uses[i] == 1 && a->reader[i] == reader;
}

static int same_shape(const cf_node *a, const cf_node *b)
{
    if (a->batched != b->batched || a->shape.rank != b->shape.rank) return 0;
    for (int d = 0; d < a->shape.rank; d++)
        if (a->shape.d[d] != b->shape.d[d]) return 0;
    return 1;
}

static int fuse_bn_add_relu(cf_graph *g, const cf_analysis *a, int *changed)
{
    for (int i = 0; i < a->nn; i++) {
        const cf_node *add = g->node[i];
        if (!add || !a->live[i] || add->op != CF_OP_ADD || a->uses[i] != 1) continue;
        const cf_node *relu = g->node[a->reader[i]];
        if (!relu || relu->op != CF_OP_RELU) continue;
        /* the normalised value: the left operand's if both are, as in bn2(...) + downsample(x) */
        int side = bn_read_once(g, a, add->in[0]->id, i) ? 0 : bn_read_once(g, a, add->in[1]->id, i) ? 1 : -1;
        if (side < 0) continue;
        const cf_node *bn = g->node[add->in[side]->id], *r = add->in[1 - side];
        /* r must not be the normalised x itself: their gradients would be one buffer,
           which the fused backward writes in two passes */
        if (!same_shape(bn, add) || !same_shape(r, add) || r->id == bn->in[0]->id) continue;
        cf_node *in[6];
        for (int k = 0; k < 5; k++) in[k] = bn->in[k];
        in[5] = (cf_node *)r;
        cf_node *f = cf_graph_node(g, relu->id, CF_OP_BATCHNORM_ADD_RELU, 6, in, relu);
        if (!f) return -1;
        f->attr = bn->attr;                        /* eps and momentum */
        f->loc = bn->loc, f->frame = bn->frame;    /* the normalisation's place: the layer's */
        g->node[relu->id] = f;
        g->node[bn->id] = NULL;
        g->node[i] = NULL;
        *changed = 1;
    }
    return 0;
}

const cf_pass cf_pass_fuse_bn_add_relu = {"fuse_bn_add_relu", fuse_bn_add_relu, 0};
