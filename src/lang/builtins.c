/* builtins.c - the notation's built-in functions: parameters, states and their
 * initialisers, Input, Chain, unroll and repeat, the functions that make ops of
 * their own (conv2d, batchnorm, chunk, ...), and the ops that the notation calls by
 * name, with the numbers their rows declare. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/compile_int.h"

/* ---- built-ins ---- */

const struct builtin cc_builtins[] = {
    {"σ", B_OP, CF_OP_SIGMOID, 1},
    {"reshape", B_RESHAPE, CF_OP_RESHAPE, 0}, {"hcat", B_HCAT, CF_OP_CONCAT, 0},
    {"param", B_PARAM, 0, 0},                 {"state", B_STATE, 0, 0},
    {"stat", B_STAT, 0, 0},                   {"chunk", B_CHUNK, 0, 0},
    {"normal", B_NORMAL, 0, 0},               {"uniform", B_UNIFORM, 0, 0},
    {"Input", B_INPUT, 0, 0},                 {"Chain", B_CHAIN, 0, 0},
    {"unroll", B_UNROLL, 0, 0},               {"conv2d", B_CONV2D, 0, 0},
    {"maxpool", B_MAXPOOL, 0, 0},             {"avgpool", B_AVGPOOL, 0, 0},
    {"dropout", B_DROPOUT, 0, 0},             {"batchnorm", B_BATCHNORM, 0, 0},
    {"embedding", B_EMBEDDING, CF_OP_EMBEDDING, 0}, {"layernorm", B_LAYERNORM, CF_OP_LAYERNORM, 0},
    {"gelu", B_GELU, CF_OP_GELU, 1},          /* here for its keyword exact; bare, as its op */
    {"softmax", B_SOFTMAX, CF_OP_SOFTMAX, 1}, /* here for its keyword causal; bare, as its op */
    {"transpose", B_TRANSPOSE, CF_OP_TRANSPOSE, 0}, {"sqrt", B_SQRT, 0, 0},
    {"repeat", B_REPEAT, 0, 0},               {"positions", B_POSITIONS, 0, 0},
};

#define NBUILTINS ((int)(sizeof cc_builtins / sizeof cc_builtins[0]))
const int cc_nbuiltins = NBUILTINS;

/* A built-in function by number: those of the table above, then from NBUILTINS on
 * the ops that the notation calls by name (NBUILTINS + opcode). */
struct builtin cc_builtin_at(int fn)
{
    if (fn < NBUILTINS) return cc_builtins[fn];
    return (struct builtin){cf_ops[fn - NBUILTINS]->name, B_OP, (cf_opcode)(fn - NBUILTINS), 1};
}

/* The number of the built-in function `name`, or -1. */
int cc_builtin_find(const char *name)
{
    for (int i = 0; i < NBUILTINS; i++)
        if (strcmp(cc_builtins[i].name, name) == 0) return i;
    for (int op = 0; op < CF_OP_COUNT_; op++)
        if (cf_ops[op] && (cf_ops[op]->flags & CF_CALL) && strcmp(cf_ops[op]->name, name) == 0) return NBUILTINS + op;
    return -1;
}

/* Dimensions d... from positional numbers. */
static int dims_of(cc *c, env *en, const ast *e, value *args, int nargs, int from, cf_shape *s, const char *what,
                   int max)
{
    if (nargs - from > max)
        return ERR(c, en, e, "%s takes at most %d dimensions%s", what, max,
                   max < CF_MAX_DIMS ? " (the batch is the other one)" : "");
    s->rank = nargs - from;
    for (int i = from; i < nargs; i++) {
        char w[64];
        snprintf(w, sizeof w, "dimension %d of %s", i - from + 1, what);
        if (cc_dim_of(c, en, e->items[i], &args[i], w, &s->d[i - from])) return -1;
    }
    return 0;
}

static int no_keywords(cc *c, env *en, const ast *e, const char *fname, int nkw, const char **kwn)
{
    if (nkw) return ERR(c, en, e, "%s has no argument named '%s'", fname, kwn[0]);
    return 0;
}

/* conv2d(x, K, b, stride = 1, pad = 0, dilation = 1, groups = 1): the convolution of
 * x (B, C, H, W) with K (out, C / groups, k, k), plus b (out, 1, 1) when given. */
static int conv2d_call(cc *c, env *en, const ast *e, value *args, int nargs, const char **kwn, value *kwv,
                       int nkw, value *out)
{
    static const char *names[] = {"stride", "pad", "dilation", "groups"};
    int v[4] = {1, 0, 1, 1};
    if (nargs < 2 || nargs > 3)
        return ERR(c, en, e, "conv2d takes a value, the kernels and a bias: conv2d(x, K, b, stride = 1, pad = 0)");
    for (int k = 0; k < nargs; k++) {
        if (args[k].kind != V_TENSOR)
            return ERR(c, en, e->items[k], "conv2d's argument %d must be a value, not %s", k + 1,
                       cc_kind_name(&args[k]));
        if (cc_is_unresolved(c, args[k].node)) return cc_unresolved_error(c, en, e, args[k].node, "conv2d");
    }
    for (int k = 0; k < nkw; k++) {
        int w = -1;
        for (int j = 0; j < 4; j++)
            if (strcmp(kwn[k], names[j]) == 0) w = j;
        if (w < 0) return ERR(c, en, e, "conv2d has no argument named '%s' (it takes stride, pad, dilation, groups)",
                              kwn[k]);
        if (kwv[k].kind != V_NUM || kwv[k].num != (double)(long)kwv[k].num || kwv[k].num < (w == 1 ? 0 : 1) ||
            kwv[k].num > 1e6)
            return ERR(c, en, e, "conv2d's %s must be a whole number of at least %d", names[w], w == 1 ? 0 : 1);
        v[w] = (int)kwv[k].num;
    }
    int ia[7] = {v[0], v[0], v[1], v[1], v[2], v[2], v[3]};
    cf_node *xk[2] = {args[0].node, args[1].node};
    cf_node *n = cf_op_at(c->m, CF_OP_CONV2D, 2, xk, ia, 7, NULL, 0, en->file, e->line, e->col);
    if (cc_made(c, en, e, n)) return -1;
    if (nargs == 3) {
        n = cf_binary_at(c->m, CF_OP_ADD, n, args[2].node, en->file, e->line, e->col);
        if (cc_made(c, en, e, n)) return -1;
    }
    *out = tensor_value(n);
    return 0;
}

/* maxpool(x, k, stride = k, pad = 0) and avgpool(...): a k x k window over images
 * x (B, C, H, W); stride 0 means the window's size. */
static int pool_call(cc *c, env *en, const ast *e, cf_opcode op, const char *fname, value *args, int nargs,
                     const char **kwn, value *kwv, int nkw, value *out)
{
    if (nargs != 2 || args[0].kind != V_TENSOR)
        return ERR(c, en, e, "%s takes a value and the window's size: %s(x, 2, stride = 2)", fname, fname);
    if (cc_is_unresolved(c, args[0].node)) return cc_unresolved_error(c, en, e, args[0].node, fname);
    int k = 0, v[2] = {0, 0};   /* stride (0: the window), pad */
    if (cc_dim_of(c, en, e->items[1], &args[1], "the window's size", &k)) return -1;
    for (int j = 0; j < nkw; j++) {
        int w = strcmp(kwn[j], "stride") == 0 ? 0 : strcmp(kwn[j], "pad") == 0 ? 1 : -1;
        if (w < 0) return ERR(c, en, e, "%s has no argument named '%s' (it takes stride and pad)", fname, kwn[j]);
        if (kwv[j].kind != V_NUM || kwv[j].num != (double)(long)kwv[j].num || kwv[j].num < 0 || kwv[j].num > 1e6)
            return ERR(c, en, e, "%s's %s must be a whole number of at least 0%s", fname, kwn[j],
                       w ? "" : " (0: the window's size)");
        v[w] = (int)kwv[j].num;
    }
    int ia[6] = {k, k, v[0], v[0], v[1], v[1]};
    cf_node *n = cf_op_at(c->m, op, 1, &args[0].node, ia, 6, NULL, 0, en->file, e->line, e->col);
    if (cc_made(c, en, e, n)) return -1;
    *out = tensor_value(n);
    return 0;
}

/* dropout(x, p): in training, zero each element with probability p. */
static int dropout_call(cc *c, env *en, const ast *e, value *args, int nargs, int nkw, const char **kwn, value *out)
{
    if (no_keywords(c, en, e, "dropout", nkw, kwn)) return -1;
    if (nargs != 2 || args[0].kind != V_TENSOR || args[1].kind != V_NUM)
        return ERR(c, en, e, "dropout takes a value and a probability: dropout(x, 0.5)");
    if (!(args[1].num >= 0 && args[1].num < 1))
        return ERR(c, en, e->items[1], "dropout's probability must be at least 0 and below 1, not %g", args[1].num);
    if (cc_is_unresolved(c, args[0].node)) return cc_unresolved_error(c, en, e, args[0].node, "dropout");
    if (args[1].num == 0) {   /* nothing dropped: x itself, no copy */
        *out = args[0];
        return 0;
    }
    float p = (float)args[1].num;
    cf_node *n = cf_op_at(c->m, CF_OP_DROPOUT, 1, &args[0].node, NULL, 0, &p, 1, en->file, e->line, e->col);
    if (cc_made(c, en, e, n)) return -1;
    *out = tensor_value(n);
    return 0;
}

/* embedding(x, E): the rows of the table E (V, D) that the indices x (B, ...) pick. */
static int embedding_call(cc *c, env *en, const ast *e, value *args, int nargs, int nkw, const char **kwn, value *out)
{
    if (no_keywords(c, en, e, "embedding", nkw, kwn)) return -1;
    if (nargs != 2 || args[0].kind != V_TENSOR || args[1].kind != V_TENSOR)
        return ERR(c, en, e, "embedding takes indices and a table: embedding(x, E)");
    for (int k = 0; k < 2; k++)
        if (cc_is_unresolved(c, args[k].node)) return cc_unresolved_error(c, en, e, args[k].node, "embedding");
    cf_node *n = cf_binary_at(c->m, CF_OP_EMBEDDING, args[0].node, args[1].node, en->file, e->line, e->col);
    if (cc_made(c, en, e, n)) return -1;
    *out = tensor_value(n);
    return 0;
}

/* batchnorm(x, γ, β, mean, var, eps = 1e-5, momentum = 0.1): mean and var are states
 * (stat(...)) that training updates. */
static int batchnorm_call(cc *c, env *en, const ast *e, value *args, int nargs, const char **kwn, value *kwv,
                          int nkw, value *out)
{
    float fa[2] = {1e-5f, 0.1f};
    if (nargs != 5)
        return ERR(c, en, e, "batchnorm takes a value, the scale, the shift and the running mean and variance: "
                             "batchnorm(x, γ, β, mean, var, eps = 1e-5, momentum = 0.1)");
    cf_node *in[5];
    for (int k = 0; k < 5; k++) {
        if (args[k].kind != V_TENSOR)
            return ERR(c, en, e->items[k], "batchnorm's argument %d must be a value, not %s", k + 1,
                       cc_kind_name(&args[k]));
        if (cc_is_unresolved(c, args[k].node)) return cc_unresolved_error(c, en, e, args[k].node, "batchnorm");
        in[k] = args[k].node;
    }
    for (int k = 0; k < nkw; k++) {
        int w = strcmp(kwn[k], "eps") == 0 ? 0 : strcmp(kwn[k], "momentum") == 0 ? 1 : -1;
        if (w < 0) return ERR(c, en, e, "batchnorm has no argument named '%s' (it takes eps and momentum)", kwn[k]);
        double v = kwv[k].kind == V_NUM ? kwv[k].num : -1;
        if (w == 0 ? !(v > 0 && v < 1) : !(v > 0 && v <= 1))
            return ERR(c, en, e, "batchnorm's %s must be a number in %s", kwn[k], w == 0 ? "(0, 1)" : "(0, 1]");
        fa[w] = (float)v;
    }
    cf_node *n = cf_op_at(c->m, CF_OP_BATCHNORM, 5, in, NULL, 0, fa, 2, en->file, e->line, e->col);
    if (cc_made(c, en, e, n)) return -1;
    *out = tensor_value(n);
    return 0;
}

/* layernorm(x, γ, β, eps = 1e-5): each row of x's last dimension normalised, scaled
 * by γ and shifted by β (d numbers each). */
static int layernorm_call(cc *c, env *en, const ast *e, value *args, int nargs, const char **kwn, value *kwv,
                          int nkw, value *out)
{
    float eps = 1e-5f;
    if (nargs != 3)
        return ERR(c, en, e, "layernorm takes a value, the scale and the shift: layernorm(x, γ, β, eps = 1e-5)");
    cf_node *in[3];
    for (int k = 0; k < 3; k++) {
        if (args[k].kind != V_TENSOR)
            return ERR(c, en, e->items[k], "layernorm's argument %d must be a value, not %s", k + 1,
                       cc_kind_name(&args[k]));
        if (cc_is_unresolved(c, args[k].node)) return cc_unresolved_error(c, en, e, args[k].node, "layernorm");
        in[k] = args[k].node;
    }
    for (int k = 0; k < nkw; k++) {
        if (strcmp(kwn[k], "eps") != 0)
            return ERR(c, en, e, "layernorm has no argument named '%s' (it takes eps)", kwn[k]);
        double v = kwv[k].kind == V_NUM ? kwv[k].num : -1;
        if (!(v > 0 && v < 1)) return ERR(c, en, e, "layernorm's eps must be a number in (0, 1)");
        eps = (float)v;
    }
    cf_node *n = cf_op_at(c->m, CF_OP_LAYERNORM, 3, in, NULL, 0, &eps, 1, en->file, e->line, e->col);
    if (cc_made(c, en, e, n)) return -1;
    *out = tensor_value(n);
    return 0;
}

/* gelu(x, exact = false): the tanh approximation, or x Φ(x) itself (ops/gelu.c). Bare
 * in a Chain, gelu is the tanh form (the op's attribute 0). */
static int gelu_call(cc *c, env *en, const ast *e, value *args, int nargs, const char **kwn, value *kwv, int nkw,
                     value *out)
{
    float exact = 0;
    for (int k = 0; k < nkw; k++) {
        if (strcmp(kwn[k], "exact") != 0)
            return ERR(c, en, e, "gelu has no argument named '%s' (it takes exact)", kwn[k]);
        if (kwv[k].kind != V_NUM || (kwv[k].num != 0 && kwv[k].num != 1))
            return ERR(c, en, e, "gelu's exact is true or false");
        exact = (float)kwv[k].num;
    }
    if (!c->in_forward)
        return ERR(c, en, e, "gelu(...) works on values inside a forward function; in a Chain write just gelu "
                             "(the tanh form), or x -> gelu(x, exact = true)");
    if (nargs != 1) return ERR(c, en, e, "gelu takes one value but was given %d arguments", nargs);
    return cc_unary_node(c, en, e, CF_OP_GELU, &args[0], exact, out);
}

/* softmax(x, causal = true): over the last dimension of x (..., T, T), row i seeing
 * columns 0..i only (attention that looks back, never ahead). */
static int softmax_call(cc *c, env *en, const ast *e, value *args, int nargs, const char **kwn, value *kwv, int nkw,
                        value *out)
{
    float causal = 0;
    for (int k = 0; k < nkw; k++) {
        if (strcmp(kwn[k], "causal") != 0)
            return ERR(c, en, e, "softmax has no argument named '%s' (it takes causal)", kwn[k]);
        if (kwv[k].kind != V_NUM || (kwv[k].num != 0 && kwv[k].num != 1))
            return ERR(c, en, e, "softmax's causal is true or false");
        causal = (float)kwv[k].num;
    }
    if (nargs != 1) return ERR(c, en, e, "softmax takes one value but was given %d arguments", nargs);
    return cc_unary_node(c, en, e, CF_OP_SOFTMAX, &args[0], causal, out);
}

/* chunk(x, k, n): part k (from 1) of n equal parts of x's last dimension. */
static int chunk_call(cc *c, env *en, const ast *e, value *args, int nargs, int nkw, const char **kwn, value *out)
{
    if (no_keywords(c, en, e, "chunk", nkw, kwn)) return -1;
    if (nargs != 3 || args[0].kind != V_TENSOR)
        return ERR(c, en, e, "chunk takes a value, a part and a number of parts: chunk(z, 2, 4)");
    if (cc_is_unresolved(c, args[0].node)) return cc_unresolved_error(c, en, e, args[0].node, "chunk");
    int k, n;
    if (cc_dim_of(c, en, e->items[1], &args[1], "chunk's part", &k) || cc_dim_of(c, en, e->items[2], &args[2],
                                                                          "chunk's number of parts", &n))
        return -1;
    cf_shape xs = args[0].node->shape;
    int d = xs.rank ? xs.d[xs.rank - 1] : 0;
    char sx[96];
    if (xs.rank == 0 || (args[0].node->batched && xs.rank == 1))
        return ERR(c, en, e, "chunk splits the last dimension, but the value is %s", cf_shape_str(xs, sx, sizeof sx));
    if (k > n || d % n)
        return ERR(c, en, e, "chunk %d of %d: the last dimension of %s %s", k, n, cf_shape_str(xs, sx, sizeof sx),
                   k > n ? "has no such part" : "does not split into that many equal parts");
    cf_node *r = cf_slice_at(c->m, args[0].node, -1, (k - 1) * (d / n), d / n, en->file, e->line, e->col);
    if (cc_made(c, en, e, r)) return -1;
    *out = tensor_value(r);
    return 0;
}

/* A whole number, negative allowed (a dimension counted from the end). */
static int int_of(cc *c, env *en, const ast *e, const value *v, const char *what, int *out)
{
    if (v->kind != V_NUM || !(v->num >= -64 && v->num <= 64) || v->num != (double)(long)v->num)
        return ERR(c, en, e, "%s must be a whole number", what);
    *out = (int)v->num;
    return 0;
}

/* transpose(x, i, j): dimensions i and j of x swapped, counted as its shape is shown,
 * (B, T, H, d): the batch is 0 and stays. */
static int transpose_call(cc *c, env *en, const ast *e, value *args, int nargs, int nkw, const char **kwn, value *out)
{
    if (no_keywords(c, en, e, "transpose", nkw, kwn)) return -1;
    if (nargs != 3 || args[0].kind != V_TENSOR)
        return ERR(c, en, e, "transpose takes a value and two dimensions: transpose(x, 1, 2) swaps (B, T, H, d) "
                             "into (B, H, T, d)");
    if (!c->in_forward) return ERR(c, en, e, "transpose(...) works on values inside a forward function");
    int d[2];
    if (int_of(c, en, e->items[1], &args[1], "transpose's first dimension", &d[0]) ||
        int_of(c, en, e->items[2], &args[2], "transpose's second dimension", &d[1]))
        return -1;
    if (cc_is_unresolved(c, args[0].node)) return cc_unresolved_error(c, en, e, args[0].node, "transpose");
    cf_node *n = cf_op_at(c->m, CF_OP_TRANSPOSE, 1, &args[0].node, d, 2, NULL, 0, en->file, e->line, e->col);
    if (cc_made(c, en, e, n)) return -1;
    *out = tensor_value(n);
    return 0;
}

/* positions(P, x): the rows of the table P (context, d) for the T positions of x
 * (B, T, ...): P's first T rows, (T, d), which broadcast over the batch when added.
 * A sequence longer than the table is an error here, at the model's line. */
static int positions_call(cc *c, env *en, const ast *e, value *args, int nargs, int nkw, const char **kwn, value *out)
{
    if (no_keywords(c, en, e, "positions", nkw, kwn)) return -1;
    if (nargs != 2 || args[0].kind != V_TENSOR || args[1].kind != V_TENSOR)
        return ERR(c, en, e, "positions takes a table and a sequence: positions(P, x), P (context, d), x (B, T)");
    if (!c->in_forward) return ERR(c, en, e, "positions(...) works on values inside a forward function");
    for (int k = 0; k < 2; k++)
        if (cc_is_unresolved(c, args[k].node)) return cc_unresolved_error(c, en, e, args[k].node, "positions");
    const cf_node *P = args[0].node, *x = args[1].node;
    char sp[96], sx[96];
    if (P->batched || P->shape.rank != 2)
        return ERR(c, en, e, "positions' table must be a matrix (context, d), not %s",
                   cf_shape_str(P->shape, sp, sizeof sp));
    if (x->shape.rank < 1 + x->batched)
        return ERR(c, en, e, "positions needs a sequence (B, T, ...), not %s", cf_shape_str(x->shape, sx, sizeof sx));
    int T = x->shape.d[x->batched], context = P->shape.d[0];
    if (T > context)
        return ERR(c, en, e, "the sequence is longer than the context: %s has %d positions, and the table %s holds "
                   "%d", cf_shape_str(x->shape, sx, sizeof sx), T, cf_shape_str(P->shape, sp, sizeof sp), context);
    if (T == context) {   /* the whole table: P itself */
        *out = args[0];
        return 0;
    }
    cf_node *n = cf_slice_at(c->m, args[0].node, 0, 0, T, en->file, e->line, e->col);
    if (cc_made(c, en, e, n)) return -1;
    *out = tensor_value(n);
    return 0;
}

/* repeat(m, n): a Chain of n models, the expression m evaluated n times, so that each
 * is made afresh with parameters of its own: repeat(TransformerBlock(heads = 4), 6). */
int cc_repeat_call(cc *c, env *en, const ast *e, value *out)
{
    static const char *usage = "repeat takes a model and a count: repeat(TransformerBlock(heads = 4), 6)";
    if (e->n != 2 || e->items[0]->kind == AST_KWARG || e->items[1]->kind == AST_KWARG)
        return ERR(c, en, e, "%s", usage);
    value nv;
    int n;
    if (cc_eval(c, en, e->items[1], &nv) || cc_dim_of(c, en, e->items[1], &nv, "repeat's count", &n)) return -1;
    if (n > MAX_ARGS) return ERR(c, en, e->items[1], "repeat makes at most %d copies, not %d", MAX_ARGS, n);
    ast chain = *e;   /* Chain(m, m, ..., m), each m its own evaluation */
    chain.n = n;
    chain.items = cf_arena_alloc(&c->arena, (size_t)n * sizeof *chain.items);
    if (!chain.items) return cf_oom((size_t)n * sizeof *chain.items);
    for (int k = 0; k < n; k++) chain.items[k] = e->items[0];
    value *args = malloc(2 * MAX_ARGS * sizeof *args), *kwv = args ? args + MAX_ARGS : NULL;
    const char **kwn = malloc(MAX_ARGS * sizeof *kwn);
    int nargs, nkw, rc = -1;
    if (!args || !kwn) {
        cf_oom(2 * MAX_ARGS * sizeof *args);
        goto out;
    }
    if (cc_eval_args(c, en, &chain, args, &nargs, kwn, kwv, &nkw, 1)) goto out;
    if (n > 1 && args[0].kind == V_MODEL && args[1].kind == V_MODEL && args[0].model == args[1].model) {
        rc = ERR(c, en, e->items[0], "repeat would use this one model %d times, its parameters shared; give the "
                 "call that makes it, as in repeat(TransformerBlock(heads = 4), %d)", n, n);
        goto out;
    }
    if (n > 1 && args[0].kind == V_TENSOR) {
        rc = ERR(c, en, e->items[0], "%s", usage);
        goto out;
    }
    rc = cc_call_builtin(c, en, &chain, cc_builtin_find("Chain"), args, nargs, kwn, kwv, 0, out);
out:
    free(args);
    free(kwn);
    return rc;
}

/* An op's function of one value, with the numbers its row declares (cf_opdef.attrs)
 * after the value, by position or by name: leakyrelu(x, 0.2), clamp(x, lo = 0). */
int cc_op_call(cc *c, env *en, const ast *e, cf_opcode op, value *args, int nargs, const char **kwn, value *kwv,
               int nkw, value *out)
{
    const cf_opdef *od = cf_ops[op];
    const char *name = od->name;
    int na = 0;
    while (na < CF_OP_ATTRS && od->attrs[na].name) na++;
    if (nargs - 1 > na) {
        if (!na) return ERR(c, en, e, "%s takes one value but was given %d arguments", name, nargs);
        char usage[160];
        int u = snprintf(usage, sizeof usage, "%s(x", name);
        for (int k = 0; k < na && u < (int)sizeof usage; k++)
            u += isnan(od->attrs[k].def) ? snprintf(usage + u, sizeof usage - u, ", %s", od->attrs[k].name)
                                         : snprintf(usage + u, sizeof usage - u, ", %g", (double)od->attrs[k].def);
        return ERR(c, en, e, "%s takes a value and at most %d number%s: %s)", name, na, na == 1 ? "" : "s", usage);
    }
    const value *given[CF_OP_ATTRS] = {0};
    for (int k = 1; k < nargs; k++) given[k - 1] = &args[k];
    for (int k = 0; k < nkw; k++) {
        int j = 0;
        while (j < na && strcmp(od->attrs[j].name, kwn[k]) != 0) j++;
        if (j == na) {
            if (!na) return no_keywords(c, en, e, name, nkw, kwn);
            return ERR(c, en, e, "%s has no argument named '%s'", name, kwn[k]);
        }
        if (given[j]) return ERR(c, en, e, "%s's %s is given twice", name, kwn[k]);
        given[j] = &kwv[k];
    }
    int ia[CF_ATTR_INTS] = {0}, nia = 0, nfa = 0;
    float fa[CF_ATTR_FLOATS] = {0};
    for (int j = 0; j < na; j++) {
        const cf_attrdef *d = &od->attrs[j];
        double v = d->def;
        if (given[j]) {
            if (given[j]->kind != V_NUM) return ERR(c, en, e, "the %s of %s must be a number", d->name, name);
            v = given[j]->num;
        } else if (isnan(v)) {
            return ERR(c, en, e, "%s needs its %s: %s(x, %s = ...)", name, d->name, name, d->name);
        }
        if (d->kind == 'i') {
            if (v != floor(v) || fabs(v) > 1e9)
                return ERR(c, en, e, "the %s of %s must be a whole number", d->name, name);
            ia[d->slot] = (int)v;
            if (d->slot + 1 > nia) nia = d->slot + 1;
        } else {
            fa[d->slot] = (float)v;
            if (d->slot + 1 > nfa) nfa = d->slot + 1;
        }
    }
    if (args[0].kind != V_TENSOR) return ERR(c, en, e, "%s needs a value, not %s", od->what, cc_kind_name(&args[0]));
    if (cc_is_unresolved(c, args[0].node)) return cc_unresolved_error(c, en, e, args[0].node, name);
    cf_node *n = cf_op_at(c->m, op, 1, &args[0].node, ia, nia, fa, nfa, en->file, e->line, e->col);
    if (cc_made(c, en, e, n)) return -1;
    *out = tensor_value(n);
    return 0;
}

int cc_call_builtin(cc *c, env *en, const ast *e, int fi, value *args, int nargs, const char **kwn, value *kwv,
                    int nkw, value *out)
{
    const struct builtin bf = cc_builtin_at(fi), *b = &bf;
    switch (b->id) {
    case B_PARAM:
    case B_STAT: {
        const char *what = b->id == B_PARAM ? "param" : "stat";
        if (!c->building || c->in_forward)
            return ERR(c, en, e, "%s(...) belongs in a net body, before the forward function", what);
        param *p = cf_arena_alloc(&c->arena, sizeof *p);
        if (!p) return cf_oom(sizeof *p);
        if (nargs == 0)
            return ERR(c, en, e, "%s needs its dimensions: %s", what, b->id == B_PARAM ? "param(in, out)" : "stat(in)");
        if (dims_of(c, en, e, args, nargs, 0, &p->shape, what, CF_MAX_DIMS)) return -1;
        if (!cf_shape_count_checked(p->shape)) return ERR(c, en, e, "%s is too large: more than 2^36 elements", what);
        p->state = b->id == B_STAT;
        p->init = (cf_init){p->state ? CF_INIT_ZEROS : CF_INIT_GLOROT, 0};
        for (int k = 0; k < nkw; k++) {
            if (strcmp(kwn[k], "init") != 0) {
                const char *s = cc_distance(kwn[k], "init") <= 2 ? " (did you mean 'init'?)" : "";
                return ERR(c, en, e, "%s has no argument named '%s'%s", what, kwn[k], s);
            }
            if (kwv[k].kind != V_INIT)
                return ERR(c, en, e, "init must be an initialiser (glorot, zeros, ones, normal(std), uniform(a)), "
                           "not %s", cc_kind_name(&kwv[k]));
            p->init = kwv[k].init;
        }
        p->owner = c->building;
        p->file = en->file;
        p->line = e->line;
        p->col = e->col;
        *out = (value){.kind = V_PARAM, .param = p};
        return 0;
    }
    case B_NORMAL:
    case B_UNIFORM: {
        if (no_keywords(c, en, e, b->name, nkw, kwn)) return -1;
        if (nargs != 1 || args[0].kind != V_NUM || !(args[0].num > 0))
            return ERR(c, en, e, "%s takes one positive number: %s(%s)", b->name, b->name,
                       b->id == B_NORMAL ? "std" : "a");
        *out = (value){.kind = V_INIT,
                       .init = {b->id == B_NORMAL ? CF_INIT_NORMAL : CF_INIT_UNIFORM, (float)args[0].num}};
        return 0;
    }
    case B_INPUT: {
        if (no_keywords(c, en, e, "Input", nkw, kwn)) return -1;
        inst *i = cc_inst_new(c, I_INPUT, "Input", en->file, e->line, e->col);   /* Input(): one number a sample */
        if (!i || dims_of(c, en, e, args, nargs, 0, &i->shape, "Input", CF_MAX_DIMS - 1)) return -1;
        if (!cf_shape_count_checked(i->shape))
            return ERR(c, en, e, "Input is too large: more than 2^36 elements per sample");
        *out = model_value(i);
        return 0;
    }
    case B_CHAIN: {
        if (no_keywords(c, en, e, "Chain", nkw, kwn)) return -1;
        if (nargs == 0) return ERR(c, en, e, "Chain needs at least one model");
        inst *i = cc_inst_new(c, I_CHAIN, "Chain", en->file, e->line, e->col);
        if (!i) return -1;
        i->env = en;   /* where its elements were written */
        i->items = cf_arena_alloc(&c->arena, (size_t)nargs * sizeof *i->items);
        i->item_ast = cf_arena_alloc(&c->arena, (size_t)nargs * sizeof *i->item_ast);
        if (!i->items || !i->item_ast) return cf_oom((size_t)nargs * sizeof *i->items);
        i->n = nargs;
        for (int k = 0; k < nargs; k++) {
            value *v = &args[k];
            const ast *a = e->items[k];
            int ok = v->kind == V_MODEL || v->kind == V_PARTIAL || (v->kind == V_BUILTIN && cc_builtin_at(v->fn).unary);
            if (!ok)
                return ERR(c, en, a, "a Chain element must be a model or a function like relu, not %s%s%s%s",
                           cc_kind_name(v), v->kind == V_TEMPLATE ? " (give its arguments: " : "",
                           v->kind == V_TEMPLATE ? v->net->name : "", v->kind == V_TEMPLATE ? "(...))" : "");
            if (v->kind == V_MODEL && v->model->kind == I_INPUT && k > 0)
                return ERR(c, en, a, "Input must come first in a Chain");
            i->items[k] = *v;
            i->item_ast[k] = a;
            if (v->kind == V_MODEL) {
                char *local = cf_arena_alloc(&c->arena, 12);
                if (!local) return cf_oom(12);
                snprintf(local, 12, "%d", k);
                cc_place(v->model, i, local);
            }
        }
        *out = model_value(i);
        return 0;
    }
    case B_STATE: {
        if (!c->building || c->in_forward)
            return ERR(c, en, e, "state(...) belongs in a net body, before the forward function");
        rstate *st = cf_arena_alloc(&c->arena, sizeof *st);
        if (!st) return cf_oom(sizeof *st);
        if (nargs == 0) return ERR(c, en, e, "state needs the shape of one sample's state: state(out)");
        if (dims_of(c, en, e, args, nargs, 0, &st->shape, "state", CF_MAX_DIMS - 1)) return -1;
        if (!cf_shape_count_checked(st->shape)) return ERR(c, en, e, "state is too large: more than 2^36 elements");
        st->init = (cf_init){CF_INIT_ZEROS, 0};
        for (int k = 0; k < nkw; k++) {
            if (strcmp(kwn[k], "init") != 0) return ERR(c, en, e, "state has no argument named '%s'", kwn[k]);
            if (kwv[k].kind != V_INIT || (kwv[k].init.kind != CF_INIT_ZEROS && kwv[k].init.kind != CF_INIT_ONES))
                return ERR(c, en, e, "a state starts from zeros or ones");
            st->init = kwv[k].init;
        }
        st->owner = c->building;
        st->file = en->file;
        st->line = e->line;
        st->col = e->col;
        st->next = c->states;
        c->states = st;
        *out = (value){.kind = V_STATE, .state = st};
        return 0;
    }
    case B_UNROLL: {
        if (nargs != 2 || (args[0].kind != V_MODEL && args[0].kind != V_PARTIAL))
            return ERR(c, en, e, "unroll takes a model and a number of steps: unroll(m, 50, stateful = true)");
        if (args[0].kind == V_PARTIAL)
            return ERR(c, en, e->items[0], "unroll's model needs its input size: begin it with Input(...), as in "
                                           "unroll(Chain(Input(65), LSTM(128), ...), 50)");
        inst *i = cc_inst_new(c, I_UNROLL, "unroll", en->file, e->line, e->col);
        if (!i || cc_dim_of(c, en, e->items[1], &args[1], "unroll's number of steps", &i->n)) return -1;
        if (c->steps) i->n = c->steps;
        i->stateful = 1;
        for (int k = 0; k < nkw; k++) {
            if (strcmp(kwn[k], "stateful") != 0)
                return ERR(c, en, e, "unroll has no argument named '%s' (it takes stateful)", kwn[k]);
            if (kwv[k].kind != V_NUM || (kwv[k].num != 0 && kwv[k].num != 1))
                return ERR(c, en, e, "unroll's stateful is true or false");
            i->stateful = kwv[k].num == 1;
        }
        i->items = cf_arena_alloc(&c->arena, sizeof *i->items);
        if (!i->items) return cf_oom(sizeof *i->items);
        i->items[0] = args[0];
        i->env = en;
        cc_place(args[0].model, i, NULL);
        *out = model_value(i);
        return 0;
    }
    case B_CHUNK: return chunk_call(c, en, e, args, nargs, nkw, kwn, out);
    case B_CONV2D: return conv2d_call(c, en, e, args, nargs, kwn, kwv, nkw, out);
    case B_MAXPOOL: return pool_call(c, en, e, CF_OP_MAXPOOL, "maxpool", args, nargs, kwn, kwv, nkw, out);
    case B_AVGPOOL: return pool_call(c, en, e, CF_OP_AVGPOOL, "avgpool", args, nargs, kwn, kwv, nkw, out);
    case B_DROPOUT: return dropout_call(c, en, e, args, nargs, nkw, kwn, out);
    case B_BATCHNORM: return batchnorm_call(c, en, e, args, nargs, kwn, kwv, nkw, out);
    case B_EMBEDDING: return embedding_call(c, en, e, args, nargs, nkw, kwn, out);
    case B_LAYERNORM: return layernorm_call(c, en, e, args, nargs, kwn, kwv, nkw, out);
    case B_GELU: return gelu_call(c, en, e, args, nargs, kwn, kwv, nkw, out);
    case B_SOFTMAX: return softmax_call(c, en, e, args, nargs, kwn, kwv, nkw, out);
    case B_TRANSPOSE: return transpose_call(c, en, e, args, nargs, nkw, kwn, out);
    case B_POSITIONS: return positions_call(c, en, e, args, nargs, nkw, kwn, out);
    case B_SQRT:
        if (no_keywords(c, en, e, "sqrt", nkw, kwn)) return -1;
        if (nargs != 1 || args[0].kind != V_NUM || !(args[0].num >= 0))
            return ERR(c, en, e, "sqrt takes one number, not negative: sqrt(in / heads)");
        *out = num_value(sqrt(args[0].num));
        return 0;
    default: break;
    }

    /* functions of values */
    if (b->id != B_OP && no_keywords(c, en, e, b->name, nkw, kwn)) return -1;
    if (!c->in_forward)
        return ERR(c, en, e, "%s(...) works on values inside a forward function; in a Chain write just %s",
                   b->name, b->name);
    if (b->id == B_HCAT) {
        cf_node *xs[MAX_ARGS];
        if (nargs < 1) return ERR(c, en, e, "hcat needs values to join");
        for (int k = 0; k < nargs; k++) {
            if (args[k].kind != V_TENSOR)
                return ERR(c, en, e->items[k], "hcat joins values, not %s", cc_kind_name(&args[k]));
            if (cc_is_unresolved(c, args[k].node)) return cc_unresolved_error(c, en, e, args[k].node, "hcat");
            xs[k] = args[k].node;
        }
        cf_node *n = cf_concat_at(c->m, -1, nargs, xs, en->file, e->line, e->col);
        if (cc_made(c, en, e, n)) return -1;
        *out = tensor_value(n);
        return 0;
    }
    if (nargs < 1 || args[0].kind != V_TENSOR)
        return ERR(c, en, e, "%s needs a value as its first argument%s", b->name,
                   nargs ? "" : ": nothing was given");
    if (b->id == B_RESHAPE) {
        cf_shape s;
        if (nargs < 2) return ERR(c, en, e, "reshape needs the new shape: reshape(x, 28, 28)");
        if (nargs - 1 > CF_MAX_DIMS) return ERR(c, en, e, "reshape takes at most %d dimensions", CF_MAX_DIMS);
        s.rank = nargs - 1;
        for (int k = 1; k < nargs; k++) {
            if (args[k].kind == V_NUM && args[k].num == -1) {
                for (int j = 1; j < k; j++)
                    if (s.d[j - 1] == -1) return ERR(c, en, e->items[k], "reshape can infer only one dimension (-1)");
                s.d[k - 1] = -1;
                continue;
            }
            if (cc_dim_of(c, en, e->items[k], &args[k], "a reshape dimension", &s.d[k - 1])) return -1;
        }
        if (cc_is_unresolved(c, args[0].node)) return cc_unresolved_error(c, en, e, args[0].node, "reshape");
        cf_node *n = cf_reshape_at(c->m, args[0].node, s, en->file, e->line, e->col);
        if (cc_made(c, en, e, n)) return -1;
        *out = tensor_value(n);
        return 0;
    }
    return cc_op_call(c, en, e, b->op, args, nargs, kwn, kwv, nkw, out);
}
