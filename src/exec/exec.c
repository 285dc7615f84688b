/* exec.c - binding a model, and forward, backward and update on the result.
 *
 * cf_bind does all the thinking: which nodes are needed (live), which carry a gradient
 * (on a path from a trainable parameter or a wanted input to an output), when each
 * buffer is first and last used, where it goes in the arena. A step then only walks
 * the precomputed orders and calls kernels; it allocates nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "exec/exec.h"
#include "rt/gemm_builtin.h"
#include "rt/pool.h"

/* ---- bind ---- */

/* Values that live in the model (parameters, states) or the node (constants), not
 * in the executor's arena. */
static int model_held(const cf_node *n)
{
    return n->op == CF_OP_PARAM || n->op == CF_OP_STATE || n->op == CF_OP_CONST;
}

static int is_leaf(const cf_node *n) { return n->op == CF_OP_INPUT || model_held(n); }

/* If node i is a product x * W (W a matrix) whose only reader is an addition of a
 * bias row (N numbers, the same for every row), mark the chain for fusion, with the
 * relu that may follow; see cf_bind. Node ids grow along the chain. */
static void fuse_chain(cf_exec *e, int i, const unsigned char *live, const int *uses, int batch)
{
    const cf_model *m = e->m;
    const cf_node *mm = m->nodes[i];
    if (!live[i] || mm->op != CF_OP_MATMUL || mm->in[1]->shape.rank != 2 || uses[i] != 1) return;
    const cf_node *add = NULL, *relu = NULL;
    for (int c = i + 1; c < m->nnodes && !add; c++)
        if (live[c] && m->nodes[c]->op == CF_OP_ADD && m->nodes[c]->nin == 2 &&
            (m->nodes[c]->in[0] == mm || m->nodes[c]->in[1] == mm))
            add = m->nodes[c];
    if (!add || add->in[0] == add->in[1]) return;
    const cf_node *bias = add->in[0] == mm ? add->in[1] : add->in[0];
    cf_shape ys = mm->shape, bs = bias->shape;
    int n = ys.d[ys.rank - 1];
    if (bias->batched || cf_shape_count(bs) != (size_t)n || bs.d[bs.rank - 1] != n) return;
    /* a bias computed after the product is not ready at its step; a parameter, state or
       constant always is, wherever it was made (the notation makes Affine's b after x * W) */
    if (bias->id > i && !model_held(bias)) return;
    if (cf_shape_count_b(add->shape, batch) != cf_shape_count_b(ys, batch)) return;
    if (uses[add->id] == 1)
        for (int c = add->id + 1; c < m->nnodes && !relu; c++)
            if (live[c] && m->nodes[c]->op == CF_OP_RELU && m->nodes[c]->in[0] == add) relu = m->nodes[c];
    e->fuse_bias[i] = bias->id;
    e->fuse_relu[i] = relu != NULL;
    e->fuse_head[add->id] = i;
    if (relu) e->fuse_head[relu->id] = i;
}

/* Does input slot i of node n (an effective slot) carry a gradient back? */
static int slot_differentiable(const cf_exec *e, const cf_node *n, int i)
{
    const cf_opdef *op = cf_ops[n->op];
    int fused = e->src_at[n->id + 1] - e->src_at[n->id] > n->nin;
    if (fused) return i == n->nin;          /* only the hidden logits */
    /* nograd has bits for the first 32 slots only; later ones (a concat of an unroll's
     * many steps) are differentiable, and shifting by 32 or more is undefined */
    if (i >= (int)(sizeof op->nograd * 8)) return 1;
    return !(op->nograd >> i & 1u);
}

static void concrete(cf_shape *s, int batch)
{
    for (int i = 0; i < s->rank; i++)
        if (s->d[i] == CF_BATCH) s->d[i] = batch;
}

/* Every allocation of an executor but the arena comes from one calloc, carved here. */
static void *carve(unsigned char **p, size_t bytes)
{
    void *r = *p;
    *p += (bytes + 15) & ~(size_t)15;
    return r;
}

void cf_exec_reset_state(cf_exec *e)
{
    if (!e || !e->carry) return;
    for (int i = 0; i < e->m->ncarries; i++) {
        const cf_node *c = e->m->carries[i].state;
        size_t n = cf_shape_count_b(c->shape, e->batch);
        float v = c->init.kind == CF_INIT_ONES ? 1.0f : c->init.kind == CF_INIT_CONST ? c->init.a : 0.0f;
        float *p = e->carry + e->carry_off[i];
        for (size_t j = 0; j < n; j++) p[j] = v;
    }
    e->carry_pending = 0;
}

/* Where carried state i's next value is: what the last forward left, if it left one,
 * else its own. */
static const float *carry_next(const cf_exec *e, int i)
{
    const cf_node *next = e->m->carries[i].next;
    if (e->carry_pending && next && e->val[next->id]) return e->val[next->id];
    return e->carry + e->carry_off[i];
}

/* The next values the last forward left for the carried states become theirs. */
static void take_carries(cf_exec *e)
{
    if (!e->carry_pending) return;
    for (int i = 0; i < e->m->ncarries; i++) {
        const cf_node *c = e->m->carries[i].state;
        const float *src = carry_next(e, i);
        if (src != e->carry + e->carry_off[i])
            memcpy(e->carry + e->carry_off[i], src, cf_shape_count_b(c->shape, e->batch) * sizeof(float));
    }
    e->carry_pending = 0;
}

int cf_exec_state_count(const cf_exec *e) { return e && e->carry ? e->m->ncarries : 0; }

const char *cf_exec_state_name(const cf_exec *e, int i)
{
    return i >= 0 && i < cf_exec_state_count(e) ? e->m->carries[i].state->name : NULL;
}

cf_shape cf_exec_state_shape(const cf_exec *e, int i)
{
    return i >= 0 && i < cf_exec_state_count(e) ? e->shape[e->m->carries[i].state->id] : (cf_shape){0, {0}};
}

int cf_exec_state_get(const cf_exec *e, int i, float *out)
{
    if (i < 0 || i >= cf_exec_state_count(e) || !out)
        return cf_seterr("error: cf_exec_state_get: no carried state %d", i);
    memcpy(out, carry_next(e, i), cf_shape_count(cf_exec_state_shape(e, i)) * sizeof *out);
    return 0;
}

int cf_exec_state_set(cf_exec *e, int i, const float *in)
{
    if (i < 0 || i >= cf_exec_state_count(e) || !in)
        return cf_seterr("error: cf_exec_state_set: no carried state %d", i);
    take_carries(e);
    memcpy(e->carry + e->carry_off[i], in, cf_shape_count(cf_exec_state_shape(e, i)) * sizeof *in);
    return 0;
}

void cf_exec_free(cf_exec *e)
{
    if (!e) return;
    free(e->ready);
    free(e->ready_end);
    cf_mem_free(e->carry);
    cf_mem_free(e->arena);
    free(e);
}

/* After the arena was refused: name the largest value and where the model made it,
 * under the message already set. */
static void blame_largest(const cf_model *m, const unsigned char *live, int batch)
{
    const cf_node *big = NULL;
    size_t most = 0;
    for (int i = 0; i < m->nnodes; i++) {
        const cf_node *n = m->nodes[i];
        size_t c = cf_shape_count_b(n->shape, batch);
        if (live[i] && !model_held(n) && (!big || c > most)) big = n, most = c;
    }
    if (!big) return;
    char sh[96], sz[CF_MEM_STR];
    cf_adderr("; the largest is the value of %s %s, %s", cf_ops[big->op]->what, cf_shape_str(big->shape, sh, sizeof sh),
              cf_mem_str(most * sizeof(float), sz));
    cf_adderr_trace(big);
}

cf_exec *cf_bind(cf_model *m, int batch, unsigned flags)
{
    if (!m) return cf_seterr("error: cf_bind: no model"), NULL;
    if (batch < 1) return cf_seterr("error: cf_bind: batch size %d; it must be at least 1", batch), NULL;
    if (flags & CF_INPUT_GRADS) flags |= CF_TRAIN;
    if (cf_model_infer_shapes(m) || cf_model_init_params(m)) return NULL;
    if ((flags & CF_TRAIN) && cf_model_alloc_grads(m)) return NULL;
    (void)cf_threads();     /* start the pool and pick the GEMM now: steps must not allocate */
    (void)cf_gemm_name();
    (void)cf_gemm_builtin_reserve();   /* and this thread's packing buffers (no memory: slower) */

    int nn = m->nnodes, nsrc = 0;
    for (int i = 0; i < nn; i++)
        nsrc += m->nodes[i]->nin + ((cf_ops[m->nodes[i]->op]->flags & CF_FUSE_SOFTMAX) ? 1 : 0);

    /* one block for everything sized by the graph */
    size_t bytes = 0;
#define SZ(n, T) bytes += ((size_t)(n) * sizeof(T) + 15) & ~(size_t)15
    SZ(1, cf_exec); SZ(nn, cf_shape); SZ(nn, float *); SZ(nn, float *); SZ(nn, unsigned char);
    SZ(nn, cf_inst); SZ(nsrc, int); SZ(nn + 1, int); SZ(nn, int); SZ(nn, int); SZ(m->noutputs, float *);
    SZ(nsrc, const float *); SZ(nsrc, cf_shape); SZ(nsrc, float *); SZ(nsrc, unsigned char);
    SZ(nn, unsigned char); SZ(nn, unsigned char); SZ(nn, unsigned char); SZ(nn, int); SZ(nn, int);
    SZ(m->ninputs, float *); SZ(nn, int); SZ(nn, int); SZ(nn, unsigned char); SZ(nn, int);
    SZ(nn, float *); SZ(nn, float *); SZ(nn, float *); SZ(m->ncarries + 1, size_t);
#undef SZ
    unsigned char *block = calloc(1, bytes), *p = block;
    if (!block) return cf_oom(bytes), NULL;
    cf_exec *e = carve(&p, sizeof *e);
    e->m = m;
    e->batch = batch;
    e->flags = flags;
    e->nn = nn;
    e->ninputs = m->ninputs;
    e->noutputs = m->noutputs;
    const char *trap = getenv("CFLUX_NANTRAP");
    e->nantrap = trap && *trap && strcmp(trap, "0") != 0;
    e->shape = carve(&p, nn * sizeof *e->shape);
    e->val = carve(&p, nn * sizeof *e->val);
    e->grad = carve(&p, nn * sizeof *e->grad);
    e->gz = carve(&p, nn);
    e->inst = carve(&p, nn * sizeof *e->inst);
    e->src = carve(&p, nsrc * sizeof *e->src);
    e->src_at = carve(&p, (nn + 1) * sizeof *e->src_at);
    e->fwd = carve(&p, nn * sizeof *e->fwd);
    e->bwd = carve(&p, nn * sizeof *e->bwd);
    e->head = carve(&p, m->noutputs * sizeof *e->head);
    e->xp = carve(&p, nsrc * sizeof *e->xp);
    e->xsp = carve(&p, nsrc * sizeof *e->xsp);
    e->dxp = carve(&p, nsrc * sizeof *e->dxp);
    e->accp = carve(&p, nsrc);
    unsigned char *live = carve(&p, nn), *hasgrad = carve(&p, nn), *bstep = carve(&p, nn);
    int *tf = carve(&p, nn * sizeof(int)), *tb = carve(&p, nn * sizeof(int));
    e->own_input = carve(&p, m->ninputs * sizeof *e->own_input);
    e->fuse_bias = carve(&p, nn * sizeof *e->fuse_bias);
    e->fuse_head = carve(&p, nn * sizeof *e->fuse_head);
    e->fuse_relu = carve(&p, nn);
    int *uses = carve(&p, nn * sizeof *uses);
    e->aux = carve(&p, nn * sizeof *e->aux);
    e->fws = carve(&p, nn * sizeof *e->fws);
    e->bws = carve(&p, nn * sizeof *e->bws);
    e->carry_off = carve(&p, ((size_t)m->ncarries + 1) * sizeof *e->carry_off);
    size_t ncarry = 0;
    for (int i = 0; i < m->ncarries; i++) {
        e->carry_off[i] = ncarry;
        ncarry += (cf_shape_count_b(m->carries[i].state->shape, batch) + 15) / 16 * 16;
    }

    /* effective inputs: a fused loss also reads the softmax's input */
    int k = 0;
    for (int i = 0; i < nn; i++) {
        const cf_node *n = m->nodes[i];
        e->src_at[i] = k;
        for (int j = 0; j < n->nin; j++) e->src[k++] = n->in[j]->id;
        if ((cf_ops[n->op]->flags & CF_FUSE_SOFTMAX) && n->in[0]->op == CF_OP_SOFTMAX)
            e->src[k++] = n->in[0]->in[0]->id;
    }
    e->src_at[nn] = k;
#define NSRC(i) (e->src_at[(i) + 1] - e->src_at[(i)])
#define SRC(i, j) (e->src[e->src_at[(i)] + (j)])

    /* live: what the outputs need */
    for (int i = 0; i < m->noutputs; i++) live[m->outputs[i]->id] = 1;
    e->loss = -1;
    if (m->loss && (flags & (CF_TRAIN | CF_LOSS))) live[e->loss = m->loss->id] = 1;
    for (int i = 0; i < m->ninputs; i++) live[m->inputs[i]->id] = 1;   /* always writable */
    for (int i = 0; i < m->ncarries; i++)
        if (m->carries[i].next) live[m->carries[i].next->id] = 1;
    for (int i = nn - 1; i >= 0; i--)
        if (live[i])
            for (int j = 0; j < NSRC(i); j++) live[SRC(i, j)] = 1;

    /* gradients: needed (fed by something trainable) and reaching an output */
    int train = (flags & CF_TRAIN) != 0;
    if (train) {
        unsigned char *needs = hasgrad;   /* computed in place, then narrowed */
        for (int i = 0; i < nn; i++) {
            const cf_node *n = m->nodes[i];
            if (n->op == CF_OP_PARAM) needs[i] = n->req != CF_GRAD_NONE;
            else if (n->op == CF_OP_INPUT) needs[i] = (flags & CF_INPUT_GRADS) != 0;
            else if (!is_leaf(n) && cf_ops[n->op]->backward)
                for (int j = 0; j < NSRC(i); j++)
                    if (needs[SRC(i, j)] && slot_differentiable(e, n, j)) needs[i] = 1;
            needs[i] &= live[i];
        }
        unsigned char *reach = bstep;     /* reuse as scratch */
        for (int i = 0; i < m->noutputs; i++) reach[m->outputs[i]->id] = 1;
        if (e->loss >= 0) reach[e->loss] = 1;
        for (int i = nn - 1; i >= 0; i--) {
            if (!reach[i] || !needs[i] || is_leaf(m->nodes[i])) continue;
            for (int j = 0; j < NSRC(i); j++)
                if (slot_differentiable(e, m->nodes[i], j)) reach[SRC(i, j)] = 1;
        }
        for (int i = 0; i < nn; i++) hasgrad[i] = needs[i] && reach[i];
        for (int i = 0; i < nn; i++) bstep[i] = 0;
        for (int i = 0; i < nn; i++) {
            if (!hasgrad[i] || is_leaf(m->nodes[i])) continue;
            for (int j = 0; j < NSRC(i); j++)
                if (hasgrad[SRC(i, j)] && slot_differentiable(e, m->nodes[i], j)) bstep[i] = 1;
        }
    }

    /* fusion: a chain  x * W -> + b -> relu  runs as one product whose epilogue adds
       the bias and applies relu to each tile of the result while it is in cache; the
       three values share one buffer. Only where nothing else reads the product or the
       sum, none is an output or the loss, and backward needs none of them but the last
       (the product's backward reads x and W, the addition's nothing, relu's its own
       output). Off under CFLUX_NANTRAP, which must name the op that made a NaN. */
    for (int i = 0; i < nn; i++) e->fuse_bias[i] = e->fuse_head[i] = -1;
    for (int c = 0; c < nn; c++)
        if (live[c])
            for (int j = 0; j < NSRC(c); j++) uses[SRC(c, j)]++;
    for (int i = 0; i < m->noutputs; i++) uses[m->outputs[i]->id] += 2;
    for (int i = 0; i < m->ncarries; i++)
        if (m->carries[i].next) uses[m->carries[i].next->id] += 2;
    if (e->loss >= 0) uses[e->loss] += 2;
    for (int i = 0; i < nn && !e->nantrap; i++)
        fuse_chain(e, i, live, uses, batch);

    /* sizes: a big batch times a big value must stay addressable */
    for (int i = 0; i < nn; i++) {
        const cf_node *n = m->nodes[i];
        if (!live[i] || model_held(n)) continue;
        double elems = (double)cf_shape_count_checked(n->shape) * (n->batched ? batch : 1);
        if (elems > (double)CF_MAX_ELEMENTS) {
            char sh[96];
            cf_seterr("error: at batch %d, the value of %s %s would hold %.3g elements: too large", batch,
                      cf_ops[n->op]->what, cf_shape_str(n->shape, sh, sizeof sh), elems);
            cf_adderr_trace(n);
            free(block);
            return NULL;
        }
    }

    /* the timeline */
    for (int i = 0; i < nn; i++) {
        tf[i] = tb[i] = -1;
        if (live[i] && !is_leaf(m->nodes[i])) {
            tf[i] = e->nfwd;
            e->fwd[e->nfwd++] = i;
        }
    }
    for (int i = nn - 1; i >= 0; i--)
        if (bstep[i]) {
            tb[i] = e->nfwd + e->nbwd;
            e->bwd[e->nbwd++] = i;
        }
    int end = e->nfwd + e->nbwd;

    /* concrete shapes; parameters, states and constants point into the model */
    for (int i = 0; i < nn; i++) {
        cf_node *n = m->nodes[i];
        e->shape[i] = n->shape;
        concrete(&e->shape[i], batch);
        if (n->op == CF_OP_PARAM) {
            e->val[i] = m->pdata + m->poff[n->index];
            if (hasgrad[i]) e->grad[i] = m->pgrad + m->poff[n->index];
        } else if (n->op == CF_OP_STATE && !n->batched) {   /* carried ones: below */
            e->val[i] = m->sdata + m->soff[n->index];
        } else if (n->op == CF_OP_CONST) {
            e->val[i] = &n->attr.f[0];
        }
    }

    /* buffers and lifetimes */
    int nbuf = 0, maxbuf = 5 * nn + m->noutputs + 1;
    cf_buf *bufs = calloc((size_t)maxbuf, sizeof *bufs);
    if (!bufs) {
        free(block);
        return cf_oom((size_t)maxbuf * sizeof *bufs), NULL;
    }
    /* Lifetimes in one pass over the consumers: a value lives until the last step that
     * reads it (a consumer's forward, its backward if that reads inputs, its own backward
     * if that reads the output); a gradient from the first backward that writes it. */
    int *last = malloc(2 * (size_t)nn * sizeof *last), *gfirst = last ? last + nn : NULL;
    if (!last) {
        free(bufs);
        free(block);
        return cf_oom(2 * (size_t)nn * sizeof *last), NULL;
    }
    for (int i = 0; i < nn; i++) {
        last[i] = tf[i] < 0 ? 0 : tf[i];
        if (tb[i] > last[i] && (cf_ops[m->nodes[i]->op]->flags & CF_BWD_Y)) last[i] = tb[i];
        gfirst[i] = end;
    }
    for (int c = 0; c < nn; c++) {
        if (!live[c]) continue;
        int reads_x = (cf_ops[m->nodes[c]->op]->flags & CF_BWD_X) != 0;
        for (int j = 0; j < NSRC(c); j++) {
            int i = SRC(c, j);
            if (tf[c] > last[i]) last[i] = tf[c];
            if (reads_x && tb[c] > last[i]) last[i] = tb[c];
            if (tb[c] >= 0 && tb[c] < gfirst[i] && slot_differentiable(e, m->nodes[c], j)) gfirst[i] = tb[c];
        }
    }
    /* outputs, the loss and inputs are kept for the whole step; their gradients from
     * the backward's start */
    for (int o = 0; o < m->noutputs; o++) last[m->outputs[o]->id] = end, gfirst[m->outputs[o]->id] = e->nfwd;
    if (e->loss >= 0) last[e->loss] = end, gfirst[e->loss] = e->nfwd;
    /* a carried state's next value is taken at the next forward: kept to the end */
    for (int i = 0; i < m->ncarries; i++)
        if (m->carries[i].next) last[m->carries[i].next->id] = end;
    /* a fused chain's values share its head's buffer, for all their lifetimes */
    for (int i = 0; i < nn; i++)
        if (e->fuse_head[i] >= 0 && last[i] > last[e->fuse_head[i]]) last[e->fuse_head[i]] = last[i];
    for (int i = 0; i < nn; i++) {
        cf_node *n = m->nodes[i];
        if (!live[i] || model_held(n)) continue;
        if (e->fuse_head[i] >= 0) {   /* its value is its chain head's; its gradient its own */
            if (!hasgrad[i]) continue;
            int gf = gfirst[i], gl = tb[i] < gf ? gf : tb[i];
            bufs[nbuf++] = (cf_buf){cf_shape_count_b(n->shape, batch), 0, gf, gl, &e->grad[i]};
            continue;
        }
        int first = n->op == CF_OP_INPUT ? 0 : tf[i];
        if (n->op == CF_OP_INPUT) last[i] = end;
        bufs[nbuf++] = (cf_buf){cf_shape_count_b(n->shape, batch), 0, first, last[i], &e->val[i]};
        if (!hasgrad[i]) continue;
        int gf = gfirst[i], gl = tb[i];
        if (n->op == CF_OP_INPUT) gf = 0, gl = end;   /* kept until the next backward */
        if (gl < gf) gl = gf;
        bufs[nbuf++] = (cf_buf){cf_shape_count_b(n->shape, batch), 0, gf, gl, &e->grad[i]};
    }
    free(last);
    if (train)
        for (int o = 0; o < m->noutputs; o++)
            bufs[nbuf++] = (cf_buf){cf_shape_count_b(m->outputs[o]->shape, batch), 0, 0, end, &e->head[o]};
    /* each instance's node and concrete shapes; what ops save for backward (from their
       forward to their backward) and their scratch (each step its own), sized from them */
    k = 0;
    for (int i = 0; i < nn; i++) {
        cf_inst *in = &e->inst[i];
        in->node = m->nodes[i];
        in->nin = NSRC(i);
        in->xs = e->xsp + k;
        for (int j = 0; j < in->nin; j++) e->xsp[k + j] = e->shape[SRC(i, j)];
        k += in->nin;
        in->ys = e->shape[i];
        const cf_opdef *d = cf_ops[m->nodes[i]->op];
        if (!live[i] || tf[i] < 0) continue;
        size_t na = d->aux ? d->aux(in) : 0, nw = d->workspace ? d->workspace(in) : 0;
        if (na) bufs[nbuf++] = (cf_buf){na, 0, tf[i], bstep[i] ? tb[i] : tf[i], &e->aux[i]};
        if (nw) bufs[nbuf++] = (cf_buf){nw, 0, tf[i], tf[i], &e->fws[i]};
        if (nw && bstep[i]) bufs[nbuf++] = (cf_buf){nw, 0, tb[i], tb[i], &e->bws[i]};
    }

    size_t unplanned = 0;
    for (int i = 0; i < nbuf; i++) unplanned += (bufs[i].size + 15) / 16 * 16;
    size_t floats = cf_plan_buffers(bufs, nbuf);
    if (floats == (size_t)-1) {
        free(bufs);
        free(block);
        return NULL;   /* the planner's scratch: the message is set */
    }
    char what[64];
    snprintf(what, sizeof what, "at batch %d, the activation memory", batch);
    if (!(e->arena = cf_mem_alloc((floats ? floats : 16) * sizeof(float), what))) {
        blame_largest(m, live, batch);
        free(bufs);
        free(block);
        return NULL;
    }
    memset(e->arena, 0, (floats ? floats : 16) * sizeof(float));
    if (ncarry) {
        snprintf(what, sizeof what, "at batch %d, the carried state", batch);
        if (!(e->carry = cf_mem_alloc(ncarry * sizeof *e->carry, what))) {
            cf_mem_free(e->arena);
            free(bufs);
            free(block);
            return NULL;
        }
        for (int i = 0; i < m->ncarries; i++) e->val[m->carries[i].state->id] = e->carry + e->carry_off[i];
        cf_exec_reset_state(e);
    }
    e->arena_floats = floats;
    e->unplanned_floats = unplanned;
    for (int i = 0; i < nbuf; i++) *bufs[i].dest = e->arena + bufs[i].offset;
    for (int i = 0; i < nn; i++)
        if (e->fuse_head[i] >= 0) e->val[i] = e->val[e->fuse_head[i]];
    if (getenv("CFLUX_DEBUG_PLAN"))
        for (int i = 0; i < nbuf; i++)
            fprintf(stderr, "buf %d: size %zu at %zu, steps [%d, %d]\n", i, bufs[i].size, bufs[i].offset, bufs[i].first, bufs[i].last);
    free(bufs);

    /* head gradients: 1 for a scalar (a loss), else 0 */
    if (train)
        for (int o = 0; o < m->noutputs; o++)
            if (m->outputs[o]->shape.rank == 0) e->head[o][0] = 1.0f;

    /* kernel instances: their buffers (node, shapes and counts were set above) */
    k = 0;
    for (int i = 0; i < nn; i++) {
        cf_inst *in = &e->inst[i];
        in->x = e->xp + k;
        in->dx = e->dxp + k;
        in->acc = e->accp + k;
        for (int j = 0; j < in->nin; j++) {
            int s = SRC(i, j);
            e->xp[k + j] = e->val[s];
            e->dxp[k + j] = bstep[i] && slot_differentiable(e, m->nodes[i], j) ? e->grad[s] : NULL;
        }
        k += in->nin;
        in->y = e->val[i];
        in->dy = e->grad[i];
        in->aux = e->aux[i];
        in->ctx = &e->ctx;
    }
#undef NSRC
#undef SRC
    return e;
}

/* ---- run ---- */

static int check_finite(cf_exec *e, int i)
{
    const float *v = e->val[i];
    size_t n = cf_shape_count_b(e->shape[i], 1);
    for (size_t j = 0; j < n; j++)
        if (!isfinite(v[j])) {
            const cf_node *nd = e->m->nodes[i];
            cf_seterr("error: %s made a non-finite value (%g at element %zu)", cf_ops[nd->op]->what,
                      (double)v[j], j);
            cf_adderr_trace(nd);
            return -1;
        }
    return 0;
}

void cf_exec_set_step(cf_exec *e, long step)
{
    if (e) e->ctx.step = step - 1;
}

int cf_forward(cf_exec *e, int train)
{
    if (!e) return cf_seterr("error: cf_forward: no executor");
    e->ctx.train = train != 0;
    e->ctx.step++;
    e->ctx.key = (e->m->seed ^ 0x243f6a8885a308d3ull) * 0x9e3779b97f4a7c15ull + (uint64_t)e->ctx.step +
                 e->stream * 0xd1b54a32d192ed03ull;
    take_carries(e);
    for (int s = 0; s < e->nfwd; s++) {
        int i = e->fwd[s];
        const cf_inst *k = &e->inst[i];
        (void)train;
        if (e->fuse_head[i] >= 0) continue;   /* computed by its chain's product */
        if (e->fuse_bias[i] >= 0) {
            cf_matmul_fused(k, e->val[e->fuse_bias[i]], e->fuse_relu[i]);
            continue;
        }
        e->inst[i].ws = e->fws[i];
        int rc = cf_ops[k->node->op]->forward(k);
        if (rc) {
            if (rc != CF_FWD_TRACED) cf_adderr_trace(k->node);
            return -1;
        }
        if (e->nantrap && check_finite(e, i)) return -1;
    }
    e->carry_pending = e->carry != NULL;
    return 0;
}

int cf_backward(cf_exec *e)
{
    if (!e) return cf_seterr("error: cf_backward: no executor");
    if (!(e->flags & CF_TRAIN)) return cf_seterr("error: cf_backward: the executor was bound without CF_TRAIN");
    cf_model *m = e->m;
    for (int i = 0; i < e->nn; i++) e->gz[i] = 1;
    for (int i = 0; i < m->nparams; i++)
        if (m->params[i]->req == CF_GRAD_ADD) e->gz[m->params[i]->id] = 0;
    if (e->loss >= 0 && e->grad[e->loss]) {   /* the loss: d loss = 1 */
        e->grad[e->loss][0] = e->gz[e->loss] ? 1.0f : e->grad[e->loss][0] + 1.0f;
        e->gz[e->loss] = 0;
    }
    for (int o = 0; o < e->noutputs; o++) {
        int i = m->outputs[o]->id;
        size_t n = cf_shape_count_b(e->shape[i], 1);
        const float *h = e->head[o];
        if (!e->grad[i]) continue;
        size_t j = 0;
        while (j < n && h[j] == 0) j++;
        if (j == n) continue;                 /* a zero head adds nothing */
        cf_put(e->grad[i], h, n, !e->gz[i]);
        e->gz[i] = 0;
    }
    int told = 0;
    for (int s = 0; s < e->nbwd; s++) {
        int i = e->bwd[s];
        if (!e->gz[i]) {                      /* else nothing flows back through it */
            cf_inst *k = &e->inst[i];
            for (int j = 0; j < k->nin; j++) {
                if (!k->dx[j]) continue;
                int src = e->src[e->src_at[i] + j];
                k->acc[j] = !e->gz[src];
                e->gz[src] = 0;
            }
            k->ws = e->bws[i];
            cf_ops[k->node->op]->backward(k);
        }
        /* a parameter whose gradient this step finished: zero if nothing reached it */
        for (; e->grad_hook && told < e->ready_end[s]; told++) {
            const cf_node *p = m->params[e->ready[told]];
            if (e->grad[p->id] && e->gz[p->id]) memset(e->grad[p->id], 0, cf_shape_count(p->shape) * sizeof(float));
            e->gz[p->id] = 0;
            e->grad_hook(e->ready[told], e->grad_user);
        }
    }
    /* a gradient that nothing reached this time is zero */
    for (int i = 0; i < e->nn; i++)
        if (e->grad[i] && e->gz[i] && is_leaf(m->nodes[i])) memset(e->grad[i], 0, cf_shape_count_b(e->shape[i], 1) * sizeof(float));
    for (; e->grad_hook && told < e->ready_end[e->nbwd]; told++) e->grad_hook(e->ready[told], e->grad_user);
    return 0;
}

int cf_exec_on_grad_ready(cf_exec *e, void (*fn)(int param, void *user), void *user)
{
    if (!e || !(e->flags & CF_TRAIN)) return cf_seterr("error: cf_exec_on_grad_ready: no executor bound for training");
    cf_model *m = e->m;
    if (fn && !e->ready) {
        int np = m->nparams, *last = malloc((size_t)(np ? np : 1) * sizeof *last);
        e->ready = malloc((size_t)(np ? np : 1) * sizeof *e->ready);
        e->ready_end = calloc((size_t)e->nbwd + 1, sizeof *e->ready_end);
        if (!last || !e->ready || !e->ready_end) {
            free(last);
            free(e->ready);
            free(e->ready_end);
            e->ready = e->ready_end = NULL;
            return cf_oom((size_t)np * 3 * sizeof *last);
        }
        for (int q = 0; q < np; q++) last[q] = e->nbwd;   /* no step: at the end */
        for (int s = 0; s < e->nbwd; s++) {
            int i = e->bwd[s];
            const cf_inst *k = &e->inst[i];
            for (int j = 0; j < k->nin; j++) {
                const cf_node *src = m->nodes[e->src[e->src_at[i] + j]];
                if (k->dx[j] && src->op == CF_OP_PARAM) last[src->index] = s;
            }
        }
        /* grouped by the step that finishes them, in backward's order */
        int n = 0;
        for (int s = 0; s <= e->nbwd; s++) {
            for (int q = 0; q < np; q++)
                if (last[q] == s) e->ready[n++] = q;
            e->ready_end[s] = n;
        }
        free(last);
    }
    e->grad_hook = fn;
    e->grad_user = user;
    return 0;
}

void cf_exec_set_stream(cf_exec *e, uint64_t stream)
{
    if (e) e->stream = stream;
}

typedef struct {
    float *p, *g, lr;
} sgd_job;

static void sgd_range(void *ctx, size_t b, size_t end)
{
    const sgd_job *j = ctx;
    float *restrict p = j->p, *restrict g = j->g, lr = j->lr;
    for (size_t i = b; i < end; i++) {
        p[i] -= lr * g[i];
        g[i] = 0;
    }
}

int cf_update_sgd(cf_exec *e, float lr)
{
    if (!e) return cf_seterr("error: cf_update_sgd: no executor");
    cf_model *m = e->m;
    if (!m->pgrad) return cf_seterr("error: cf_update_sgd: the model has no gradients (bind with CF_TRAIN)");
    for (int i = 0; i < m->nparams; i++) {
        if (m->params[i]->req == CF_GRAD_NONE) continue;
        sgd_job j = {m->pdata + m->poff[i], m->pgrad + m->poff[i], lr};
        cf_parallel_range(cf_shape_count(m->params[i]->shape), 2, sgd_range, &j);
    }
    return 0;
}

/* ---- buffers ---- */

int cf_exec_batch(const cf_exec *e) { return e ? e->batch : 0; }
int cf_exec_input_count(const cf_exec *e) { return e ? e->ninputs : 0; }
int cf_exec_output_count(const cf_exec *e) { return e ? e->noutputs : 0; }

static float *buffer(const cf_exec *e, const cf_node *n, float *p, size_t *count)
{
    if (count) *count = p ? cf_shape_count_b(e->shape[n->id], 1) : 0;
    return p;
}

int cf_exec_set_input(cf_exec *e, int i, const float *data)
{
    if (!e) return cf_seterr("error: cf_exec_set_input: no executor");
    if (i < 0 || i >= e->ninputs)
        return cf_seterr("error: cf_exec_set_input: input %d of an executor with %d input%s", i, e->ninputs,
                         e->ninputs == 1 ? "" : "s");
    int id = e->m->inputs[i]->id;
    if (!e->own_input[i]) e->own_input[i] = e->val[id];
    float *p = data ? (float *)data : e->own_input[i];   /* never written: see cflux.h */
    e->val[id] = p;
    for (int c = 0; c < e->nn; c++)
        for (int j = e->src_at[c]; j < e->src_at[c + 1]; j++)
            if (e->src[j] == id) e->xp[j] = p;
    return 0;
}

float *cf_exec_input(cf_exec *e, int i, size_t *count)
{
    if (!e || i < 0 || i >= e->ninputs) return buffer(e, NULL, NULL, count);
    const cf_node *n = e->m->inputs[i];
    return buffer(e, n, e->val[n->id], count);
}

const float *cf_exec_output(cf_exec *e, int i, size_t *count)
{
    if (!e || i < 0 || i >= e->noutputs) return buffer(e, NULL, NULL, count);
    const cf_node *n = e->m->outputs[i];
    return buffer(e, n, e->val[n->id], count);
}

float *cf_exec_output_grad(cf_exec *e, int i, size_t *count)
{
    if (!e || i < 0 || i >= e->m->noutputs || !(e->flags & CF_TRAIN)) return buffer(e, NULL, NULL, count);
    return buffer(e, e->m->outputs[i], e->head[i], count);
}

const float *cf_exec_input_grad(cf_exec *e, int i, size_t *count)
{
    if (!e || i < 0 || i >= e->ninputs) return buffer(e, NULL, NULL, count);
    const cf_node *n = e->m->inputs[i];
    return buffer(e, n, e->grad[n->id], count);
}

cf_shape cf_exec_input_shape(const cf_exec *e, int i)
{
    if (!e || i < 0 || i >= e->ninputs) return (cf_shape){0, {0}};
    return e->shape[e->m->inputs[i]->id];
}

cf_shape cf_exec_output_shape(const cf_exec *e, int i)
{
    if (!e || i < 0 || i >= e->noutputs) return (cf_shape){0, {0}};
    return e->shape[e->m->outputs[i]->id];
}

int cf_exec_input_index(const cf_exec *e, const char *name)
{
    for (int i = 0; e && name && i < e->ninputs; i++)
        if (strcmp(e->m->inputs[i]->name, name) == 0) return i;
    return -1;
}

float cf_exec_loss(const cf_exec *e)
{
    return e && e->loss >= 0 ? e->val[e->loss][0] : NAN;
}

size_t cf_exec_arena_bytes(const cf_exec *e, size_t *unplanned)
{
    if (unplanned) *unplanned = e ? e->unplanned_floats * sizeof(float) : 0;
    return e ? e->arena_floats * sizeof(float) : 0;
}
