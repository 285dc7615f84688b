/* eval.c - evaluating expressions: names, arithmetic on numbers and values, blocks,
 * and calls (their arguments, with the nets in a Chain that wait for their input
 * size, and what is called: a built-in, a net, a model). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/compile_int.h"

/* ---- evaluation ---- */

/* v, the value of e, as a condition: true (1) or false (0), known when the model is
 * compiled. A graph has no branches, so a condition that depends on the data (a
 * tensor) cannot choose one. */
static int known_bool(cc *c, env *en, const ast *e, const value *v, const char *what, int *out)
{
    if (v->kind == V_TENSOR)
        return ERR(c, en, e, "%s must be known when the model is compiled (numbers, true or false: a net's "
                   "arguments and arithmetic on them), but it is a value that depends on the data (the graph is chosen "
                   "before any data flows)", what);
    if (v->kind != V_NUM) return ERR(c, en, e, "%s must be true or false, not %s", what, cc_kind_name(v));
    if (v->num != 0 && v->num != 1)
        return ERR(c, en, e, "%s must be true or false (a comparison such as stride != 1), but it is %g", what,
                   v->num);
    *out = v->num == 1;
    return 0;
}

/* a op b for a comparison, on numbers known when the model is compiled. */
static int compare_values(cc *c, env *en, const ast *e, const char *op, value a, value b, value *out)
{
    if (a.kind == V_TENSOR || b.kind == V_TENSOR)
        return ERR(c, en, e, "'%s' compares numbers known when the model is compiled, but its %s side is a value "
                   "that depends on the data (the graph is chosen before any data flows)", op,
                   a.kind == V_TENSOR ? "left" : "right");
    if (a.kind != V_NUM || b.kind != V_NUM)
        return ERR(c, en, e, "'%s' compares numbers, not %s and %s", op, cc_kind_name(&a), cc_kind_name(&b));
    double x = a.num, y = b.num;
    int r;
    switch (e->op) {
    case OP_EQ: r = x == y; break;
    case OP_NE: r = x != y; break;
    case OP_LT: r = x < y; break;
    case OP_LE: r = x <= y; break;
    case OP_GT: r = x > y; break;
    default: r = x >= y;
    }
    *out = num_value(r);
    return 0;
}

/* a op b, with a and b evaluated. */
static int binop_values(cc *c, env *en, const ast *e, value a, value b, value *out)
{
    static const char *sym[] = {"+", "-", "*", ".*", "./", ".+", ".-", "/", "==", "!=", "<", "<=", ">", ">="};
    const char *op = sym[e->op];
    if (e->op >= OP_EQ) return compare_values(c, en, e, op, a, b, out);
    if (a.kind == V_NUM && b.kind == V_NUM) {
        double x = a.num, y = b.num;
        switch (e->op) {
        case OP_ADD: case OP_EADD: *out = num_value(x + y); break;
        case OP_SUB: case OP_ESUB: *out = num_value(x - y); break;
        case OP_MATMUL: case OP_EMUL: *out = num_value(x * y); break;
        default:
            if (y == 0) return ERR(c, en, e, "division by zero");
            *out = num_value(x / y);
        }
        return 0;
    }
    if ((a.kind != V_NUM && a.kind != V_TENSOR) || (b.kind != V_NUM && b.kind != V_TENSOR))
        return ERR(c, en, e, "'%s' needs numbers or values, but got %s and %s%s", op, cc_kind_name(&a),
                   cc_kind_name(&b),
                   (a.kind == V_MODEL || b.kind == V_MODEL) ? " (call a model on a value: m(x))" : "");
    cf_opcode code;
    switch (e->op) {
    case OP_ADD: case OP_EADD: code = CF_OP_ADD; break;
    case OP_SUB: case OP_ESUB: code = CF_OP_SUB; break;
    case OP_EMUL: code = CF_OP_MUL; break;
    case OP_EDIV: code = CF_OP_DIV; break;
    case OP_MATMUL: code = (a.kind == V_NUM || b.kind == V_NUM) ? CF_OP_MUL : CF_OP_MATMUL; break;
    default:
        if (b.kind != V_NUM) return ERR(c, en, e, "'/' divides by a number; for values use './'");
        code = CF_OP_DIV;
    }
    cf_node *na = cc_as_node(c, en, e, &a), *nb = na ? cc_as_node(c, en, e, &b) : NULL;
    if (!nb) return -1;
    if (cc_resolve_pair(c, en, e, code, na, nb)) return -1;
    cf_node *n = cf_binary_at(c->m, code, na, nb, en->file, e->line, e->col);
    if (cc_made(c, en, e, n)) return -1;
    *out = tensor_value(n);
    return 0;
}

/* A chain a + b - c ... is a left-deep tree as long as the text: walk its spine in a
 * loop, not by recursion, so that its length cannot overflow the stack. */
static int eval_binop(cc *c, env *en, const ast *e, value *out)
{
    int n = 0;
    for (const ast *t = e; t->kind == AST_BINOP; t = t->a) n++;
    const ast **spine = malloc((size_t)n * sizeof *spine);
    if (!spine) return cf_oom((size_t)n * sizeof *spine);
    int k = n;
    for (const ast *t = e; t->kind == AST_BINOP; t = t->a) spine[--k] = t;
    const ast *leftmost = e;
    while (leftmost->kind == AST_BINOP) leftmost = leftmost->a;
    value acc;
    int rc = cc_eval(c, en, leftmost, &acc);
    for (int i = 0; i < n && rc == 0; i++) {
        const ast *s = spine[i];
        value b;
        if (s->op == OP_AND || s->op == OP_OR) {   /* the right side only when the left does not decide */
            const char *op = s->op == OP_AND ? "&&" : "||";
            char what[48];
            int l = 0, r = 0;
            snprintf(what, sizeof what, "the left side of '%s'", op);
            rc = known_bool(c, en, s->a, &acc, what, &l);
            if (rc || l == (s->op == OP_OR)) continue;
            snprintf(what, sizeof what, "the right side of '%s'", op);
            rc = cc_eval(c, en, s->b, &b);
            if (rc == 0) rc = known_bool(c, en, s->b, &b, what, &r);
            acc = num_value(r);
            continue;
        }
        rc = cc_eval(c, en, s->b, &b);
        if (rc == 0) rc = binop_values(c, en, s, acc, b, &acc);
    }
    free(spine);
    *out = acc;
    return rc;
}

static int eval_block(cc *c, env *en, const ast *e, value *out)
{
    env *inner = cc_env_new(c, en, NULL);
    if (!inner) return cf_oom(sizeof *inner);
    for (int i = 0; i < e->n; i++) {
        const ast *s = e->items[i];
        if (s->kind == AST_ASSIGN) {
            value v;
            const value *old = cc_lookup(inner, s->name);
            if (cc_eval(c, inner, s->a, &v)) return -1;
            if (old && old->kind == V_STATE && c->in_forward) {
                if (cc_state_assign(c, inner, s, old->state, &v)) return -1;
            } else if (cc_bind(c, inner, s->name, v, s)) {
                return -1;
            }
            if (i == e->n - 1) *out = v;
        } else if (cc_eval(c, inner, s, out)) {
            return -1;
        }
    }
    return 0;
}

/* The arguments of a call to a net that reach its parameters without a default: npos
 * positional ones and the keywords that name such a parameter; *required is how many
 * such parameters the net has. A Chain fills in the input size when the net's first
 * parameter is named `in`, no keyword names `in` and the call gives one fewer. */
int cc_given_required(const ast *net, int npos, const char *const *kwn, int nkw, int *required)
{
    int given = npos;
    *required = 0;
    for (int p = 0; p < net->n; p++) {
        if (net->items[p]->kind != AST_NAME) continue;
        ++*required;
        for (int q = 0; q < nkw; q++)
            if (strcmp(kwn[q], net->items[p]->name) == 0) given++;
    }
    return given;
}

int cc_names_in(const char *const *kwn, int nkw)
{
    for (int q = 0; q < nkw; q++)
        if (strcmp(kwn[q], "in") == 0) return 1;
    return 0;
}

int cc_first_is_in(const ast *net) { return net->n > 0 && strcmp(net->items[0]->name, "in") == 0; }

/* Evaluate call arguments: positional into args, keyword into kwn/kwv. */
int cc_eval_args(cc *c, env *en, const ast *e, value *args, int *nargs, const char **kwn, value *kwv, int *nkw,
                 int allow_partial)
{
    *nargs = *nkw = 0;
    if (e->n > MAX_ARGS) return ERR(c, en, e, "more than %d arguments", MAX_ARGS);
    for (int i = 0; i < e->n; i++) {
        const ast *a = e->items[i];
        if (a->kind == AST_KWARG) {
            for (int k = 0; k < *nkw; k++)
                if (strcmp(kwn[k], a->name) == 0) return ERR(c, en, a, "the argument '%s' is given twice", a->name);
            kwn[*nkw] = a->name;
            if (cc_eval(c, en, a->a, &kwv[(*nkw)++])) return -1;
            continue;
        }
        if (*nkw) return ERR(c, en, a, "a positional argument after keyword arguments");
        if (a->kind == AST_BINOP && a->op == OP_EQ && a->a->kind == AST_NAME && !cc_name_known(en, a->a->name))
            return ERR(c, en, a->a, "unknown name '%s' ('==' compares; a keyword argument is %s = ...)", a->a->name,
                       a->a->name);
        const ast *x = a;
        value *v = &args[(*nargs)++];
        /* Chain(Affine(128)): a template one argument short of its `in` waits for it */
        if (allow_partial && x->kind == AST_CALL && x->n <= MAX_ARGS) {
            value callee;
            if (cc_eval(c, en, x->a, &callee)) return -1;
            if (callee.kind == V_TEMPLATE && callee.net->n > 0) {
                const char *names[MAX_ARGS];
                int npos = 0, nnamed = 0, required;
                for (int k = 0; k < x->n; k++) {
                    if (x->items[k]->kind == AST_KWARG) names[nnamed++] = x->items[k]->name;
                    else npos++;
                }
                int given = cc_given_required(callee.net, npos, names, nnamed, &required);
                if (cc_first_is_in(callee.net) && callee.net->items[0]->kind == AST_NAME &&
                    !cc_names_in(names, nnamed) && given == required - 1) {
                    if (cc_count_model(c, en->file, x->line, x->col)) return -1;
                    partial *p = cf_arena_alloc(&c->arena, sizeof *p);
                    if (!p) return cf_oom(sizeof *p);
                    p->args = cf_arena_alloc(&c->arena, (size_t)x->n * sizeof *p->args);
                    p->kwvals = cf_arena_alloc(&c->arena, (size_t)x->n * sizeof *p->kwvals);
                    p->kwnames = cf_arena_alloc(&c->arena, (size_t)x->n * sizeof *p->kwnames);
                    if (!p->args || !p->kwvals || !p->kwnames) return -1;
                    p->tmpl = callee;
                    if (cc_eval_args(c, en, x, p->args, &p->nargs, p->kwnames, p->kwvals, &p->nkw, 0)) return -1;
                    p->file = en->file;
                    p->line = x->line;
                    p->col = x->col;
                    *v = (value){.kind = V_PARTIAL, .partial = p};
                    continue;
                }
            }
        }
        const ast *outer = c->chain_elem;
        if (allow_partial) c->chain_elem = x;   /* for the hint when x is a net call short of an argument */
        int rc = cc_eval(c, en, x, v);
        c->chain_elem = outer;
        if (rc) return -1;
    }
    return 0;
}

static int eval_call_with(cc *c, env *en, const ast *e, const value *callee, value *args, value *kwv,
                          const char **kwn, value *out);

static int eval_call(cc *c, env *en, const ast *e, value *out)
{
    value callee;
    if (cc_eval(c, en, e->a, &callee)) return -1;
    /* on the heap, not the stack (calls nest) nor the arena (calls repeat): freed here */
    value *args = malloc(2 * MAX_ARGS * sizeof *args), *kwv = args + MAX_ARGS;
    const char **kwn = malloc(MAX_ARGS * sizeof *kwn);
    int rc = args && kwn ? eval_call_with(c, en, e, &callee, args, kwv, kwn, out) : cf_oom(2 * MAX_ARGS * sizeof *args);
    free(args);
    free(kwn);
    return rc;
}

static int eval_call_with(cc *c, env *en, const ast *e, const value *callee_v, value *args, value *kwv,
                          const char **kwn, value *out)
{
    value callee = *callee_v;
    int nargs, nkw;
    int chain = callee.kind == V_BUILTIN && cc_builtin_at(callee.fn).id == B_CHAIN;
    if (callee.kind == V_BUILTIN && cc_builtin_at(callee.fn).id == B_REPEAT) return cc_repeat_call(c, en, e, out);
    if (cc_eval_args(c, en, e, args, &nargs, kwn, kwv, &nkw, chain)) return -1;
    switch (callee.kind) {
    case V_BUILTIN: return cc_call_builtin(c, en, e, callee.fn, args, nargs, kwn, kwv, nkw, out);
    case V_TEMPLATE:
        if (c->in_forward)
            return ERR(c, en, e, "%s(...) makes new parameters: make it in the net body (name = %s(...)), "
                       "not in the forward function", callee.net->name, callee.net->name);
        return cc_instantiate(c, &callee, args, nargs, kwn, kwv, nkw, en->file, e->line, e->col, e == c->chain_elem,
                              out);
    case V_MODEL:
        if (!c->in_forward)
            return ERR(c, en, e, "a model is applied to values inside a forward function (x -> m(x))");
        if (nkw) return ERR(c, en, e, "a model takes no keyword arguments");
        return cc_call_model(c, callee.model, args, nargs, en->file, e->line, e->col, out);
    default:
        return ERR(c, en, e, "%s cannot be called", cc_kind_name(&callee));
    }
}

#define MAX_EVAL_DEPTH 1000

static int eval_at(cc *c, env *en, const ast *e, value *out);

int cc_eval(cc *c, env *en, const ast *e, value *out)
{
    if (c->eval_depth >= MAX_EVAL_DEPTH)
        return ERR(c, en, e, "expressions nested deeper than %d", MAX_EVAL_DEPTH);
    c->eval_depth++;
    int rc = eval_at(c, en, e, out);
    c->eval_depth--;
    return rc;
}

static int eval_at(cc *c, env *en, const ast *e, value *out)
{
    *out = (value){.kind = V_NONE};
    switch (e->kind) {
    case AST_NUM: *out = num_value(e->num); return 0;
    case AST_NAME: return cc_eval_name(c, en, e, out);
    case AST_BINOP: return eval_binop(c, en, e, out);
    case AST_NEG: {
        value x;
        if (cc_eval(c, en, e->a, &x)) return -1;
        if (x.kind == V_NUM) {
            *out = num_value(-x.num);
            return 0;
        }
        return cc_unary_node(c, en, e, CF_OP_NEG, &x, 0, out);
    }
    case AST_NOT: {
        value x;
        int b;
        if (cc_eval(c, en, e->a, &x) || known_bool(c, en, e->a, &x, "the operand of '!'", &b)) return -1;
        *out = num_value(!b);
        return 0;
    }
    case AST_COND: {   /* only the branch chosen is evaluated: only its parameters exist */
        value x;
        int b;
        if (cc_eval(c, en, e->a, &x) || known_bool(c, en, e->a, &x, "the condition of 'a ? b : c'", &b)) return -1;
        return cc_eval(c, en, b ? e->b : e->c, out);
    }
    case AST_TUPLE: {
        value *items = cf_arena_alloc(&c->arena, (size_t)e->n * sizeof *items);
        if (!items) return cf_oom((size_t)e->n * sizeof *items);
        for (int i = 0; i < e->n; i++)
            if (cc_eval(c, en, e->items[i], &items[i])) return -1;
        *out = (value){.kind = V_TUPLE, .items = items, .n = e->n};
        return 0;
    }
    case AST_LAMBDA: {
        inst *i = cc_inst_new(c, I_LAMBDA, "lambda", en->file, e->line, e->col);
        if (!i) return -1;
        i->lambda = e;
        i->env = en;
        *out = model_value(i);
        return 0;
    }
    case AST_BLOCK: return eval_block(c, en, e, out);
    case AST_CALL: return eval_call(c, en, e, out);
    case AST_PREV: return cc_state_prev(c, en, e, out);
    case AST_ASSIGN: return ERR(c, en, e, "an assignment is not a value");
    default: return ERR(c, en, e, "this is not an expression");
    }
}
