/* analysis.c - the graph an executor runs, and the one analysis of it (analysis.h). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "exec/analysis.h"
#include "ops/op.h"

cf_graph *cf_graph_new(cf_model *m)
{
    cf_graph *g = calloc(1, sizeof *g);
    int nn = m->nnodes;
    if (g) g->node = malloc((size_t)(nn ? nn : 1) * sizeof *g->node);
    if (!g || !g->node) {
        free(g);
        return cf_oom((size_t)nn * sizeof *g->node), NULL;
    }
    g->m = m;
    g->nn = nn;
    memcpy(g->node, m->nodes, (size_t)nn * sizeof *g->node);
    return g;
}

void cf_graph_free(cf_graph *g)
{
    if (!g) return;
    cf_arena_free(&g->arena);
    free(g->node);
    free(g);
}

void cf_analysis_free(cf_analysis *a)
{
    free(a->src);
    free(a->src_at);
    free(a->live);
    free(a->uses);
    free(a->reader);
    free(a->fwd);
    memset(a, 0, sizeof *a);
}

/* A loss whose input 0 is a softmax also reads the softmax's input (CF_FUSE_SOFTMAX). */
static const cf_node *fused_logits(const cf_graph *g, const cf_node *n)
{
    if (!(cf_ops[n->op]->flags & CF_FUSE_SOFTMAX)) return NULL;
    const cf_node *s = g->node[n->in[0]->id];
    return s && s->op == CF_OP_SOFTMAX ? s->in[0] : NULL;
}

int cf_slot_differentiable(const cf_analysis *a, const cf_node *n, int j)
{
    const cf_opdef *op = cf_ops[n->op];
    if (CF_NSRC(a, n->id) > n->nin) return j == n->nin;   /* a fused loss: only the hidden logits */
    /* nograd has bits for the first 32 slots only; later ones (a concat of an unroll's
     * many steps) are differentiable, and shifting by 32 or more is undefined */
    if (j >= (int)(sizeof op->nograd * 8)) return 1;
    return !(op->nograd >> j & 1u);
}

static int effective_inputs(cf_analysis *a)
{
    const cf_graph *g = a->g;
    int nsrc = 0;
    for (int i = 0; i < a->nn; i++)
        if (g->node[i]) nsrc += g->node[i]->nin + (fused_logits(g, g->node[i]) != NULL);
    a->src = malloc((size_t)(nsrc ? nsrc : 1) * sizeof *a->src);
    a->src_at = malloc(((size_t)a->nn + 1) * sizeof *a->src_at);
    if (!a->src || !a->src_at) return cf_oom((size_t)nsrc * sizeof *a->src);
    int k = 0;
    for (int i = 0; i < a->nn; i++) {
        const cf_node *n = g->node[i];
        a->src_at[i] = k;
        if (!n) continue;
        for (int j = 0; j < n->nin; j++) a->src[k++] = n->in[j]->id;
        const cf_node *logits = fused_logits(g, n);
        if (logits) a->src[k++] = logits->id;
    }
    a->src_at[a->nn] = k;
    return 0;
}

/* live: what the outputs, the loss and the carried states need. */
static int liveness(cf_analysis *a)
{
    const cf_model *m = a->g->m;
    unsigned char *live = a->live;
    for (int i = 0; i < m->noutputs; i++) live[m->outputs[i]->id] = 1;
    if (a->loss >= 0) live[a->loss] = 1;
    for (int i = 0; i < m->ncarries && !(a->flags & CF_ANALYSE_NO_CARRY); i++)
        if (m->carries[i].next) live[m->carries[i].next->id] = 1;
    for (int i = a->nn - 1; i >= 0; i--) {
        if (!live[i]) continue;
        if (!a->g->node[i])
            return cf_seterr("error: a graph pass removed node %d, which is still read", i);
        for (int j = 0; j < CF_NSRC(a, i); j++) live[CF_SRC(a, i, j)] = 1;
    }
    for (int i = 0; i < a->nn; i++) a->reader[i] = -1;
    for (int i = 0; i < a->nn; i++)
        if (live[i])
            for (int j = 0; j < CF_NSRC(a, i); j++) a->uses[CF_SRC(a, i, j)]++, a->reader[CF_SRC(a, i, j)] = i;
    for (int i = 0; i < m->noutputs; i++) a->uses[m->outputs[i]->id] += 2;
    for (int i = 0; i < m->ncarries; i++)
        if (m->carries[i].next) a->uses[m->carries[i].next->id] += 2;
    if (a->loss >= 0) a->uses[a->loss] += 2;
    return 0;
}

/* Gradients: needed (fed by something trainable) and reaching an output or the loss. */
static void gradients(cf_analysis *a)
{
    const cf_graph *g = a->g;
    const cf_model *m = g->m;
    int nn = a->nn;
    unsigned char *needs = a->hasgrad, *reach = a->bstep;   /* computed in place, then narrowed */
    for (int i = 0; i < nn; i++) {
        const cf_node *n = g->node[i];
        if (!a->live[i]) continue;
        if (n->op == CF_OP_PARAM) needs[i] = n->req != CF_GRAD_NONE;
        else if (n->op == CF_OP_INPUT) needs[i] = (a->flags & CF_INPUT_GRADS) != 0;
        else if (!cf_is_leaf(n) && cf_ops[n->op]->backward)
            for (int j = 0; j < CF_NSRC(a, i); j++)
                if (needs[CF_SRC(a, i, j)] && cf_slot_differentiable(a, n, j)) needs[i] = 1;
    }
    for (int i = 0; i < m->noutputs; i++) reach[m->outputs[i]->id] = 1;
    if (a->loss >= 0) reach[a->loss] = 1;
    for (int i = nn - 1; i >= 0; i--) {
        if (!reach[i] || !needs[i] || cf_is_leaf(g->node[i])) continue;
        for (int j = 0; j < CF_NSRC(a, i); j++)
            if (cf_slot_differentiable(a, g->node[i], j)) reach[CF_SRC(a, i, j)] = 1;
    }
    for (int i = 0; i < nn; i++) a->hasgrad[i] = needs[i] && reach[i];
    for (int i = 0; i < nn; i++) {
        a->bstep[i] = 0;
        if (!a->hasgrad[i] || cf_is_leaf(g->node[i])) continue;
        for (int j = 0; j < CF_NSRC(a, i); j++)
            if (a->hasgrad[CF_SRC(a, i, j)] && cf_slot_differentiable(a, g->node[i], j)) a->bstep[i] = 1;
    }
}

int cf_analyse(cf_analysis *a, const cf_graph *g, unsigned flags)
{
    memset(a, 0, sizeof *a);
    int nn = g->nn;
    size_t n1 = (size_t)(nn ? nn : 1);
    a->g = g;
    a->flags = flags;
    a->nn = nn;
    a->live = calloc(n1, 3);
    a->uses = calloc(n1, sizeof *a->uses);
    a->reader = malloc(n1 * sizeof *a->reader);
    a->fwd = malloc(2 * n1 * sizeof *a->fwd);
    if (!a->live || !a->uses || !a->reader || !a->fwd) return cf_oom(n1 * (3 + 4 * sizeof(int)));
    a->hasgrad = a->live + n1;
    a->bstep = a->hasgrad + n1;
    a->bwd = a->fwd + n1;
    int loss = (flags & (CF_TRAIN | CF_LOSS)) && !(flags & CF_ANALYSE_NO_LOSS) && g->m->loss && g->m->loss->id < nn;
    a->loss = loss ? g->m->loss->id : -1;
    if (effective_inputs(a) || liveness(a)) return -1;
    if (flags & CF_TRAIN) gradients(a);
    for (int i = 0; i < nn; i++)
        if (a->live[i] && !cf_is_leaf(g->node[i])) a->fwd[a->nfwd++] = i;
    for (int i = nn - 1; i >= 0; i--)
        if (a->bstep[i]) a->bwd[a->nbwd++] = i;
    return 0;
}
