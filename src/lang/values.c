/* values.c - values at compile time, the models made (counted against the limit and
 * named by where they are first put), and the checks around each graph node made:
 * its shape, the model's size, inputs whose shape is not known yet. */
#include <stdio.h>
#include <string.h>

#include "lang/compile_int.h"

/* ---- values ---- */

const char *cc_kind_name(const value *v)
{
    switch (v->kind) {
    case V_NUM: return "a number";
    case V_TENSOR: return "a value";
    case V_TUPLE: return "a tuple";
    case V_TEMPLATE: return "a net";
    case V_MODEL: return "a model";
    case V_BUILTIN: return "a built-in function";
    case V_INIT: return "an initialiser";
    case V_PARAM: return v->param->state ? "a state (stat)" : "a parameter";
    case V_PARTIAL: return "a net waiting for its input size (only a Chain can give it)";
    case V_STATE: return "a state";
    default: return "nothing";
    }
}

/* One more model made, at file:line:col; 0, or -1 past MAX_MODELS. */
int cc_count_model(cc *c, const char *file, int line, int col)
{
    if (++c->models > MAX_MODELS)
        return cc_err(c, file, line, col, "the model makes more than %d nets, Chains and functions (repeats "
                      "inside repeats, and nets that make several of another, multiply)", MAX_MODELS);
    return 0;
}

inst *cc_inst_new(cc *c, ikind kind, const char *tname, const char *file, int line, int col)
{
    if (cc_count_model(c, file, line, col)) return NULL;
    inst *i = cf_arena_alloc(&c->arena, sizeof *i);
    if (!i) {
        cf_oom(sizeof *i);
        return NULL;
    }
    i->kind = kind;
    i->tname = tname;
    return i;
}

/* Name a model by where it is first put: a binding in a net body, a net's argument,
 * a position in a Chain. Later places do not rename it. */
void cc_place(inst *i, inst *parent, const char *local)
{
    if (!i || i->placed || i == parent) return;
    i->placed = 1;
    i->parent = parent;
    i->local = local;
}

/* A number that must be a positive integer dimension. */
int cc_dim_of(cc *c, env *en, const ast *e, const value *v, const char *what, int *out)
{
    if (v->kind != V_NUM)
        return ERR(c, en, e, "%s must be a number, not %s", what, cc_kind_name(v));
    if (!(v->num >= 1 && v->num <= 1e9) || v->num != (double)(long)v->num) {
        const value *a, *b;   /* in / heads: say which number does not divide which */
        if (e->kind == AST_BINOP && e->op == OP_DIV && e->a->kind == AST_NAME && e->b->kind == AST_NAME &&
            (a = cc_lookup(en, e->a->name)) && (b = cc_lookup(en, e->b->name)) && a->kind == V_NUM && b->kind == V_NUM)
            return ERR(c, en, e, "%s must be a positive whole number, but %s / %s is %g: %s (%g) does not divide %s "
                       "(%g)", what, e->a->name, e->b->name, v->num, e->b->name, b->num, e->a->name, a->num);
        return ERR(c, en, e, "%s must be a positive whole number, not %g", what, v->num);
    }
    *out = (int)v->num;
    return 0;
}

/* ---- graph building ---- */

static int count_nodes(cc *c, const env *en, const ast *e)
{
    if (c->m->nnodes > MAX_NODES)
        return ERR(c, en, e, "the model has more than %d operations", MAX_NODES);
    return 0;
}

/* Check a freshly made node: NULL from the builder, or a shape that does not fit. */
int cc_made(cc *c, const env *en, const ast *e, cf_node *n)
{
    if (!n) {   /* the builder's message, "error: MSG\n  at FILE:L:C", with our trace */
        char msg[1024];
        const char *m = cf_last_error();
        if (strncmp(m, "error: ", 7) == 0) m += 7;
        snprintf(msg, sizeof msg, "%.*s", (int)strcspn(m, "\n"), m);
        return ERR(c, en, e, "%s", msg);
    }
    if (cf_node_infer(n)) {
        c->shape_failed = 1;
        return -1;
    }
    return count_nodes(c, en, e);
}

int cc_is_unresolved(cc *c, const cf_node *n)
{
    for (int i = 0; i < c->nunresolved; i++)
        if (c->unresolved[i] == n) return 1;
    return 0;
}

/* Give an input of unknown shape the per-sample shape s. */
void cc_resolve(cc *c, cf_node *n, cf_shape s)
{
    n->shape.rank = s.rank + 1;
    n->shape.d[0] = CF_BATCH;
    for (int i = 0; i < s.rank; i++) n->shape.d[i + 1] = s.d[i];
    n->batched = 1;
    for (int i = 0; i < c->nunresolved; i++)
        if (c->unresolved[i] == n) c->unresolved[i] = c->unresolved[--c->nunresolved];
}

int cc_unresolved_error(cc *c, const env *en, const ast *e, const cf_node *n, const char *what)
{
    return ERR(c, en, e, "cannot tell the shape of the input '%s' from %s: begin the model with Input(...)",
               n->name, what);
}

/* Before a two-input op: an input of unknown shape takes its shape from the other
 * operand (x * W: (B, rows of W); x + b: b's per-sample shape). */
int cc_resolve_pair(cc *c, const env *en, const ast *e, cf_opcode op, cf_node *a, cf_node *b)
{
    int ua = cc_is_unresolved(c, a), ub = cc_is_unresolved(c, b);
    if (!ua && !ub) return 0;
    if (ua && ub) return cc_unresolved_error(c, en, e, a, "an operation on two inputs");
    cf_node *u = ua ? a : b, *k = ua ? b : a;
    cf_shape s = k->shape;
    if (op == CF_OP_MATMUL) {
        if (!ua || k->shape.rank != 2 || k->batched) return cc_unresolved_error(c, en, e, u, "this product");
        cc_resolve(c, u, (cf_shape){1, {k->shape.d[0]}});
        return 0;
    }
    if (k->batched) {   /* drop the batch dimension */
        s.rank--;
        memmove(s.d, s.d + 1, (size_t)s.rank * sizeof s.d[0]);
    } else if (s.rank >= 1) {
        s = (cf_shape){1, {s.d[s.rank - 1]}};
    } else {
        return cc_unresolved_error(c, en, e, u, "an operation with a number");
    }
    cc_resolve(c, u, s);
    return 0;
}

/* A number as a graph constant. */
cf_node *cc_as_node(cc *c, env *en, const ast *e, const value *v)
{
    if (v->kind == V_TENSOR) return v->node;
    cf_node *n = cf_scalar_at(c->m, (float)v->num, en->file, e->line, e->col);
    return cc_made(c, en, e, n) ? NULL : n;
}

int cc_unary_node(cc *c, env *en, const ast *e, cf_opcode op, const value *x, float a, value *out)
{
    if (x->kind != V_TENSOR)
        return ERR(c, en, e, "%s needs a value, not %s", cf_ops[op]->what, cc_kind_name(x));
    if (cc_is_unresolved(c, x->node)) return cc_unresolved_error(c, en, e, x->node, cf_ops[op]->name);
    cf_node *n = cf_unary_at(c->m, op, x->node, a, en->file, e->line, e->col);
    if (cc_made(c, en, e, n)) return -1;
    *out = tensor_value(n);
    return 0;
}
