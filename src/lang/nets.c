/* nets.c - nets and models: a template made into an instance with its parameters
 * (named by where it is put, added to the model's layers, kept for PyTorch as its
 * torch(...) says), the nets in a Chain that wait for their input size, and calling
 * a model (a net's or a lambda's forward function, a Chain, an Input). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/compile_int.h"

/* ---- nets and models ---- */

/* The full name of what a net instance declares: "outer.inner.W". 0, or -1 with the
 * message when it is too long. */
int cc_full_name(const inst *owner, const char *local, const char *file, int line, int col, char *name,
                 size_t size)
{
    snprintf(name, size, "%s", local);
    for (const inst *i = owner; i && i->local; i = i->parent) {
        size_t a = strlen(i->local), b = strlen(name);
        if (a + 1 + b >= size)
            return cf_seterr("%s:%d:%d: error: the full name (%.40s...) is longer than %zu characters", file, line,
                             col, i->local, size - 1);
        memmove(name + a + 1, name, b + 1);
        memcpy(name, i->local, a);
        name[a] = '.';
    }
    return 0;
}

/* The path of a made net in the model ("2", "enc.1"); seq: as nn.Sequential numbers
 * it (a position in a Chain that begins with Input one less). buf holds 512. */
static void inst_path(const inst *i, int seq, char *buf)
{
    char tmp[512];
    buf[0] = 0;
    for (; i && i->local; i = i->parent) {
        const inst *up = i->parent;
        char part[32];
        const char *name = i->local;
        if (seq && up && up->kind == I_CHAIN && up->items[0].kind == V_MODEL && up->items[0].model->kind == I_INPUT) {
            snprintf(part, sizeof part, "%d", atoi(i->local) - 1);
            name = part;
        }
        snprintf(tmp, sizeof tmp, "%s%s%s", name, buf[0] ? "." : "", buf);
        memcpy(buf, tmp, sizeof tmp);
    }
}

/* The net that owns p, as a layer of the model, when its first parameter is made. */
static int add_layer(cc *c, inst *owner)
{
    if (owner->layer || owner->kind != I_NET) return 0;
    owner->layer = 1;
    char prefix[512], seq[512];
    inst_path(owner, 0, prefix);
    inst_path(owner, 1, seq);
    cf_tmap maps[MAX_ARGS];
    char names[MAX_ARGS][512];
    int n = 0;
    for (int k = 0; k < owner->ntorch && n < MAX_ARGS; k++) {
        const struct tdecl *t = &owner->torch[k];
        if (cc_full_name(owner, t->p->local, t->p->file, t->p->line, t->p->col, names[n], sizeof names[n])) return -1;
        maps[n] = (cf_tmap){names[n], t->form, {t->src[0], t->src[1]}};
        n++;
    }
    cf_layer l = {.prefix = prefix, .seq = seq, .tname = owner->tname, .loc = {owner->file, owner->line, owner->col},
                  .declared = owner->declared, .maps = maps, .nmaps = n};
    return cf_model_add_layer(c->m, &l);
}

/* A net's sequence(...): how it runs over a whole sequence in an unrolled Chain.
 * sequence(each): it treats every step alike (Affine, LayerNorm), so it runs once over
 * (B, n, ...). sequence(lstm(W, U, b, h, c)): its steps compute what the lstm op does
 * at once (PyTorch's LSTM: the gates i, f, g, o side by side in the columns of W (in,
 * 4 out), U (out, 4 out) and b (1, 4 out); states h and c), so that unroll may record
 * them for the pass that fuses them (src/exec/fuse_lstm.c). */
static int sequence_decl(cc *c, env *body, inst *self, const ast *decl)
{
    self->seq_op = CF_OP_INPUT;
    if (!decl) return 0;
    static const char *form = "sequence(lstm(W, U, b, h, c)), with the net's parameters W, U, b and states h, c";
    const ast *f = decl->n == 1 ? decl->items[0] : NULL;
    if (f && f->kind == AST_NAME && !strcmp(f->name, "each")) {
        self->seq_each = 1;
        return 0;
    }
    if (!f || f->kind != AST_CALL || f->a->kind != AST_NAME || strcmp(f->a->name, "lstm") != 0 || f->n != 5)
        return ERR(c, body, decl, "sequence(...) takes each (a net that treats every step alike) or %s", form);
    for (int k = 0; k < 5; k++) {
        const ast *a = f->items[k];
        const value *v = a->kind == AST_NAME && cc_local_index(body, a->name) >= 0 ? cc_lookup(body, a->name) : NULL;
        int want_state = k >= 3;
        if (!v || (want_state ? v->kind != V_STATE || v->state->owner != self
                              : v->kind != V_PARAM || v->param->state || v->param->owner != self))
            return ERR(c, body, a, "sequence(lstm(...)): argument %d must be a %s of %s: %s", k + 1,
                       want_state ? "state" : "parameter", self->tname, form);
        if (want_state) self->seq_s[k - 3] = v->state;
        else self->seq_p[k] = v->param;
    }
    self->seq_op = CF_OP_LSTM;
    return 0;
}

/* A net's torch(P = weight, Q = transpose(weight), R = bias_ih + bias_hh, ...): how
 * PyTorch keeps each of its parameters and running statistics. Without one, each is
 * kept under its own name, as is. */
static int torch_decl(cc *c, env *body, inst *self, const ast *decl)
{
    int n = 0;
    for (int i = 0; i < body->n; i++)
        n += body->vals[i].kind == V_PARAM && body->vals[i].param->owner == self;
    if (n > MAX_ARGS)
        return cc_err(c, body->file, self->line, self->col, "a net with more than %d parameters", MAX_ARGS);
    self->torch = n ? cf_arena_alloc(&c->arena, (size_t)n * sizeof *self->torch) : NULL;
    if (n && !self->torch) return cf_oom((size_t)n * sizeof *self->torch);
    self->declared = decl != NULL;
    if (!decl) {
        for (int i = 0; i < body->n; i++)
            if (body->vals[i].kind == V_PARAM && body->vals[i].param->owner == self)
                self->torch[self->ntorch++] = (struct tdecl){body->vals[i].param, CF_TF_COPY, {body->names[i], NULL}};
        return 0;
    }
    static const char *how = "give a tensor of the PyTorch module: name, transpose(name) or name + name";
    for (int k = 0; k < decl->n; k++) {
        const ast *kw = decl->items[k], *v = kw->a;
        if (kw->kind != AST_KWARG) return ERR(c, body, kw, "torch(...) takes P = tensor for each parameter P: %s", how);
        const value *p = cc_local_index(body, kw->name) >= 0 ? cc_lookup(body, kw->name) : NULL;
        if (!p || p->kind != V_PARAM || p->param->owner != self)
            return ERR(c, body, kw, "torch(...): '%s' is not a parameter or statistic of %s", kw->name, self->tname);
        for (int j = 0; j < self->ntorch; j++)
            if (self->torch[j].p == p->param) return ERR(c, body, kw, "torch(...): '%s' is given twice", kw->name);
        struct tdecl t = {p->param, CF_TF_COPY, {NULL, NULL}};
        if (v->kind == AST_NAME) t.src[0] = v->name;
        else if (v->kind == AST_CALL && v->a->kind == AST_NAME && !strcmp(v->a->name, "transpose") && v->n == 1 &&
                 v->items[0]->kind == AST_NAME) {
            if (p->param->shape.rank != 2)
                return ERR(c, body, v, "torch(...): transpose needs a matrix, and '%s' has %d dimensions", kw->name,
                           p->param->shape.rank);
            t.form = CF_TF_TRANSPOSE;
            t.src[0] = v->items[0]->name;
        } else if (v->kind == AST_BINOP && v->op == OP_ADD && v->a->kind == AST_NAME && v->b->kind == AST_NAME) {
            t.form = CF_TF_SUM;
            t.src[0] = v->a->name;
            t.src[1] = v->b->name;
        } else
            return ERR(c, body, v, "torch(...): %s = ...: %s", kw->name, how);
        self->torch[self->ntorch++] = t;
    }
    for (int i = 0; i < body->n; i++) {
        const value *v = &body->vals[i];
        if (v->kind != V_PARAM || v->param->owner != self) continue;
        int found = 0;
        for (int j = 0; j < self->ntorch; j++) found |= self->torch[j].p == v->param;
        if (!found)
            return ERR(c, body, decl, "torch(...) does not say which PyTorch tensor holds '%s' of %s", body->names[i],
                       self->tname);
    }
    return 0;
}

int cc_param_node(cc *c, param *p, value *out)
{
    if (!p->node) {
        char name[512];
        if (cc_full_name(p->owner, p->local ? p->local : p->state ? "stat" : "param", p->file, p->line, p->col, name,
                         sizeof name))
            return -1;
        p->node = p->state ? cf_state_at(c->m, name, p->shape, p->init, p->file, p->line, p->col)
                           : cf_param_at(c->m, name, p->shape, p->init, p->file, p->line, p->col);
        if (!p->node || (p->owner && add_layer(c, p->owner))) return -1;
    }
    *out = tensor_value(p->node);
    return 0;
}

int cc_instantiate(cc *c, const value *tmpl, value *args, int nargs, const char **kwn, value *kwv, int nkw,
                   const char *file, int line, int col, int in_chain, value *out)
{
    const ast *net = tmpl->net;
    env *body = cc_env_new(c, tmpl->defenv, NULL);
    if (!body) return cf_oom(sizeof *body);
    if (c->depth >= MAX_INSTANTIATION_DEPTH)
        return cc_err(c, file, line, col, "nets nested deeper than %d (does %s make itself?)", MAX_INSTANTIATION_DEPTH,
                      net->name);
    inst *self = cc_inst_new(c, I_NET, net->name, file, line, col);
    if (!self) return -1;
    self->file = file;
    self->line = line;
    self->col = col;

    /* arguments to parameters */
    int np = net->n;
    if (nargs > np) {
        char list[256] = "";
        for (int k = 0; k < np; k++) {
            size_t len = strlen(list);
            snprintf(list + len, sizeof list - len, "%s%s", k ? ", " : "", net->items[k]->name);
        }
        return cc_err(c, file, line, col, "%s takes %d argument%s (%s) but was given %d", net->name, np,
                      np == 1 ? "" : "s", list, nargs);
    }
    for (int k = 0; k < nkw; k++) {
        int found = 0;
        for (int p = 0; p < np; p++) found |= strcmp(net->items[p]->name, kwn[k]) == 0;
        if (!found) {
            const char *best = NULL;
            int bestd = 99;
            for (int p = 0; p < np; p++) cc_consider(kwn[k], net->items[p]->name, &best, &bestd);
            const char *whose, *ours = cc_foreign(kwn[k], &whose);
            for (int p = 0; ours && p < np; p++)
                if (!strcmp(net->items[p]->name, ours))
                    return cc_err(c, file, line, col, "%s has no parameter '%s' (did you mean '%s'? %s %s is %s in "
                                  "cflux)", net->name, kwn[k], ours, whose, kwn[k], ours);
            if (best && bestd <= 2)
                return cc_err(c, file, line, col, "%s has no parameter '%s' (did you mean '%s'?)", net->name, kwn[k],
                              best);
            return cc_err(c, file, line, col, "%s has no parameter '%s'", net->name, kwn[k]);
        }
    }
    /* every parameter given once, or with a default: checked at the call, outside */
    for (int p = 0; p < np; p++) {
        const ast *par = net->items[p];
        int k = -1;
        for (int q = 0; q < nkw; q++)
            if (strcmp(kwn[q], par->name) == 0) k = q;
        if (p < nargs && k >= 0)
            return cc_err(c, file, line, col, "%s: the argument '%s' is given twice", net->name, par->name);
        if (p >= nargs && k < 0 && par->kind != AST_KWARG) {
            /* one short: did the caller expect a Chain to fill in the input size? */
            int required, short_one = cc_given_required(net, nargs, kwn, nkw, &required) == required - 1;
            int sizes = 1;
            for (int q = 0; q < nargs; q++) sizes &= args[q].kind == V_NUM;
            if (short_one && !in_chain && cc_first_is_in(net) && !cc_names_in(kwn, nkw))
                return cc_err(c, file, line, col,
                              "%s is missing the argument '%s' (leaving out 'in' works only inside a Chain, which "
                              "knows the input size)", net->name, par->name);
            if (short_one && in_chain && !cc_first_is_in(net) && sizes && nargs > 0)
                return cc_err(c, file, line, col,
                              "%s is missing the argument '%s' (a Chain fills in the input size only for a net whose "
                              "first parameter is named 'in'; %s's first parameter is '%s')",
                              net->name, par->name, net->name, net->items[0]->name);
            char sig[256] = "";   /* the net's parameters, as its definition lists them */
            for (int q = 0; q < np; q++) {
                size_t len = strlen(sig);
                snprintf(sig + len, sizeof sig - len, "%s%s%s", q ? ", " : "", net->items[q]->name,
                         net->items[q]->kind == AST_KWARG ? " = ..." : "");
            }
            return cc_err(c, file, line, col, "%s is missing the argument '%s': %s(%s)", net->name, par->name,
                          net->name, sig);
        }
    }
    if (cc_enter(c, net->name, file, line, col)) return -1;
    c->depth++;
    int rc = -1;
    inst *outer = c->building;
    int was_forward = c->in_forward;
    c->building = self;
    c->in_forward = 0;
    for (int p = 0; p < np; p++) {
        const ast *par = net->items[p];
        value v;
        int k = -1;
        for (int q = 0; q < nkw; q++)
            if (strcmp(kwn[q], par->name) == 0) k = q;
        if (p < nargs) v = args[p];
        else if (k >= 0) v = kwv[k];
        else if (cc_eval(c, body, par->a, &v)) goto done;   /* the default */
        if (v.kind == V_MODEL) cc_place(v.model, self, par->name);
        if (cc_bind(c, body, par->name, v, par)) goto done;
    }
    /* the body's bindings, then its forward function */
    const ast *blk = net->a, *decl = NULL, *seq = NULL;
    for (int i = 0; i < blk->n - 1; i++) {
        const ast *s = blk->items[i];
        value v;
        if (s->kind == AST_CALL && !strcmp(s->a->name, "sequence")) {
            if (seq) {
                ERR(c, body, s, "%s declares sequence(...) twice (first at %d:%d)", net->name, seq->line, seq->col);
                goto done;
            }
            seq = s;
            continue;
        }
        if (s->kind == AST_CALL) {   /* torch(...), the parser made sure */
            if (decl) {
                ERR(c, body, s, "%s declares torch(...) twice (first at %d:%d)", net->name, decl->line, decl->col);
                goto done;
            }
            decl = s;
            continue;
        }
        if (s->kind != AST_ASSIGN) {
            ERR(c, body, s, "a net body holds bindings (name = ...) and ends with its forward function");
            goto done;
        }
        if (cc_local_index(body, s->name) >= 0) {
            int j = cc_local_index(body, s->name);
            const ast *w = body->where[j];
            ERR(c, body, s, "'%s' is bound twice in %s (first at %d:%d)", s->name, net->name, w->line, w->col);
            goto done;
        }
        if (cc_eval(c, body, s->a, &v)) goto done;
        if (v.kind == V_PARAM && !v.param->local && v.param->owner == self) v.param->local = s->name;
        if (v.kind == V_STATE && !v.state->local && v.state->owner == self) v.state->local = s->name;
        if (v.kind == V_MODEL) cc_place(v.model, self, s->name);
        if (cc_bind(c, body, s->name, v, s)) goto done;
    }
    if (torch_decl(c, body, self, decl) || sequence_decl(c, body, self, seq)) goto done;
    self->lambda = blk->items[blk->n - 1];
    self->env = body;
    *out = model_value(self);
    rc = 0;
done:
    c->building = outer;
    c->in_forward = was_forward;
    c->depth--;
    cc_leave(c);
    return rc;
}

/* The size a Chain passes to a template's `in`: the channels of an image
 * (B, C, H, W), else the last dimension. */
int cc_features_from(cf_shape s, int first)   /* a sample's dims start at d[first] */
{
    if (s.rank - first == 3) return s.d[first];   /* an image (C, H, W) */
    if (s.rank - first == 0) return 1;
    return s.rank ? s.d[s.rank - 1] : 1;
}

static int feature_size(const cf_node *x)
{
    return x->batched ? cc_features_from(x->shape, 1) : x->shape.rank ? x->shape.d[x->shape.rank - 1] : 1;
}

/* Chain item pos, a template waiting for its input size, made for values of
 * `features` (once: later calls reuse it). */
int cc_make_partial(cc *c, inst *chain, int pos, int features, value *out)
{
    partial *p = chain->items[pos].partial;
    value args[MAX_ARGS + 1];
    args[0] = num_value(features);
    for (int k = 0; k < p->nargs; k++) args[k + 1] = p->args[k];
    int was = c->in_forward;
    c->in_forward = 0;
    int rc = cc_instantiate(c, &p->tmpl, args, p->nargs + 1, p->kwnames, p->kwvals, p->nkw, p->file, p->line, p->col, 1,
                            out);
    c->in_forward = was;
    if (rc) return -1;
    char *local = cf_arena_alloc(&c->arena, 12);
    if (!local) return cf_oom(12);
    snprintf(local, 12, "%d", pos);
    cc_place(out->model, chain, local);
    chain->items[pos] = *out;
    return 0;
}

int cc_apply(cc *c, const value *f, value *x, int nx, const char *file, const ast *where, value *out, inst *chain,
             int pos)
{
    if (f->kind == V_MODEL) return cc_call_model(c, f->model, x, nx, file, where->line, where->col, out);
    if (f->kind == V_BUILTIN) {
        env tmp = {.file = file};
        struct builtin b = cc_builtin_at(f->fn);
        if (nx != 1) return cc_err(c, file, where->line, where->col, "%s takes one value", b.name);
        if (b.op == CF_OP_INPUT)   /* no op of its own (identity): its function */
            return cc_call_builtin(c, &tmp, where, f->fn, x, 1, NULL, NULL, 0, out);
        return cc_op_call(c, &tmp, where, b.op, x, 1, NULL, NULL, 0, out);
    }
    /* a partial: give it the size of what flows in, once */
    partial *p = f->partial;
    if (nx != 1 || x[0].kind != V_TENSOR)
        return cc_err(c, file, where->line, where->col, "%s(...) in a Chain needs one value flowing in",
                      p->tmpl.net->name);
    if (cc_is_unresolved(c, x[0].node))
        return cc_err(c, file, where->line, where->col,
                      "cannot tell the input size for %s: begin the Chain with Input(...)", p->tmpl.net->name);
    value made_model;
    if (cc_make_partial(c, chain, pos, feature_size(x[0].node), &made_model)) return -1;
    return cc_call_model(c, made_model.model, x, nx, file, where->line, where->col, out);
}

int cc_call_model(cc *c, inst *mdl, value *args, int nargs, const char *file, int line, int col, value *out)
{
    for (int k = 0; k < nargs; k++)
        if (args[k].kind != V_TENSOR && args[k].kind != V_TUPLE)
            return cc_err(c, file, line, col, "%s is applied to values, not to %s", mdl->tname, cc_kind_name(&args[k]));
    if (cc_enter(c, mdl->tname, file, line, col)) return -1;
    int rc = -1, was = c->in_forward;
    c->in_forward = 1;
    switch (mdl->kind) {
    case I_NET:
    case I_LAMBDA: {
        const ast *lam = mdl->lambda;
        env *en = cc_env_new(c, mdl->env, NULL);
        if (!en) break;
        if (nargs == 1 && args[0].kind == V_TUPLE && lam->n > 1) {   /* a tuple flowing into (x, h) -> ... */
            nargs = args[0].n;
            args = args[0].items;
        }
        if (nargs != lam->n) {
            cc_err(c, en->file, lam->line, lam->col, "the forward function of %s takes %d input%s but was given %d",
                   mdl->tname, lam->n, lam->n == 1 ? "" : "s", nargs);
            break;
        }
        int ok = 1;
        for (int k = 0; k < lam->n && ok; k++) ok = cc_bind(c, en, lam->items[k]->name, args[k], lam->items[k]) == 0;
        if (ok) rc = cc_eval(c, en, lam->a, out);
        break;
    }
    case I_CHAIN: {
        value cur[MAX_ARGS];
        int ncur = nargs;
        memcpy(cur, args, (size_t)nargs * sizeof *cur);
        rc = 0;
        for (int k = 0; k < mdl->n && rc == 0; k++) {
            value next;
            /* the element's own file: where the Chain was written */
            const ast *where = mdl->item_ast[k];
            rc = cc_apply(c, &mdl->items[k], cur, ncur, mdl->env ? mdl->env->file : file, where, &next, mdl, k);
            if (rc) break;
            if (next.kind == V_TUPLE) {
                ncur = next.n < MAX_ARGS ? next.n : MAX_ARGS;
                memcpy(cur, next.items, (size_t)ncur * sizeof *cur);
            } else {
                ncur = 1;
                cur[0] = next;
            }
            *out = next;
        }
        break;
    }
    case I_UNROLL: rc = cc_call_unroll(c, mdl, args, nargs, file, line, col, out); break;
    case I_INPUT: {
        if (nargs != 1 || args[0].kind != V_TENSOR) {
            cc_err(c, file, line, col, "Input takes one value");
            break;
        }
        cf_node *x = args[0].node;
        if (cc_is_unresolved(c, x)) {
            cc_resolve(c, x, mdl->shape);
            *out = args[0];
            rc = 0;
            break;
        }
        size_t want = cf_shape_count(mdl->shape), have = cf_shape_count_b(x->shape, 1);
        if (!x->batched || want != have) {
            char s1[96], s2[96];
            cf_shape_str(mdl->shape, s1, sizeof s1);
            cc_err(c, file, line, col, "Input%s does not fit the value flowing in: %s", s1,
                   cf_shape_str(x->shape, s2, sizeof s2));
            break;
        }
        cf_node *n = cf_reshape_at(c->m, x, mdl->shape, file, line, col);
        env tmp = {.file = file};
        ast where = {.line = line, .col = col};
        if (cc_made(c, &tmp, &where, n)) break;
        *out = tensor_value(n);
        rc = 0;
        break;
    }
    }
    c->in_forward = was;
    cc_leave(c);
    return rc;
}
