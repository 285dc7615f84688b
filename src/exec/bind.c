/* bind.c - binding a model: its graph through the passes, then every buffer planned.
 *
 * cf_bind does all the thinking, phase by phase: the graph the passes leave and its
 * analysis (which nodes are live, which carry a gradient, the orders of the steps),
 * the arrays the executor keeps, a check that every value stays addressable, the
 * timeline, each node's concrete shape, the lifetimes of values, gradients and
 * scratch, their places in one arena, and each kernel instance's buffers. A step then
 * only walks the orders and calls kernels; it allocates nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "exec/exec.h"
#include "exec/passes.h"
#include "rt/gemm_builtin.h"
#include "rt/pool.h"

/* The model's part: shapes, parameters, their gradients; and what steps must not
 * allocate later: the thread pool, the GEMM, this thread's packing buffers (no
 * memory for those: slower, not wrong). */
static int prepare(cf_model *m, unsigned flags)
{
    if (cf_model_infer_shapes(m) || cf_model_init_params(m)) return -1;
    if ((flags & CF_TRAIN) && cf_model_alloc_grads(m)) return -1;
    (void)cf_threads();
    (void)cf_gemm_name();
    (void)cf_gemm_builtin_reserve();
    return 0;
}

/* Every array of an executor sized by its graph, listed once: with base NULL it
 * measures them, then carves them from the block at base. Returns the bytes. */
static size_t exec_arrays(cf_exec *e, unsigned char *base)
{
    size_t nn = (size_t)e->nn, nsrc = (size_t)e->src_at[e->nn], no = (size_t)e->noutputs;
    const struct { void *dest; size_t bytes; } parts[] = {
        {&e->shape, nn * sizeof *e->shape},   {&e->val, nn * sizeof *e->val},
        {&e->grad, nn * sizeof *e->grad},     {&e->gz, nn},
        {&e->inst, nn * sizeof *e->inst},     {&e->tf, nn * sizeof *e->tf},
        {&e->tb, nn * sizeof *e->tb},         {&e->aux, nn * sizeof *e->aux},
        {&e->vsrc, nn * sizeof *e->vsrc},     {&e->voff, nn * sizeof *e->voff},
        {&e->fws, nn * sizeof *e->fws},       {&e->bws, nn * sizeof *e->bws},
        {&e->head, no * sizeof *e->head},     {&e->own_input, (size_t)e->ninputs * sizeof *e->own_input},
        {&e->xp, nsrc * sizeof *e->xp},       {&e->xsp, nsrc * sizeof *e->xsp},
        {&e->dxp, nsrc * sizeof *e->dxp},     {&e->accp, nsrc},
        {&e->carry_off, ((size_t)e->m->ncarries + 1) * sizeof *e->carry_off},
    };
    size_t off = 0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (base) *(void **)parts[i].dest = base + off;
        off += (parts[i].bytes + 15) & ~(size_t)15;
    }
    return off;
}

/* The graph after the passes, its analysis, and the arrays. 0 or -1. */
static int lower(cf_exec *e)
{
    if (!(e->g = cf_graph_new(e->m)) || cf_graph_lower(e->g, &e->an, e->flags, !e->nantrap)) return -1;
    e->nn = e->an.nn;
    e->src = e->an.src, e->src_at = e->an.src_at;
    e->fwd = e->an.fwd, e->nfwd = e->an.nfwd;
    e->bwd = e->an.bwd, e->nbwd = e->an.nbwd;
    e->loss = e->an.loss;
    size_t bytes = exec_arrays(e, NULL);
    if (!(e->block = calloc(1, bytes))) return cf_oom(bytes);
    exec_arrays(e, e->block);
    return 0;
}

/* Is slot i's value in the arena: live (or an input, always writable), not the model's? */
static int arena_value(const cf_exec *e, int i)
{
    const cf_node *n = e->g->node[i];
    return n && (e->an.live[i] || n->op == CF_OP_INPUT) && !cf_model_held(n);
}

/* A big batch times a big value must stay addressable. 0 or -1. */
static int check_sizes(const cf_exec *e)
{
    for (int i = 0; i < e->nn; i++) {
        const cf_node *n = e->g->node[i];
        if (!arena_value(e, i)) continue;
        double elems = (double)cf_shape_count_checked(n->shape) * (n->batched ? e->batch : 1);
        if (elems > (double)CF_MAX_ELEMENTS) {
            char sh[96];
            cf_seterr("error: at batch %d, the value of %s %s would hold %.3g elements: too large", e->batch,
                      cf_ops[n->op]->what, cf_shape_str(n->shape, sh, sizeof sh), elems);
            cf_adderr_trace(n);
            return -1;
        }
    }
    return 0;
}

/* Steps: forward 0..F-1, backward F..F+G-1; each node's concrete shape, and the values
 * that live in the model (parameters, states) or the node (constants). */
static void timeline(cf_exec *e)
{
    cf_model *m = e->m;
    for (int i = 0; i < e->nn; i++) e->tf[i] = e->tb[i] = -1;
    for (int s = 0; s < e->nfwd; s++) e->tf[e->fwd[s]] = s;
    for (int s = 0; s < e->nbwd; s++) e->tb[e->bwd[s]] = e->nfwd + s;
    for (int i = 0; i < e->nn; i++) {
        cf_node *n = e->g->node[i];
        if (!n) continue;
        e->shape[i] = n->shape;
        for (int d = 0; d < e->shape[i].rank; d++)
            if (e->shape[i].d[d] == CF_BATCH) e->shape[i].d[d] = e->batch;
        if (n->op == CF_OP_PARAM) {
            e->val[i] = m->pdata + m->poff[n->index];
            if (e->an.hasgrad[i]) e->grad[i] = m->pgrad + m->poff[n->index];
        } else if (n->op == CF_OP_STATE && !n->batched) {   /* carried ones: place() */
            e->val[i] = m->sdata + m->soff[n->index];
        } else if (n->op == CF_OP_CONST) {
            e->val[i] = &n->attr.f[0];
        }
    }
}

/* Whether node i, of an op that writes in place (CF_IN_PLACE), is the next value of the
 * carried state that is its input 0 and that nothing else reads. */
static int in_place(const cf_exec *e, int i)
{
    const cf_node *n = e->g->node[i];
    if (!(cf_ops[n->op]->flags & CF_IN_PLACE) || CF_NSRC(&e->an, i) < 1) return 0;
    int s = CF_SRC(&e->an, i, 0);
    const cf_node *src = e->g->node[s];
    if (src->op != CF_OP_STATE || !src->batched || e->an.uses[s] != 1) return 0;
    for (int c = 0; c < e->m->ncarries; c++)
        if (e->m->carries[c].state == src) return e->m->carries[c].next == n;
    return 0;
}

/* Views: a computed node whose op can give its input's memory as its value (a reshape,
 * a contiguous slice: cf_opdef.view) takes it, with no copy and no buffer of its own,
 * unless the input is a model input (cf_exec_set_input may point that elsewhere); and
 * one that writes in place over a carried state (in_place) takes the state's. */
static void views(cf_exec *e)
{
    for (int i = 0; i < e->nn; i++) {
        const cf_node *n = e->g->node[i];
        e->vsrc[i] = -1;
        if (n && e->tf[i] >= 0 && in_place(e, i)) {
            e->vsrc[i] = CF_SRC(&e->an, i, 0), e->voff[i] = 0;
            continue;
        }
        if (!n || e->tf[i] < 0 || !cf_ops[n->op]->view || CF_NSRC(&e->an, i) != 1) continue;
        int s = CF_SRC(&e->an, i, 0);
        if (e->g->node[s]->op == CF_OP_INPUT) continue;
        cf_inst k = {.node = n, .nin = 1, .xs = &e->shape[s], .ys = e->shape[i]};
        size_t off;
        if (cf_ops[n->op]->view(&k, &off)) e->vsrc[i] = s, e->voff[i] = off;
    }
}

/* The last step that reads each value (a consumer's forward, its backward if that
 * reads inputs, its own backward if that reads the output), and the first backward
 * that writes each gradient. Outputs, the loss and inputs are kept for the whole
 * step, their gradients from the backward's start; a carried state's next value is
 * taken at the next forward: kept to the end. */
static void lifetimes(const cf_exec *e, int *last, int *gfirst)
{
    const cf_model *m = e->m;
    const cf_analysis *a = &e->an;
    int end = e->nfwd + e->nbwd;
    for (int i = 0; i < e->nn; i++) {
        const cf_node *n = e->g->node[i];
        last[i] = e->tf[i] < 0 ? 0 : e->tf[i];
        if (n && e->tb[i] > last[i] && (cf_ops[n->op]->flags & CF_BWD_Y)) last[i] = e->tb[i];
        if (n && n->op == CF_OP_INPUT) last[i] = end;
        gfirst[i] = end;
    }
    for (int c = 0; c < e->nn; c++) {
        if (!a->live[c]) continue;
        int reads_x = (cf_ops[e->g->node[c]->op]->flags & CF_BWD_X) != 0, tf = e->tf[c], tb = e->tb[c];
        for (int j = 0; j < CF_NSRC(a, c); j++) {
            int i = CF_SRC(a, c, j);
            if (tf > last[i]) last[i] = tf;
            if (reads_x && tb > last[i]) last[i] = tb;
            if (tb >= 0 && tb < gfirst[i] && cf_slot_differentiable(a, e->g->node[c], j)) gfirst[i] = tb;
        }
    }
    for (int o = 0; o < m->noutputs; o++) last[m->outputs[o]->id] = end, gfirst[m->outputs[o]->id] = e->nfwd;
    if (e->loss >= 0) last[e->loss] = end, gfirst[e->loss] = e->nfwd;
    for (int i = 0; i < m->ncarries; i++)
        if (m->carries[i].next) last[m->carries[i].next->id] = end;
    /* a view's memory is its source's: the source lives as long (views of views: the
       later first) */
    for (int i = e->nn - 1; i >= 0; i--)
        if (e->vsrc[i] >= 0 && last[i] > last[e->vsrc[i]]) last[e->vsrc[i]] = last[i];
}

/* The buffers of values and gradients, with their lifetimes, appended to bufs. */
static int value_buffers(cf_exec *e, cf_buf *bufs, int *nbuf)
{
    int nn = e->nn, end = e->nfwd + e->nbwd;
    int *last = malloc(2 * (size_t)(nn ? nn : 1) * sizeof *last), *gfirst = last + nn;
    if (!last) return cf_oom(2 * (size_t)nn * sizeof *last);
    lifetimes(e, last, gfirst);
    for (int i = 0; i < nn; i++) {
        if (!arena_value(e, i)) continue;
        size_t size = cf_shape_count_b(e->g->node[i]->shape, e->batch);
        int input = e->g->node[i]->op == CF_OP_INPUT;
        if (e->vsrc[i] < 0)   /* a view's value: its source's memory (wire) */
            bufs[(*nbuf)++] = (cf_buf){size, 0, input ? 0 : e->tf[i], last[i], &e->val[i]};
        if (!e->an.hasgrad[i]) continue;
        int gf = input ? 0 : gfirst[i], gl = input ? end : e->tb[i];   /* an input's: until the next backward */
        bufs[(*nbuf)++] = (cf_buf){size, 0, gf, gl < gf ? gf : gl, &e->grad[i]};
    }
    free(last);
    if (e->flags & CF_TRAIN)
        for (int o = 0; o < e->noutputs; o++)
            bufs[(*nbuf)++] = (cf_buf){cf_shape_count_b(e->m->outputs[o]->shape, e->batch), 0, 0, end, &e->head[o]};
    return 0;
}

/* Each instance's node and concrete shapes; what ops save for backward (from their
 * forward to their backward) and their scratch (each step its own), sized from them. */
static void scratch_buffers(cf_exec *e, cf_buf *bufs, int *nbuf)
{
    for (int i = 0, k = 0; i < e->nn; i++) {
        cf_inst *in = &e->inst[i];
        in->node = e->g->node[i];
        in->nin = CF_NSRC(&e->an, i);
        in->xs = e->xsp + k;
        for (int j = 0; j < in->nin; j++) e->xsp[k + j] = e->shape[CF_SRC(&e->an, i, j)];
        k += in->nin;
        in->ys = e->shape[i];
        int tf = e->tf[i], tb = e->tb[i];
        if (tf < 0) continue;
        const cf_opdef *d = cf_ops[in->node->op];
        size_t na = d->aux ? d->aux(in) : 0, nw = d->workspace ? d->workspace(in) : 0;
        if (na) bufs[(*nbuf)++] = (cf_buf){na, 0, tf, tb >= 0 ? tb : tf, &e->aux[i]};
        if (nw && !(d->flags & CF_WS_BACKWARD)) bufs[(*nbuf)++] = (cf_buf){nw, 0, tf, tf, &e->fws[i]};
        if (nw && tb >= 0) bufs[(*nbuf)++] = (cf_buf){nw, 0, tb, tb, &e->bws[i]};
    }
}

/* After the arena was refused: name the largest value and where the model made it,
 * under the message already set. */
static void blame_largest(const cf_exec *e)
{
    const cf_node *big = NULL;
    size_t most = 0;
    for (int i = 0; i < e->nn; i++) {
        size_t c = arena_value(e, i) ? cf_shape_count_b(e->g->node[i]->shape, e->batch) : 0;
        if (c && (!big || c > most)) big = e->g->node[i], most = c;
    }
    if (!big) return;
    char sh[96], sz[CF_MEM_STR];
    cf_adderr("; the largest is the value of %s %s, %s", cf_ops[big->op]->what, cf_shape_str(big->shape, sh, sizeof sh),
              cf_mem_str(most * sizeof(float), sz));
    cf_adderr_trace(big);
}

/* The buffers placed in one arena, and the carried states' block. 0 or -1. */
static int place(cf_exec *e, cf_buf *bufs, int nbuf)
{
    cf_model *m = e->m;
    size_t unplanned = 0, ncarry = 0;
    for (int i = 0; i < nbuf; i++) unplanned += (bufs[i].size + 15) / 16 * 16;
    size_t floats = cf_plan_buffers(bufs, nbuf);
    if (floats == (size_t)-1) return -1;   /* the planner's scratch: the message is set */
    char what[64];
    snprintf(what, sizeof what, "at batch %d, the activation memory", e->batch);
    if (!(e->arena = cf_mem_alloc((floats ? floats : 16) * sizeof(float), what))) {
        blame_largest(e);
        return -1;
    }
    memset(e->arena, 0, (floats ? floats : 16) * sizeof(float));
    for (int i = 0; i < m->ncarries; i++) {
        e->carry_off[i] = ncarry;
        ncarry += (cf_shape_count_b(m->carries[i].state->shape, e->batch) + 15) / 16 * 16;
    }
    if (ncarry) {
        snprintf(what, sizeof what, "at batch %d, the carried state", e->batch);
        if (!(e->carry = cf_mem_alloc(ncarry * sizeof *e->carry, what))) return -1;
        for (int i = 0; i < m->ncarries; i++) e->val[m->carries[i].state->id] = e->carry + e->carry_off[i];
        cf_exec_reset_state(e);
    }
    e->arena_floats = floats;
    e->unplanned_floats = unplanned;
    for (int i = 0; i < nbuf; i++) *bufs[i].dest = e->arena + bufs[i].offset;
    if (getenv("CFLUX_DEBUG_PLAN"))
        for (int i = 0; i < nbuf; i++)
            fprintf(stderr, "buf %d: size %zu at %zu, steps [%d, %d]\n", i, bufs[i].size, bufs[i].offset,
                    bufs[i].first, bufs[i].last);
    return 0;
}

/* Every buffer planned and placed. 0 or -1. */
static int plan(cf_exec *e)
{
    int nbuf = 0, maxbuf = 5 * e->nn + e->noutputs + 1;
    cf_buf *bufs = calloc((size_t)maxbuf, sizeof *bufs);
    if (!bufs) return cf_oom((size_t)maxbuf * sizeof *bufs);
    int rc = value_buffers(e, bufs, &nbuf);
    if (rc == 0) scratch_buffers(e, bufs, &nbuf);
    if (rc == 0) rc = place(e, bufs, nbuf);
    free(bufs);
    return rc;
}

/* Views' values (in order: a view of a view after its source), head gradients (1 for
 * a scalar, a loss; else 0) and each kernel instance's buffers. */
static void wire(cf_exec *e)
{
    for (int i = 0; i < e->nn; i++)
        if (e->vsrc[i] >= 0) e->val[i] = e->val[e->vsrc[i]] + e->voff[i];
    if (e->flags & CF_TRAIN)
        for (int o = 0; o < e->noutputs; o++)
            if (e->m->outputs[o]->shape.rank == 0) e->head[o][0] = 1.0f;
    for (int i = 0, k = 0; i < e->nn; i++) {
        cf_inst *in = &e->inst[i];
        in->x = e->xp + k;
        in->dx = e->dxp + k;
        in->acc = e->accp + k;
        for (int j = 0; j < in->nin; j++) {
            int s = CF_SRC(&e->an, i, j);
            e->xp[k + j] = e->val[s];
            e->dxp[k + j] = e->tb[i] >= 0 && cf_slot_differentiable(&e->an, in->node, j) ? e->grad[s] : NULL;
        }
        k += in->nin;
        in->y = e->val[i];
        in->dy = e->grad[i];
        in->aux = e->aux[i];
        in->ctx = &e->ctx;
    }
}

cf_exec *cf_bind(cf_model *m, int batch, unsigned flags)
{
    if (!m) return cf_seterr("error: cf_bind: no model"), NULL;
    if (batch < 1) return cf_seterr("error: cf_bind: batch size %d; it must be at least 1", batch), NULL;
    if (flags & CF_INPUT_GRADS) flags |= CF_TRAIN;
    if (prepare(m, flags)) return NULL;
    cf_exec *e = calloc(1, sizeof *e);
    if (!e) return cf_oom(sizeof *e), NULL;
    e->m = m;
    e->batch = batch;
    e->flags = flags;
    e->ninputs = m->ninputs;
    e->noutputs = m->noutputs;
    const char *trap = getenv("CFLUX_NANTRAP");
    e->nantrap = trap && *trap && strcmp(trap, "0") != 0;
    if (lower(e) || check_sizes(e)) goto fail;
    timeline(e);
    views(e);
    if (plan(e)) goto fail;
    wire(e);
    return e;
fail:
    cf_exec_free(e);
    return NULL;
}
