/* fuse_affine.c - the pass that makes  x * W -> + b -> relu  one affine_relu node
 * (ops/affine.c), whose product adds the bias and applies relu in its epilogue, and
 * x * W -> + b  one affine node.
 *
 * Only where nothing else reads the product or the sum and neither is an output, the
 * loss or a carried state's next value (their values are gone once fused); the relu
 * (or the sum, when no relu follows) may be anything, since the fused node takes its
 * slot and computes its value. W is a matrix and the bias a row of the product's
 * columns, the same for every row. */
#include "exec/passes.h"
#include "ops/op.h"

/* The one live reader of slot i, or -1 when it has more (or is given out). */
static int sole_reader(const cf_analysis *a, int i) { return a->uses[i] == 1 ? a->reader[i] : -1; }

/* The bias the addition `add` adds to the product in slot mm; NULL when it is not a
 * row of the product's columns. */
static const cf_node *bias_of(const cf_graph *g, const cf_node *add, int mm)
{
    if (add->op != CF_OP_ADD || add->nin != 2 || add->in[0]->id == add->in[1]->id) return NULL;
    const cf_node *bias = g->node[add->in[add->in[0]->id == mm]->id], *p = g->node[mm];
    if (!bias) return NULL;
    cf_shape ys = p->shape, bs = bias->shape;
    int n = ys.d[ys.rank - 1];
    if (bias->batched || cf_shape_count(bs) != (size_t)n || bs.d[bs.rank - 1] != n) return NULL;
    if (add->batched != p->batched || cf_shape_count_b(add->shape, 1) != cf_shape_count_b(ys, 1)) return NULL;
    return bias;
}

static int fuse_affine(cf_graph *g, const cf_analysis *a, int *changed)
{
    for (int i = 0; i < a->nn; i++) {
        const cf_node *mm = g->node[i];   /* NULL: removed by this pass, a slot the analysis saw */
        if (!mm || !a->live[i] || mm->op != CF_OP_MATMUL || mm->in[1]->shape.rank != 2 || sole_reader(a, i) < 0)
            continue;
        const cf_node *add = g->node[sole_reader(a, i)], *relu = NULL, *bias;
        if (!add || !(bias = bias_of(g, add, i))) continue;
        int r = sole_reader(a, add->id);
        if (r >= 0 && g->node[r] && g->node[r]->op == CF_OP_RELU) relu = g->node[r];
        const cf_node *last = relu ? relu : add;
        cf_node *in[3] = {mm->in[0], mm->in[1], (cf_node *)bias};
        cf_node *f = cf_graph_node(g, last->id, relu ? CF_OP_AFFINE_RELU : CF_OP_AFFINE, 3, in, last);
        if (!f) return -1;
        f->loc = mm->loc, f->frame = mm->frame;   /* the product's place: the layer's */
        g->node[last->id] = f;
        g->node[i] = NULL;
        if (relu) g->node[add->id] = NULL;
        *changed = 1;
    }
    return 0;
}

const cf_pass cf_pass_fuse_affine = {"fuse_affine", fuse_affine, 0};
