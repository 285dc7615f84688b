/* unroll.c - recurrence: states (y = state(n), read as y{-1}) and unroll(m, n),
 * which runs a model over n steps carrying its states; a Chain around a standard-
 * library LSTM is built layer by layer, the LSTM as one fused node. A state read
 * outside unroll gets a note (cf_model_compile_notes). */
#include <stdio.h>
#include <string.h>

#include "lang/compile_int.h"

/* Make a state's start, its carried leaf, when first needed. */
static int state_start(cc *c, rstate *st, env *en, const ast *e)
{
    if (st->start) return 0;
    char name[512];
    if (cc_full_name(st->owner, st->local ? st->local : "state", st->file, st->line, st->col, name, sizeof name))
        return -1;
    st->start = cf_carry_at(c->m, name, st->shape, st->init, st->file, st->line, st->col);
    return cc_made(c, en, e, st->start);
}

/* A state read outside unroll is its start at every forward (nothing carries it on),
 * so the net never sees an earlier step: a model that meant to run over sequences but
 * left out unroll(...) compiles all the same. Say so once a net, as a note on the
 * model (cf_model_compile_notes). 0 or -1. */
static int note_outside_unroll(cc *c, const rstate *st, const char *name)
{
    inst *net = st->owner;
    if (c->unrolling || net->noted) return 0;
    net->noted = 1;
    const char *old = c->m->compile_notes ? c->m->compile_notes : "";
    const char *start = st->init.kind == CF_INIT_ONES ? "ones" : "zeros";
    char line[1024];
    int n = snprintf(line, sizeof line,
                     "note: %s at %s:%d:%d keeps a state but runs outside unroll: each batch is one step from "
                     "the state's start, so %s{-1} is always %s and the net never sees an earlier step; to run it "
                     "over sequences of n steps, write model = unroll(%s, n), whose Input is one step's\n",
                     net->tname, net->file, net->line, net->col, name, start, c->model_text);
    size_t size = strlen(old) + (size_t)n + 1;
    char *notes = cf_arena_alloc(&c->m->arena, size);
    if (!notes) return cf_oom(size);
    snprintf(notes, size, "%s%s", old, line);
    c->m->compile_notes = notes;
    return 0;
}

/* y{-1}: a state's value at the previous step, or its start (a carried leaf). */
int cc_state_prev(cc *c, env *en, const ast *e, value *out)
{
    const value *v = cc_lookup(en, e->name);
    if (!v)
        return ERR(c, en, e, "%s{%g}: there is no state named '%s'; declare it in the net body with %s = state(...)",
                   e->name, e->num, e->name, e->name);
    if (v->kind != V_STATE)
        return ERR(c, en, e, "%s{%g}: '%s' is %s, not a state; declare it in the net body with %s = state(...)",
                   e->name, e->num, e->name, cc_kind_name(v), e->name);
    if (e->num != -1)
        return ERR(c, en, e, "%s{%g}: only the previous step, %s{-1}, can be read", e->name, e->num, e->name);
    if (!c->in_forward) return ERR(c, en, e, "%s{-1} is read inside a forward function", e->name);
    rstate *st = v->state;
    st->touched = 1;
    if (note_outside_unroll(c, st, e->name)) return -1;
    if (st->prev) {
        *out = tensor_value(st->prev);
        return 0;
    }
    if (state_start(c, st, en, e)) return -1;
    *out = tensor_value(st->start);
    return 0;
}

/* name = value, where name is a state: its value for this step. */
int cc_state_assign(cc *c, env *en, const ast *s, rstate *st, const value *v)
{
    if (v->kind != V_TENSOR)
        return ERR(c, en, s, "the state '%s' is set to a value, not to %s", s->name, cc_kind_name(v));
    const cf_node *n = v->node;
    int fits = n->batched && n->shape.rank == st->shape.rank + 1;
    for (int i = 0; fits && i < st->shape.rank; i++) fits = n->shape.d[i + 1] == st->shape.d[i];
    if (!fits) {
        char s1[96], s2[96];
        cf_shape want = {st->shape.rank + 1, {CF_BATCH}};
        for (int i = 0; i < st->shape.rank; i++) want.d[i + 1] = st->shape.d[i];
        return ERR(c, en, s, "the state '%s' is %s, but it is set to a value of %s", s->name,
                   cf_shape_str(want, s1, sizeof s1), cf_shape_str(n->shape, s2, sizeof s2));
    }
    st->cur = v->node;
    st->touched = 1;
    return 0;
}

/* The per-step input shape an unrolled model begins with (its Input), or -1. */
static int unrolled_input(const inst *m, cf_shape *s)
{
    if (m->kind == I_INPUT) {
        *s = m->shape;
        return 0;
    }
    if (m->kind == I_CHAIN && m->n > 0 && m->items[0].kind == V_MODEL) return unrolled_input(m->items[0].model, s);
    return -1;
}

/* Join per-step values (B, d...) into one (B, n, d...). When every step ends with a
 * softmax (a classifier at each step), the steps' logits are joined and one softmax
 * runs over them all: the same values, and a model that ends with softmax, whose
 * cross-entropy the executor fuses. The per-step softmaxes are then read by nothing,
 * and never run. */
static cf_node *stack_steps(cc *c, cf_node **ys, int n, const char *file, int line, int col)
{
    int softmax = 1;
    for (int t = 0; t < n; t++) softmax &= ys[t]->op == CF_OP_SOFTMAX;
    if (softmax) {
        for (int t = 0; t < n; t++) ys[t] = ys[t]->in[0];
        cf_node *z = stack_steps(c, ys, n, file, line, col);
        cf_node *r = z ? cf_unary_at(c->m, CF_OP_SOFTMAX, z, 0, file, line, col) : NULL;
        if (r && cf_node_infer(r)) return NULL;
        return r;
    }
    for (int t = 0; t < n; t++) {
        cf_shape s = ys[t]->shape;   /* (B, d...) -> per sample (1, d...) */
        s.d[0] = 1;
        ys[t] = cf_reshape_at(c->m, ys[t], s, file, line, col);
        if (!ys[t] || cf_node_infer(ys[t])) return NULL;
    }
    cf_node *r = cf_concat_at(c->m, 1, n, ys, file, line, col);
    if (r && cf_node_infer(r)) return NULL;
    return r;
}

/* ---- unrolling a Chain layer by layer ----
 *
 * unroll(Chain(l1, ..., lk), n) runs l1 .. lk at each step; since a layer's state is
 * its own, the same values come from running l1 over all n steps, then l2 over all,
 * and so on. Built that way, the layers around a recurrent one that treat each
 * position alike (nets that declare sequence(each), as Affine, Embedding and LayerNorm
 * do; elementwise functions, softmax) run once over (B, n, ...) instead of once per
 * step, and the steps of a net that declares
 * its sequence form (sequence(lstm(...)), as the standard library's LSTM does) are
 * recorded as a region, which a pass before binding replaces by one node over the
 * whole sequence (src/exec/fuse_lstm.c; CFLUX_PASSES=-fuse_lstm keeps the steps).
 * Only Chains made of such layers and at least one such net are built this way. */

/* The form v's net declares with sequence(...) (a made instance, or a template waiting
 * for its input size in a Chain): SEQ_OP (lstm(...)), SEQ_EACH (each), or SEQ_NONE. */
enum { SEQ_NONE, SEQ_OP, SEQ_EACH };
static int sequence_form(const value *v)
{
    if (v->kind == V_MODEL)
        return v->model->kind != I_NET ? SEQ_NONE : v->model->seq_each ? SEQ_EACH
               : v->model->seq_op != CF_OP_INPUT ? SEQ_OP : SEQ_NONE;
    if (v->kind != V_PARTIAL) return SEQ_NONE;
    const ast *blk = v->partial->tmpl.net->a;
    for (int i = 0; i < blk->n; i++) {
        const ast *s = blk->items[i];
        if (s->kind != AST_CALL || strcmp(s->a->name, "sequence") != 0 || s->n != 1) continue;
        return s->items[0]->kind == AST_NAME && !strcmp(s->items[0]->name, "each") ? SEQ_EACH : SEQ_OP;
    }
    return SEQ_NONE;
}

/* A function of one value that treats every position of (B, n, ...) alike. */
static int positionwise_op(const value *v)
{
    if (v->kind != V_BUILTIN) return 0;
    struct builtin b = cc_builtin_at(v->fn);
    if (!b.unary) return 0;   /* an op's (B_OP), or gelu's */
    if (b.op == CF_OP_INPUT) return 1;   /* identity */
    return (cf_ops[b.op]->flags & CF_POSITIONWISE) != 0;
}

/* Can unroll(m, n) be built layer by layer, and does it gain by it? */
static int unroll_by_layers(const inst *m)
{
    if (m->kind != I_CHAIN) return 0;
    int seq = 0;
    for (int k = 0; k < m->n; k++) {
        const value *v = &m->items[k];
        for (int j = 0; j < k; j++)   /* one instance twice: its state would be shared */
            if (v->kind == V_MODEL && m->items[j].kind == V_MODEL && m->items[j].model == v->model) return 0;
        int form = sequence_form(v);
        if (form == SEQ_OP) seq = 1;
        else if (v->kind == V_MODEL && v->model->kind == I_INPUT) { if (k != 0) return 0; }
        else if (form != SEQ_EACH && !positionwise_op(v)) return 0;
    }
    return seq;
}

/* A net that declared its sequence form, over sequences x (B, n, ...): its steps one
 * after another, as its body defines them, recorded as a region for the pass that
 * fuses them. Its states start from their carried leaves and end as the last step's
 * (for unroll to carry on). */
static int sequence_layer(cc *c, inst *net, cf_node *x, int n, const char *file, int line, int col, value *out)
{
    env here = {.file = file};
    ast where = {.line = line, .col = col};
    cf_region r = {.op = net->seq_op, .nin = 6, .in = {[5] = x}, .loc = {file, line, col}};
    value v;
    for (int i = 0; i < 2; i++) {
        if (state_start(c, net->seq_s[i], &here, &where)) return -1;
        r.in[i] = net->seq_s[i]->start;
    }
    for (int i = 0; i < 3; i++) {
        if (cc_param_node(c, net->seq_p[i], &v)) return -1;
        r.in[2 + i] = v.node;
    }
    if (cc_enter(c, net->tname, file, line, col)) return -1;
    r.frame = c->m->frame;   /* the fused nodes' place: a call of the net */
    cc_leave(c);
    cf_shape step = {x->shape.rank - 2, {0}};
    for (int i = 2; i < x->shape.rank; i++) step.d[i - 2] = x->shape.d[i];
    cf_node **ys = cf_arena_alloc(&c->arena, (size_t)n * sizeof *ys);
    if (!ys) return cf_oom((size_t)n * sizeof *ys);
    r.lo = c->m->nnodes;
    for (int t = 0; t < n; t++) {
        cf_node *xt = cf_slice_at(c->m, x, 1, t, 1, file, line, col);
        if (cc_made(c, &here, &where, xt)) return -1;
        xt = cf_reshape_at(c->m, xt, step, file, line, col);
        if (cc_made(c, &here, &where, xt)) return -1;
        value xv = tensor_value(xt), yv;
        if (cc_call_model(c, net, &xv, 1, file, line, col, &yv)) return -1;
        if (yv.kind != V_TENSOR || !yv.node->batched)
            return cc_err(c, file, line, col, "unroll: %s must give one value with the batch dimension", net->tname);
        ys[t] = yv.node;
        for (rstate *st = c->states; st; st = st->next)
            if (st->cur) st->prev = st->cur, st->cur = NULL;
    }
    cf_node *seq = stack_steps(c, ys, n, file, line, col);
    if (cc_made(c, &here, &where, seq)) return -1;
    r.hi = c->m->nnodes - 1;
    r.seq = seq;
    r.last[0] = net->seq_s[0]->prev;
    r.last[1] = net->seq_s[1]->prev;
    if (r.last[0] && r.last[1] && cf_model_add_region(c->m, &r)) return -1;
    *out = tensor_value(seq);
    return 0;
}

/* unroll(m, n) of a Chain, layer by layer (see above), on sequences x (B, n, d...). */
static int unroll_layers(cc *c, inst *m, cf_node *x, int n, const char *file, value *out)
{
    for (int k = 0; k < m->n; k++) {
        value *item = &m->items[k];
        const ast *where = m->item_ast[k];
        const char *f = m->env ? m->env->file : file;
        env at = {.file = f};
        if (item->kind == V_MODEL && item->model->kind == I_INPUT) {
            const cf_shape s = item->model->shape;
            if (cf_shape_count_b(x->shape, 1) != (size_t)n * cf_shape_count(s)) {
                char s1[96], s2[96];
                return cc_err(c, f, where->line, where->col, "Input%s does not fit the value flowing in: %s",
                            cf_shape_str(s, s1, sizeof s1), cf_shape_str(x->shape, s2, sizeof s2));
            }
            cf_shape seq = {s.rank + 1, {n}};
            for (int i = 0; i < s.rank; i++) seq.d[i + 1] = s.d[i];
            x = cf_reshape_at(c->m, x, seq, f, where->line, where->col);
            if (cc_made(c, &at, where, x)) return -1;
            continue;
        }
        if (item->kind == V_PARTIAL) {
            value mv;
            /* what a Chain passes at one step: the features of (B, d...) */
            if (cc_make_partial(c, m, k, cc_features_from(x->shape, 2), &mv)) return -1;
        }
        value xv = tensor_value(x), yv;
        if (sequence_form(item) == SEQ_OP) {
            if (sequence_layer(c, item->model, x, n, f, where->line, where->col, &yv)) return -1;
        } else if (cc_apply(c, item, &xv, 1, f, where, &yv, m, k)) {
            return -1;
        }
        if (yv.kind != V_TENSOR || !yv.node->batched)
            return cc_err(c, f, where->line, where->col, "unroll: %s must give one value with the batch dimension",
                        m->tname);
        x = yv.node;
    }
    *out = tensor_value(x);
    return 0;
}

/* unroll(m, n): x (B, n, d...) -> m at every step, sharing its parameters, with its
 * states carried from each step to the next; outputs joined along dimension 1. */
int cc_call_unroll(cc *c, inst *u, value *args, int nargs, const char *file, int line, int col, value *out)
{
    inst *m = u->items[0].model;
    ast where = {.line = line, .col = col};
    env here = {.file = file};
    if (nargs != 1 || args[0].kind != V_TENSOR) return cc_err(c, file, line, col, "unroll takes one value: sequences");
    cf_node *x = args[0].node;
    cf_shape step;
    if (cc_is_unresolved(c, x)) {
        if (unrolled_input(m, &step))
            return cc_err(c, file, line, col,
                          "cannot tell the shape of the input '%s': begin the unrolled model with Input(...)",
                          x->name);
        cf_shape seq = {step.rank + 1, {u->n}};
        if (seq.rank > CF_MAX_DIMS - 1) return cc_err(c, file, line, col, "unroll: the steps have too many dimensions");
        for (int i = 0; i < step.rank; i++) seq.d[i + 1] = step.d[i];
        cc_resolve(c, x, seq);
    }
    char sx[96];
    if (!x->batched || x->shape.rank < 2 || x->shape.d[1] != u->n)
        return cc_err(c, file, line, col, "unroll over %d steps takes sequences (B, %d, ...), but was given %s", u->n,
                      u->n, cf_shape_str(x->shape, sx, sizeof sx));
    step = (cf_shape){x->shape.rank - 2, {0}};
    for (int i = 2; i < x->shape.rank; i++) step.d[i - 2] = x->shape.d[i];
    for (rstate *st = c->states; st; st = st->next) st->prev = st->cur = NULL, st->touched = 0;
    cf_node **ys = NULL;
    int nout = 0, rc = -1;
    c->unrolling++;
    if (unroll_by_layers(m)) {
        if (unroll_layers(c, m, x, u->n, file, out)) goto done;
        goto carry;
    }
    for (int t = 0; t < u->n; t++) {
        cf_node *xt = cf_slice_at(c->m, x, 1, t, 1, file, line, col);
        if (cc_made(c, &here, &where, xt)) goto done;
        xt = cf_reshape_at(c->m, xt, step, file, line, col);
        if (cc_made(c, &here, &where, xt)) goto done;
        value xv = tensor_value(xt), yv;
        if (cc_call_model(c, m, &xv, 1, file, line, col, &yv)) goto done;
        int k = yv.kind == V_TUPLE ? yv.n : 1;
        if (t == 0) {
            int any = 0;
            for (rstate *st = c->states; st; st = st->next) any |= st->touched;
            if (!any) {
                cc_err(c, file, line, col, "unroll: %s has no state to carry from step to step (a net declares one "
                                         "with y = state(n) and reads it as y{-1})", m->tname);
                goto done;
            }
            nout = k;
            ys = cf_arena_alloc(&c->arena, (size_t)k * u->n * sizeof *ys);
            if (!ys) {
                cf_oom((size_t)k * u->n * sizeof *ys);
                goto done;
            }
        } else if (k != nout) {
            cc_err(c, file, line, col, "unroll: %s gave %d outputs at step 1 but %d at step %d", m->tname, nout, k,
                   t + 1);
            goto done;
        }
        for (int j = 0; j < k; j++) {
            const value *v = yv.kind == V_TUPLE ? &yv.items[j] : &yv;
            if (v->kind != V_TENSOR || !v->node->batched) {
                cc_err(c, file, line, col, "unroll: %s must give values with the batch dimension at each step",
                       m->tname);
                goto done;
            }
            ys[(size_t)j * u->n + t] = v->node;
        }
        for (rstate *st = c->states; st; st = st->next)
            if (st->cur) st->prev = st->cur, st->cur = NULL;
    }
    value *items = nout > 1 ? cf_arena_alloc(&c->arena, (size_t)nout * sizeof *items) : NULL;
    if (nout > 1 && !items) {
        cf_oom((size_t)nout * sizeof *items);
        goto done;
    }
    for (int j = 0; j < nout; j++) {
        cf_node *r = stack_steps(c, ys + (size_t)j * u->n, u->n, file, line, col);
        if (cc_made(c, &here, &where, r)) goto done;
        if (nout > 1) items[j] = tensor_value(r);
        else *out = tensor_value(r);
    }
    if (nout > 1) *out = (value){.kind = V_TUPLE, .items = items, .n = nout};
carry:
    if (u->stateful)
        for (rstate *st = c->states; st; st = st->next)
            if (st->start && st->prev && cf_carry_set_next(c->m, st->start, st->prev)) goto done;
    rc = 0;
done:
    c->unrolling--;
    for (rstate *st = c->states; st; st = st->next) st->prev = st->cur = NULL;
    return rc;
}
