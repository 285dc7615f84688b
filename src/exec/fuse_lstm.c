/* fuse_lstm.c - the pass that runs an LSTM over a whole sequence as one lstm node
 * (ops/lstm.c) in place of its steps.
 *
 * The compiler builds unroll(Chain(..., LSTM(n), ...), T) layer by layer, each step
 * of the LSTM as its net defines it, and records the steps as a region (core/graph.h)
 * because the net declares sequence(lstm(W, U, b, h, c)). This pass puts in the
 * region's place the lstm node over (B, T, I) and the slices the rest of the model
 * reads: all steps' h (B, T, H) where the steps were stacked, and h and c after the
 * last step where the states' next values were. When the sequence comes from an
 * Embedding that nothing else reads, the lookup folds into the lstm node (its input
 * products become rows of E W), which then answers for the Embedding's errors.
 *
 * Only where nothing outside the region reads a value inside it but those three, and
 * none inside is an output or the loss. */
#include "exec/passes.h"
#include "ops/op.h"

static int is_out(const cf_region *r, int id)
{
    return id == r->seq->id || id == r->last[0]->id || id == r->last[1]->id;
}

/* Is the model's output, the loss or a carried state's next value in slot id? */
static int given_out(const cf_model *m, int id)
{
    for (int i = 0; i < m->noutputs; i++)
        if (m->outputs[i]->id == id) return 1;
    for (int i = 0; i < m->ncarries; i++)
        if (m->carries[i].next && m->carries[i].next->id == id) return 1;
    return m->loss && m->loss->id == id;
}

/* Can region r be fused: nothing read from inside but its outputs, which come after
 * five free slots for the nodes that compute them? Those slots into slot[]. */
static int fusable(const cf_graph *g, const cf_region *r, const int *reader, int *slot)
{
    int nfree = 0, first_out = r->hi + 1;
    if (r->op != CF_OP_LSTM || r->lo < 0 || r->hi >= g->nn || r->lo > r->hi) return 0;
    for (int i = r->lo; i <= r->hi; i++) {
        if (!g->node[i]) return 0;   /* another pass was here */
        if (is_out(r, i)) {
            if (i < first_out) first_out = i;
            continue;
        }
        if (reader[i] > r->hi || given_out(g->m, i)) return 0;
        if (nfree < 5) slot[nfree++] = i;
    }
    return nfree == 5 && slot[4] < first_out;
}

/* A node of the fused form in slot id, its shape inferred. NULL on error. */
static cf_node *made(cf_graph *g, const cf_region *r, int id, cf_opcode op, int nin, cf_node *const *in,
                     const int *ia, cf_shape shape)
{
    cf_node *n = cf_graph_node(g, id, op, nin, in, in[0]);
    if (!n) return NULL;
    n->loc = r->loc, n->frame = r->frame;
    for (int k = 0; k < 3; k++) n->attr.i[k] = ia ? ia[k] : 0;
    n->attr.shape = shape;
    return cf_node_infer(n) ? NULL : n;
}

static int fuse_region(cf_graph *g, const cf_region *r, const int *reader, const int *slot)
{
    cf_node *in[CF_REGION_IN];
    int nin = r->nin;
    for (int k = 0; k < nin; k++) in[k] = r->in[k];
    const cf_node *x = g->node[in[nin - 1]->id];
    int fold = nin == 6 && x && x->op == CF_OP_EMBEDDING && reader[x->id] >= r->lo && reader[x->id] <= r->hi &&
               !given_out(g->m, x->id);
    if (fold) {   /* (B, T) indices into E's rows */
        in[5] = x->in[1];
        in[6] = x->in[0];
        nin = 7;
    }
    cf_node *y = made(g, r, slot[0], CF_OP_LSTM, nin, in, NULL, (cf_shape){0});
    if (!y) return -1;
    if (fold) y->folded_loc = x->loc, y->folded_frame = x->frame;
    int T = y->shape.d[1], H = r->in[3]->shape.d[0];
    cf_node *last = made(g, r, slot[1], CF_OP_SLICE, 1, &y, (const int[]){1, T - 1, 1}, (cf_shape){0});
    cf_node *h = last ? made(g, r, slot[2], CF_OP_SLICE, 1, &last, (const int[]){2, 0, H}, (cf_shape){0}) : NULL;
    cf_node *c = h ? made(g, r, slot[3], CF_OP_SLICE, 1, &last, (const int[]){2, H, H}, (cf_shape){0}) : NULL;
    if (!c) return -1;
    for (int i = r->lo; i <= r->hi; i++) g->node[i] = NULL;
    g->node[slot[0]] = y, g->node[slot[1]] = last, g->node[slot[2]] = h, g->node[slot[3]] = c;
    cf_shape one = {1, {H}};
    cf_node *out[3] = {made(g, r, r->seq->id, CF_OP_SLICE, 1, &y, (const int[]){2, 0, H}, (cf_shape){0}),
                       made(g, r, r->last[0]->id, CF_OP_RESHAPE, 1, &h, NULL, one),
                       made(g, r, r->last[1]->id, CF_OP_RESHAPE, 1, &c, NULL, one)};
    if (!out[0] || !out[1] || !out[2]) return -1;
    for (int k = 0; k < 3; k++) g->node[out[k]->id] = out[k];
    return 0;
}

static int fuse_lstm(cf_graph *g, const cf_analysis *a, int *changed)
{
    const int *reader = a->reader;
    int rc = 0;
    for (int k = 0; k < g->m->nregions && rc == 0; k++) {
        const cf_region *r = &g->m->regions[k];
        int slot[5];
        if (!fusable(g, r, reader, slot)) continue;
        rc = fuse_region(g, r, reader, slot);
        *changed = 1;
    }
    return rc;
}

const cf_pass cf_pass_fuse_lstm = {"fuse_lstm", fuse_lstm, 1};
