/* builtins.c - the notation's built-in functions: parameters, states and their
 * initialisers, Input, Chain, unroll and repeat, the functions that make ops of
 * their own (conv2d, batchnorm, chunk, ...), and the ops that the notation calls by
 * name, with the numbers their rows declare.
 *
 * Each built-in is a row of cc_builtins that says what it takes: where it belongs
 * (in a forward function, in a net body), its positional arguments' kinds and count,
 * its keywords with their kinds and defaults. check_args holds every call to its row
 * before the built-in's function runs, with its keywords' values in kw (in the row's
 * order); the function checks only what is its own (a dimension, a range). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/compile_int.h"

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

/* A whole number, negative allowed (a dimension counted from the end). */
static int int_of(cc *c, env *en, const ast *e, const value *v, const char *what, int *out)
{
    if (v->kind != V_NUM || !(v->num >= -64 && v->num <= 64) || v->num != (double)(long)v->num)
        return ERR(c, en, e, "%s must be a whole number", what);
    *out = (int)v->num;
    return 0;
}

/* The built-ins' functions, each of struct builtin's call (what one does not use is
 * cast to void). */

/* param(d...) and stat(d...): a parameter, or a statistic that training updates. */
static int param_call(cc *c, env *en, const ast *e, const struct builtin *b, value *args, int nargs, const value *kw,
                      value *out)
{
    const char *what = b->name;
    param *p = cf_arena_alloc(&c->arena, sizeof *p);
    if (!p) return cf_oom(sizeof *p);
    if (dims_of(c, en, e, args, nargs, 0, &p->shape, what, CF_MAX_DIMS)) return -1;
    if (!cf_shape_count_checked(p->shape)) return ERR(c, en, e, "%s is too large: more than 2^36 elements", what);
    p->state = b->id == B_STAT;
    p->init = kw[0].init;
    p->owner = c->building;
    p->file = en->file;
    p->line = e->line;
    p->col = e->col;
    *out = (value){.kind = V_PARAM, .param = p};
    return 0;
}

/* y = state(d...): a recurrent state of one sample's shape (unroll.c). */
static int state_call(cc *c, env *en, const ast *e, const struct builtin *b, value *args, int nargs, const value *kw,
                      value *out)
{
    (void)b;
    rstate *st = cf_arena_alloc(&c->arena, sizeof *st);
    if (!st) return cf_oom(sizeof *st);
    if (dims_of(c, en, e, args, nargs, 0, &st->shape, "state", CF_MAX_DIMS - 1)) return -1;
    if (!cf_shape_count_checked(st->shape)) return ERR(c, en, e, "state is too large: more than 2^36 elements");
    st->init = kw[0].init;
    st->owner = c->building;
    st->file = en->file;
    st->line = e->line;
    st->col = e->col;
    st->next = c->states;
    c->states = st;
    *out = (value){.kind = V_STATE, .state = st};
    return 0;
}

/* normal(std) and uniform(a): initialisers. */
static int init_call(cc *c, env *en, const ast *e, const struct builtin *b, value *args, int nargs, const value *kw,
                     value *out)
{
    (void)nargs, (void)kw;
    if (!(args[0].num > 0)) return ERR(c, en, e, "%s", b->usage);
    *out = (value){.kind = V_INIT,
                   .init = {b->id == B_NORMAL ? CF_INIT_NORMAL : CF_INIT_UNIFORM, (float)args[0].num}};
    return 0;
}

/* Input(d...): the model's input, d... a sample (Input(): one number a sample). */
static int input_call(cc *c, env *en, const ast *e, const struct builtin *b, value *args, int nargs, const value *kw,
                      value *out)
{
    (void)b, (void)kw;
    inst *i = cc_inst_new(c, I_INPUT, "Input", en->file, e->line, e->col);
    if (!i || dims_of(c, en, e, args, nargs, 0, &i->shape, "Input", CF_MAX_DIMS - 1)) return -1;
    if (!cf_shape_count_checked(i->shape))
        return ERR(c, en, e, "Input is too large: more than 2^36 elements per sample");
    *out = model_value(i);
    return 0;
}

/* Chain(m...): models, and functions of one value, applied in turn. */
static int chain_call(cc *c, env *en, const ast *e, const struct builtin *b, value *args, int nargs, const value *kw,
                      value *out)
{
    (void)b, (void)kw;
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

/* unroll(m, n, stateful = true): m over n steps, its states carried (unroll.c). */
static int unroll_call(cc *c, env *en, const ast *e, const struct builtin *b, value *args, int nargs, const value *kw,
                       value *out)
{
    (void)b, (void)nargs;
    if (args[0].kind == V_PARTIAL)
        return ERR(c, en, e->items[0], "unroll's model needs its input size: begin it with Input(...), as in "
                                       "unroll(Chain(Input(65), LSTM(128), ...), 50)");
    inst *i = cc_inst_new(c, I_UNROLL, "unroll", en->file, e->line, e->col);
    if (!i || cc_dim_of(c, en, e->items[1], &args[1], "unroll's number of steps", &i->n)) return -1;
    if (c->steps) i->n = c->steps;
    i->stateful = kw[0].num == 1;
    i->items = cf_arena_alloc(&c->arena, sizeof *i->items);
    if (!i->items) return cf_oom(sizeof *i->items);
    i->items[0] = args[0];
    i->env = en;
    cc_place(args[0].model, i, NULL);
    *out = model_value(i);
    return 0;
}

/* conv2d(x, K, b, stride = 1, pad = 0, dilation = 1, groups = 1): the convolution of
 * x (B, C, H, W) with K (out, C / groups, k, k), plus b (out, 1, 1) when given. */
static int conv2d_call(cc *c, env *en, const ast *e, const struct builtin *b, value *args, int nargs, const value *kw,
                       value *out)
{
    (void)b;
    int stride = (int)kw[0].num, pad = (int)kw[1].num, dilation = (int)kw[2].num;
    int ia[7] = {stride, stride, pad, pad, dilation, dilation, (int)kw[3].num};
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
static int pool_call(cc *c, env *en, const ast *e, const struct builtin *b, value *args, int nargs, const value *kw,
                     value *out)
{
    (void)nargs;
    int k;
    if (cc_dim_of(c, en, e->items[1], &args[1], "the window's size", &k)) return -1;
    int stride = (int)kw[0].num, pad = (int)kw[1].num;
    int ia[6] = {k, k, stride, stride, pad, pad};
    cf_node *n = cf_op_at(c->m, b->op, 1, &args[0].node, ia, 6, NULL, 0, en->file, e->line, e->col);
    if (cc_made(c, en, e, n)) return -1;
    *out = tensor_value(n);
    return 0;
}

/* dropout(x, p): in training, zero each element with probability p. */
static int dropout_call(cc *c, env *en, const ast *e, const struct builtin *b, value *args, int nargs, const value *kw,
                        value *out)
{
    (void)b, (void)nargs, (void)kw;
    if (!(args[1].num >= 0 && args[1].num < 1))
        return ERR(c, en, e->items[1], "dropout's probability must be at least 0 and below 1, not %g", args[1].num);
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

/* The op of the row on the values given, its numbers the keywords': embedding(x, E),
 * the rows of the table E (V, D) that the indices x (B, ...) pick; batchnorm(x, γ,
 * β, mean, var, eps = 1e-5, momentum = 0.1), mean and var states (stat(...)) that
 * training updates; layernorm(x, γ, β, eps = 1e-5), each row of x's last dimension
 * normalised, scaled by γ and shifted by β (d numbers each). */
static int values_call(cc *c, env *en, const ast *e, const struct builtin *b, value *args, int nargs, const value *kw,
                       value *out)
{
    cf_node *in[MAX_ARGS];
    float fa[BUILTIN_KWS];
    int nfa = 0;
    for (int k = 0; k < nargs; k++) in[k] = args[k].node;
    while (nfa < BUILTIN_KWS && b->kw[nfa].name) {
        fa[nfa] = (float)kw[nfa].num;
        nfa++;
    }
    cf_node *n = cf_op_at(c->m, b->op, nargs, in, NULL, 0, fa, nfa, en->file, e->line, e->col);
    if (cc_made(c, en, e, n)) return -1;
    *out = tensor_value(n);
    return 0;
}

/* An op's function of one value with a keyword: gelu(x, exact = false), the tanh
 * approximation or x Φ(x) itself (ops/gelu.c); softmax(x, causal = true), over the
 * last dimension of x (..., T, T), row i seeing columns 0..i only (attention that
 * looks back, never ahead). Bare in a Chain, each is its op with attribute 0. */
static int unary_call(cc *c, env *en, const ast *e, const struct builtin *b, value *args, int nargs, const value *kw,
                      value *out)
{
    (void)nargs;
    return cc_unary_node(c, en, e, b->op, &args[0], (float)kw[0].num, out);
}

/* identity(x): x itself, no node: a model that changes nothing (a residual block's
 * shortcut when the shapes stay). */
static int identity_call(cc *c, env *en, const ast *e, const struct builtin *b, value *args, int nargs,
                         const value *kw, value *out)
{
    (void)c, (void)en, (void)e, (void)b, (void)nargs, (void)kw;
    *out = args[0];
    return 0;
}

/* chunk(x, k, n): part k (from 1) of n equal parts of x's last dimension. */
static int chunk_call(cc *c, env *en, const ast *e, const struct builtin *b, value *args, int nargs, const value *kw,
                      value *out)
{
    (void)b, (void)nargs, (void)kw;
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

/* transpose(x, i, j): dimensions i and j of x swapped, counted as its shape is shown,
 * (B, T, H, d): the batch is 0 and stays. */
static int transpose_call(cc *c, env *en, const ast *e, const struct builtin *b, value *args, int nargs,
                          const value *kw, value *out)
{
    (void)b, (void)nargs, (void)kw;
    int d[2];
    if (int_of(c, en, e->items[1], &args[1], "transpose's first dimension", &d[0]) ||
        int_of(c, en, e->items[2], &args[2], "transpose's second dimension", &d[1]))
        return -1;
    cf_node *n = cf_op_at(c->m, CF_OP_TRANSPOSE, 1, &args[0].node, d, 2, NULL, 0, en->file, e->line, e->col);
    if (cc_made(c, en, e, n)) return -1;
    *out = tensor_value(n);
    return 0;
}

/* positions(P, x): the rows of the table P (context, d) for the T positions of x
 * (B, T, ...): P's first T rows, (T, d), which broadcast over the batch when added;
 * recorded as the model's positions (cf_model_add_positions).
 * A sequence longer than the table is an error here, at the model's line. */
static int positions_call(cc *c, env *en, const ast *e, const struct builtin *b, value *args, int nargs,
                          const value *kw, value *out)
{
    (void)b, (void)nargs, (void)kw;
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
        if (cf_model_add_positions(c->m, args[0].node, args[0].node)) return -1;
        *out = args[0];
        return 0;
    }
    cf_node *n = cf_slice_at(c->m, args[0].node, 0, 0, T, en->file, e->line, e->col);
    if (cc_made(c, en, e, n)) return -1;
    if (cf_model_add_positions(c->m, n, args[0].node)) return -1;
    *out = tensor_value(n);
    return 0;
}

/* sqrt(x) of a number: sqrt(in / heads). */
static int sqrt_call(cc *c, env *en, const ast *e, const struct builtin *b, value *args, int nargs, const value *kw,
                     value *out)
{
    (void)nargs, (void)kw;
    if (!(args[0].num >= 0)) return ERR(c, en, e, "%s", b->usage);
    *out = num_value(sqrt(args[0].num));
    return 0;
}

/* hcat(x...): values joined along their last dimension. */
static int hcat_call(cc *c, env *en, const ast *e, const struct builtin *b, value *args, int nargs, const value *kw,
                     value *out)
{
    (void)b, (void)kw;
    cf_node *xs[MAX_ARGS];
    for (int k = 0; k < nargs; k++) xs[k] = args[k].node;
    cf_node *n = cf_concat_at(c->m, -1, nargs, xs, en->file, e->line, e->col);
    if (cc_made(c, en, e, n)) return -1;
    *out = tensor_value(n);
    return 0;
}

/* reshape(x, d...): x's numbers in the shape d... of a sample, one d may be -1. */
static int reshape_call(cc *c, env *en, const ast *e, const struct builtin *b, value *args, int nargs, const value *kw,
                        value *out)
{
    (void)b, (void)kw;
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
    cf_node *n = cf_reshape_at(c->m, args[0].node, s, en->file, e->line, e->col);
    if (cc_made(c, en, e, n)) return -1;
    *out = tensor_value(n);
    return 0;
}

/* The functions of one value that ops define (relu, softmax, ...: CF_CALL in the op
 * table) are found there, by their names (cc_builtin_at); this table holds the rest,
 * and aliases. A row without a usage message takes a value first, or anything
 * (its function checks it). */
const struct builtin cc_builtins[] = {
    {.name = "σ", .id = B_OP, .op = CF_OP_SIGMOID, .unary = 1, .where = 'F', .args = "vx*"},
    {.name = "reshape", .op = CF_OP_RESHAPE, .where = 'F', .args = "vx*", .call = reshape_call},
    {.name = "hcat", .op = CF_OP_CONCAT, .where = 'F', .args = "v*", .min = 1, .usage = "hcat needs values to join",
     .each = 1, .call = hcat_call},
    {.name = "param", .id = B_PARAM, .where = 'b', .args = "x*", .min = 1,
     .usage = "param needs its dimensions: param(in, out)", .kw = {{"init", 'I', .def = CF_INIT_GLOROT}},
     .call = param_call},
    {.name = "state", .where = 'b', .args = "x*", .min = 1,
     .usage = "state needs the shape of one sample's state: state(out)", .kw = {{"init", 'Z', .def = CF_INIT_ZEROS}},
     .call = state_call},
    {.name = "stat", .id = B_STAT, .where = 'b', .args = "x*", .min = 1, .usage = "stat needs its dimensions: stat(in)",
     .kw = {{"init", 'I', .def = CF_INIT_ZEROS}}, .call = param_call},
    {.name = "chunk", .args = "vxx", .min = 3,
     .usage = "chunk takes a value, a part and a number of parts: chunk(z, 2, 4)", .call = chunk_call},
    {.name = "normal", .id = B_NORMAL, .args = "n", .min = 1, .usage = "normal takes one positive number: normal(std)",
     .call = init_call},
    {.name = "uniform", .id = B_UNIFORM, .args = "n", .min = 1,
     .usage = "uniform takes one positive number: uniform(a)", .call = init_call},
    {.name = "Input", .args = "x*", .call = input_call},
    {.name = "Chain", .id = B_CHAIN, .args = "x*", .min = 1, .usage = "Chain needs at least one model",
     .call = chain_call},
    {.name = "unroll", .args = "mx", .min = 2,
     .usage = "unroll takes a model and a number of steps: unroll(m, 50, stateful = true)",
     .kw = {{"stateful", 'b', .def = 1}}, .call = unroll_call},
    {.name = "conv2d", .op = CF_OP_CONV2D, .args = "vvv", .min = 2,
     .usage = "conv2d takes a value, the kernels and a bias: conv2d(x, K, b, stride = 1, pad = 0)", .each = 1,
     .kw = {{"stride", 'i', .lo = 1, .def = 1}, {.name = "pad", .kind = 'i'}, {"dilation", 'i', .lo = 1, .def = 1},
            {"groups", 'i', .lo = 1, .def = 1}},
     .call = conv2d_call},
    {.name = "maxpool", .op = CF_OP_MAXPOOL, .args = "vx", .min = 2,
     .usage = "maxpool takes a value and the window's size: maxpool(x, 2, stride = 2)",
     .kw = {{"stride", 'i', .note = " (0: the window's size)"}, {.name = "pad", .kind = 'i'}}, .call = pool_call},
    {.name = "avgpool", .op = CF_OP_AVGPOOL, .args = "vx", .min = 2,
     .usage = "avgpool takes a value and the window's size: avgpool(x, 2, stride = 2)",
     .kw = {{"stride", 'i', .note = " (0: the window's size)"}, {.name = "pad", .kind = 'i'}}, .call = pool_call},
    {.name = "dropout", .op = CF_OP_DROPOUT, .args = "vn", .min = 2,
     .usage = "dropout takes a value and a probability: dropout(x, 0.5)", .call = dropout_call},
    {.name = "batchnorm", .op = CF_OP_BATCHNORM, .args = "vvvvv", .min = 5,
     .usage = "batchnorm takes a value, the scale, the shift and the running mean and variance: "
              "batchnorm(x, γ, β, mean, var, eps = 1e-5, momentum = 0.1)", .each = 1,
     .kw = {{"eps", 'n', .lo = 0, .hi = 1, .def = 1e-5}, {"momentum", 'N', .lo = 0, .hi = 1, .def = 0.1}},
     .call = values_call},
    {.name = "embedding", .op = CF_OP_EMBEDDING, .args = "vv", .min = 2,
     .usage = "embedding takes indices and a table: embedding(x, E)", .call = values_call},
    {.name = "layernorm", .op = CF_OP_LAYERNORM, .args = "vvv", .min = 3,
     .usage = "layernorm takes a value, the scale and the shift: layernorm(x, γ, β, eps = 1e-5)", .each = 1,
     .kw = {{"eps", 'n', .lo = 0, .hi = 1, .def = 1e-5}}, .call = values_call},
    /* here for their keywords; bare, as their ops */
    {.name = "gelu", .op = CF_OP_GELU, .unary = 1, .where = 'F',
     .hint = " (the tanh form), or x -> gelu(x, exact = true)", .args = "x", .min = 1,
     .kw = {{.name = "exact", .kind = 'b'}}, .call = unary_call},
    {.name = "softmax", .op = CF_OP_SOFTMAX, .unary = 1, .args = "x", .min = 1,
     .kw = {{.name = "causal", .kind = 'b'}}, .call = unary_call},
    {.name = "transpose", .op = CF_OP_TRANSPOSE, .where = 'f', .args = "vxx", .min = 3,
     .usage = "transpose takes a value and two dimensions: transpose(x, 1, 2) swaps (B, T, H, d) into (B, H, T, d)",
     .call = transpose_call},
    {.name = "sqrt", .args = "n", .min = 1, .usage = "sqrt takes one number, not negative: sqrt(in / heads)",
     .call = sqrt_call},
    {.name = "identity", .unary = 1, .where = 'f', .args = "v", .min = 1, .call = identity_call},
    {.name = "repeat", .id = B_REPEAT},   /* evaluated before its arguments: cc_repeat_call */
    {.name = "positions", .where = 'f', .args = "vv", .min = 2,
     .usage = "positions takes a table and a sequence: positions(P, x), P (context, d), x (B, T)",
     .call = positions_call},
};

#define NBUILTINS ((int)(sizeof cc_builtins / sizeof cc_builtins[0]))
const int cc_nbuiltins = NBUILTINS;

/* A built-in function by number: those of the table above, then from NBUILTINS on
 * the ops that the notation calls by name (NBUILTINS + opcode). */
struct builtin cc_builtin_at(int fn)
{
    if (fn < NBUILTINS) return cc_builtins[fn];
    return (struct builtin){.name = cf_ops[fn - NBUILTINS]->name, .id = B_OP, .op = (cf_opcode)(fn - NBUILTINS),
                            .unary = 1, .where = 'F', .args = "vx*"};
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

/* "NAME has no argument named 'K'", with the keyword meant when K is close to one,
 * else the keywords NAME takes. */
static int unknown_keyword(cc *c, env *en, const ast *e, const struct builtin *b, int nk, const char *k)
{
    if (!nk) return ERR(c, en, e, "%s has no argument named '%s'", b->name, k);
    const char *best = NULL;
    int bestd = 99;
    for (int j = 0; j < nk; j++) cc_consider(k, b->kw[j].name, &best, &bestd);
    const char *whose, *ours = cc_foreign(k, &whose);
    for (int j = 0; ours && j < nk; j++)
        if (!strcmp(b->kw[j].name, ours))
            return ERR(c, en, e, "%s has no argument named '%s' (did you mean '%s'? %s %s is %s in cflux)", b->name, k,
                       ours, whose, k, ours);
    if (bestd <= 2) return ERR(c, en, e, "%s has no argument named '%s' (did you mean '%s'?)", b->name, k, best);
    char list[128] = "";
    for (int j = 0; j < nk; j++) {
        size_t len = strlen(list);
        snprintf(list + len, sizeof list - len, "%s%s", j == 0 ? "" : j == nk - 1 ? " and " : ", ", b->kw[j].name);
    }
    return ERR(c, en, e, "%s has no argument named '%s' (it takes %s)", b->name, k, list);
}

/* The keywords of a call to b, each checked against its row, into kw (b's order; a
 * keyword not given, its default). */
static int check_keywords(cc *c, env *en, const ast *e, const struct builtin *b, const char **kwn, const value *kwv,
                          int nkw, value *kw)
{
    int nk = 0;
    for (; nk < BUILTIN_KWS && b->kw[nk].name; nk++) {
        const struct kwspec *s = &b->kw[nk];
        kw[nk] = s->kind == 'I' || s->kind == 'Z' ? (value){.kind = V_INIT, .init = {(cf_init_kind)s->def, 0}}
                                                  : num_value(s->def);
    }
    for (int k = 0; k < nkw; k++) {
        int j = 0;
        while (j < nk && strcmp(b->kw[j].name, kwn[k]) != 0) j++;
        if (j == nk) return unknown_keyword(c, en, e, b, nk, kwn[k]);
        const struct kwspec *s = &b->kw[j];
        const value *v = &kwv[k];
        double x = v->kind == V_NUM ? v->num : NAN;
        switch (s->kind) {
        case 'i':
            if (!(x == floor(x) && x >= s->lo && x <= 1e6))
                return ERR(c, en, e, "%s's %s must be a whole number of at least %g%s", b->name, s->name, s->lo,
                           s->note ? s->note : "");
            break;
        case 'b':
            if (x != 0 && x != 1) return ERR(c, en, e, "%s's %s is true or false", b->name, s->name);
            break;
        case 'n':
        case 'N':
            if (!(x > s->lo && (s->kind == 'n' ? x < s->hi : x <= s->hi)))
                return ERR(c, en, e, "%s's %s must be a number in (%g, %g%c", b->name, s->name, s->lo, s->hi,
                           s->kind == 'n' ? ')' : ']');
            break;
        case 'I':
            if (v->kind != V_INIT)
                return ERR(c, en, e, "%s must be an initialiser (glorot, zeros, ones, normal(std), uniform(a)), "
                           "not %s", s->name, cc_kind_name(v));
            break;
        default:   /* 'Z' */
            if (v->kind != V_INIT || (v->init.kind != CF_INIT_ZEROS && v->init.kind != CF_INIT_ONES))
                return ERR(c, en, e, "%s's %s must be zeros or ones", b->name, s->name);
        }
        kw[j] = *v;
    }
    return 0;
}

/* A call to b held to b's row: where it is made, its keywords (into kw), and its
 * positional arguments' count and kinds, values of a known shape. */
static int check_args(cc *c, env *en, const ast *e, const struct builtin *b, const value *args, int nargs,
                      const char **kwn, const value *kwv, int nkw, value *kw)
{
    const char *name = b->name, *kinds = b->args;
    if (b->where == 'b' && (!c->building || c->in_forward))
        return ERR(c, en, e, "%s(...) belongs in a net body, before the forward function", name);
    if ((b->where == 'f' || b->where == 'F') && !c->in_forward)
        return ERR(c, en, e, "%s(...) works on values inside a forward function%s%s%s", name,
                   b->where == 'F' ? "; in a Chain write just " : "", b->where == 'F' ? name : "",
                   b->hint ? b->hint : "");
    if (b->id != B_OP && check_keywords(c, en, e, b, kwn, kwv, nkw, kw)) return -1;   /* an op's: cc_op_call */
    int n = (int)strlen(kinds), many = kinds[n - 1] == '*', max = many ? MAX_ARGS : n;
    if (!b->usage && kinds[0] == 'v' && (nargs < 1 || args[0].kind != V_TENSOR))
        return ERR(c, en, e, "%s needs a value as its first argument%s", name, nargs ? "" : ": nothing was given");
    if (nargs < b->min || nargs > max) {
        if (b->usage) return ERR(c, en, e, "%s", b->usage);
        return ERR(c, en, e, "%s takes one value but was given %d arguments", name, nargs);
    }
    for (int k = 0; k < nargs; k++) {
        char want = kinds[k < n - many ? k : n - 2];
        vkind got = args[k].kind;
        if (want == 'v' ? got == V_TENSOR : want == 'n' ? got == V_NUM : want == 'm' ? got == V_MODEL ||
            got == V_PARTIAL : 1)
            continue;
        if (b->each)
            return ERR(c, en, e->items[k], "%s's argument %d must be a value, not %s", name, k + 1,
                       cc_kind_name(&args[k]));
        return ERR(c, en, e, "%s", b->usage);
    }
    for (int k = 0; k < nargs; k++)
        if (kinds[k < n - many ? k : n - 2] == 'v' && cc_is_unresolved(c, args[k].node))
            return cc_unresolved_error(c, en, e, args[k].node, name);
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
        if (j == na) return ERR(c, en, e, "%s has no argument named '%s'", name, kwn[k]);
        if (given[j]) return ERR(c, en, e, "%s's %s is given twice", name, kwn[k]);
        given[j] = &kwv[k];
    }
    double v[CF_OP_ATTRS];
    for (int j = 0; j < na; j++) {
        if (given[j] && given[j]->kind != V_NUM)
            return ERR(c, en, e, "the %s of %s must be a number", od->attrs[j].name, name);
        v[j] = given[j] ? given[j]->num : NAN;
    }
    int ia[CF_ATTR_INTS] = {0}, nia, nfa, bad;
    float fa[CF_ATTR_FLOATS] = {0};
    if ((bad = cf_attrs_decode(od, v, ia, &nia, fa, &nfa))) {
        const char *an = od->attrs[bad - 1].name;
        if (given[bad - 1]) return ERR(c, en, e, "the %s of %s must be a whole number", an, name);
        return ERR(c, en, e, "%s needs its %s: %s(x, %s = ...)", name, an, name, an);
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
    value kw[BUILTIN_KWS];
    if (check_args(c, en, e, b, args, nargs, kwn, kwv, nkw, kw)) return -1;
    if (b->id == B_OP) return cc_op_call(c, en, e, b->op, args, nargs, kwn, kwv, nkw, out);
    return b->call(c, en, e, b, args, nargs, kw, out);
}
