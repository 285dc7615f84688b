/* exec.c - forward, backward and update on a bound model (bind.c binds it).
 *
 * A step only walks the orders the binder computed and calls kernels; it allocates
 * nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/quant.h"
#include "core/mem.h"
#include "exec/exec.h"
#include "rt/gemm_builtin.h"
#include "rt/pool.h"

/* ---- carried state ---- */

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

int cf_exec_state_copy(const cf_exec *from, cf_exec *to)
{
    if (!from || !to) return cf_seterr("error: cf_exec_state_copy: no executor");
    int n = cf_exec_state_count(from);
    if (cf_exec_state_count(to) != n)
        return cf_seterr("error: cf_exec_state_copy: %d carried states, and %d to copy them into", n,
                         cf_exec_state_count(to));
    for (int i = 0; i < n; i++) {
        cf_shape a = cf_exec_state_shape(from, i), b = cf_exec_state_shape(to, i);
        if (strcmp(cf_exec_state_name(from, i), cf_exec_state_name(to, i)) || cf_shape_count(a) != cf_shape_count(b))
            return cf_seterr("error: cf_exec_state_copy: state %d is '%s' of %zu values, and '%s' of %zu where it "
                             "would go", i, cf_exec_state_name(from, i), cf_shape_count(a),
                             cf_exec_state_name(to, i), cf_shape_count(b));
    }
    take_carries(to);
    for (int i = 0; i < n; i++) cf_exec_state_get(from, i, to->carry + to->carry_off[i]);
    return 0;
}

void cf_exec_free(cf_exec *e)
{
    if (!e) return;
    free(e->ready);
    free(e->ready_end);
    cf_mem_free(e->carry);
    cf_mem_free(e->arena);
    free(e->block);
    cf_analysis_free(&e->an);
    cf_graph_free(e->g);
    free(e);
}

/* ---- run ---- */

static int check_finite(cf_exec *e, int i)
{
    const float *v = e->val[i];
    size_t n = cf_shape_count_b(e->shape[i], 1);
    for (size_t j = 0; j < n; j++)
        if (!isfinite(v[j])) {
            const cf_node *nd = e->g->node[i];
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
        if (e->vsrc[i] >= 0 && !(cf_ops[k->node->op]->flags & CF_IN_PLACE))
            continue;   /* a view: its value is its source's memory */
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
        if (e->grad[i] && e->gz[i] && cf_is_leaf(e->g->node[i])) memset(e->grad[i], 0, cf_shape_count_b(e->shape[i], 1) * sizeof(float));
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
                const cf_node *src = e->g->node[e->src[e->src_at[i] + j]];
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
    cf_model_quant_free(m);   /* trained: float32 again (core/quant.h) */
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
