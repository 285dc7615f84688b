/* fuse_attention.c - the pass that makes attention's
 *   s = q * transpose(k, -2, -1);  a = softmax(s[, causal]);  [a = dropout(a, p);]  a * v
 * one attention node (ops/attention.c), which tiles over the keys with an online
 * softmax, skips the tiles a causal mask hides, and never holds the (..., T, S)
 * matrices of scores and probabilities: in the forward pass they are neither written
 * nor kept for the backward, which recomputes them a tile at a time.
 *
 * Only where the scores, the probabilities and the dropped-out probabilities each have
 * the next op as their one reader and are not given out (an output, the loss or a
 * carried state's next value), and where q, k and v are batches of matrices with the
 * same leading dimensions (no broadcasting). The transpose stays when something else
 * reads it. The dropout's mask is drawn as the dropout node drew it (its id is kept),
 * so the fused node computes what the ops it replaces did, to rounding. */
#include "exec/passes.h"
#include "ops/op.h"

/* The node in slot i when its one live reader is `reader`, else NULL. */
static const cf_node *read_once_by(const cf_graph *g, const cf_analysis *a, int i, int reader)
{
    return g->node[i] && a->uses[i] == 1 && a->reader[i] == reader ? g->node[i] : NULL;
}

/* Same leading dimensions, the last two of any size. */
static int same_lead(cf_shape a, cf_shape b)
{
    if (a.rank != b.rank) return 0;
    for (int i = 0; i < a.rank - 2; i++)
        if (a.d[i] != b.d[i]) return 0;
    return 1;
}

static int fuse_attention(cf_graph *g, const cf_analysis *a, int *changed)
{
    for (int i = 0; i < a->nn; i++) {
        const cf_node *out = g->node[i];   /* a * v */
        if (!out || !a->live[i] || out->op != CF_OP_MATMUL) continue;
        const cf_node *drop = NULL, *sm = g->node[out->in[0]->id], *v = g->node[out->in[1]->id];
        if (!sm || !v) continue;
        if (sm->op == CF_OP_DROPOUT) {
            drop = read_once_by(g, a, sm->id, i);
            sm = drop ? g->node[drop->in[0]->id] : NULL;
        }
        if (!sm || sm->op != CF_OP_SOFTMAX || !read_once_by(g, a, sm->id, drop ? drop->id : i)) continue;
        const cf_node *s = read_once_by(g, a, sm->in[0]->id, sm->id);
        if (!s || s->op != CF_OP_MATMUL) continue;
        const cf_node *q = g->node[s->in[0]->id], *kt = g->node[s->in[1]->id];
        if (!q || !kt || kt->op != CF_OP_TRANSPOSE) continue;
        const cf_node *k = g->node[kt->in[0]->id];
        int r = q->shape.rank;
        if (!k || r < 3 || kt->attr.i[2] != r - 2 || kt->attr.i[3] != r - 1) continue;
        if (!same_lead(q->shape, k->shape) || !same_lead(q->shape, v->shape) || q->batched != k->batched ||
            q->batched != v->batched)
            continue;
        cf_node *in[3] = {(cf_node *)q, (cf_node *)k, (cf_node *)v};
        cf_node *f = cf_graph_node(g, i, CF_OP_ATTENTION, 3, in, out);
        if (!f) return -1;
        f->attr.f[0] = sm->attr.f[0];                  /* causal */
        f->attr.f[1] = drop ? drop->attr.f[0] : 0;     /* the dropout's rate */
        f->attr.i[0] = drop ? drop->id : 0;            /* and its mask */
        f->loc = s->loc, f->frame = s->frame;          /* the scores' place: the attention's */
        g->node[i] = f;
        g->node[sm->id] = NULL;
        g->node[s->id] = NULL;
        if (drop) g->node[drop->id] = NULL;
        if (a->uses[kt->id] == 1) g->node[kt->id] = NULL;
        *changed = 1;
    }
    return 0;
}

const cf_pass cf_pass_fuse_attention = {"fuse_attention", fuse_attention, 0};
