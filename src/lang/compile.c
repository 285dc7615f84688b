/* compile.c - the notation's meaning: evaluate a parsed file into a model's graph.
 *
 * Values at compile time are numbers, tensors (graph nodes, only while a forward
 * function runs), tuples, templates (nets), models (instances: a template's forward
 * function with its environment, a Chain, an Input, a lambda), built-in functions,
 * initialisers, parameters (declared in a net body, made into graph nodes when a
 * forward function first reads them, with their final names) and partial
 * instantiations (a template given all but its `in`, waiting inside a Chain).
 *
 * Two traces are kept as evaluation goes: the compiler's own frame stack, for errors
 * found while evaluating, and the model's scopes (cf_scope_begin_at), which every
 * graph node records, for shape errors. Both read like
 *     error: matrix product shapes do not match: (B, 20) * (21, 15)
 *       in Affine at <stdlib>/affine.flux:5:8
 *       in TLP at model.flux:5:14
 *       in model at model.flux:9:9 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"
#include "lang/compile.h"
#include "ops/op.h"

#define MAX_INSTANTIATION_DEPTH 64
/* Operations in one model; fuzzing builds lower it so that huge models cost little. */
#ifndef CF_MAX_MODEL_NODES
#define CF_MAX_MODEL_NODES 1000000
#endif
#define MAX_NODES CF_MAX_MODEL_NODES
/* Models made in one compile (nets, Chains, lambdas, nets waiting in a Chain): they are
 * made before their operations, and nested repeats multiply, so the operations' limit
 * alone comes too late. */
#define MAX_MODELS (MAX_NODES / 10)
#define MAX_ARGS 64

typedef struct value value;
typedef struct env env;
typedef struct inst inst;
typedef struct param param;
typedef struct partial partial;
typedef struct rstate rstate;

typedef enum vkind {
    V_NONE, V_NUM, V_TENSOR, V_TUPLE, V_TEMPLATE, V_MODEL, V_BUILTIN, V_INIT, V_PARAM, V_PARTIAL, V_STATE
} vkind;

struct value {
    vkind kind;
    union {
        double num;                                  /* V_NUM */
        cf_node *node;                               /* V_TENSOR */
        struct { value *items; int n; };             /* V_TUPLE */
        struct { const ast *net; env *defenv; };     /* V_TEMPLATE: the net and where it was defined */
        inst *model;                                 /* V_MODEL */
        int fn;                                      /* V_BUILTIN */
        cf_init init;                                /* V_INIT */
        param *param;                                /* V_PARAM */
        partial *partial;                            /* V_PARTIAL */
        rstate *state;                               /* V_STATE */
    };
};

struct env {
    env *parent;
    const char *file;    /* the source that code evaluated here comes from */
    const char **names;
    value *vals;
    const ast **where;   /* the binding, for "bound twice" */
    int n, cap;
};

typedef enum ikind { I_NET, I_LAMBDA, I_CHAIN, I_INPUT, I_UNROLL } ikind;

struct inst {
    ikind kind;
    const char *tname;        /* in traces: "Affine", "Chain", "Input", "lambda" */
    const ast *lambda;        /* I_NET, I_LAMBDA */
    env *env;
    value *items;             /* I_CHAIN; I_UNROLL: the model unrolled */
    const ast **item_ast;
    int n;                    /* I_CHAIN: items; I_UNROLL: steps */
    int stateful;             /* I_UNROLL */
    cf_shape shape;           /* I_INPUT, per sample */
    inst *parent;             /* placement: the first place that names it */
    const char *local;
    int placed;
    const char *file;         /* I_NET: where it was made */
    int line, col;
    struct tdecl *torch;      /* I_NET: its parameters in PyTorch (torch(...), or as is) */
    int ntorch, declared;
    int layer;                /* added to the model's layers */
};

/* One parameter of a net as PyTorch keeps it (cf_tmap before names are known). */
struct tdecl {
    param *p;
    cf_tform form;
    const char *src[2];
};

struct param {            /* a parameter, or a state (stat(...)) */
    int state;
    cf_shape shape;
    cf_init init;
    inst *owner;
    const char *local;
    cf_node *node;
    const char *file;
    int line, col;
};

/* A recurrent state (state(...) in a net body). While a model is built, `prev` is its
 * value at the previous step (NULL: its start) and `cur` the value assigned in this
 * step (NULL: none yet); unroll moves cur to prev after each step. Its start is a
 * carried leaf of the graph (cf_carry_at), made when first read. */
struct rstate {
    cf_shape shape;           /* per sample */
    cf_init init;
    inst *owner;
    const char *local;
    const char *file;
    int line, col;
    cf_node *start, *prev, *cur;
    int touched;              /* read or assigned since unroll last looked */
    rstate *next;             /* every state of the compile */
};

struct partial {
    value tmpl;
    value *args;              /* as many as the call has arguments, positional or not */
    const char **kwnames;
    value *kwvals;
    int nargs, nkw;
    const char *file;
    int line, col;
};

typedef struct frame {
    const char *name;
    const char *file;   /* where this frame was entered from (NULL for a top binding) */
    int line, col;
} frame;

typedef struct cc {
    cf_model *m;
    cf_arena arena;
    frame frames[MAX_INSTANTIATION_DEPTH * 4 + 8];
    int nframes, depth;
    int in_forward;
    inst *building;
    cf_node *unresolved[MAX_ARGS];
    int nunresolved;
    int shape_failed;   /* the last node made did not fit */
    int eval_depth;
    const ast *chain_elem;   /* the call being evaluated as an argument of Chain(...) */
    rstate *states;          /* every recurrent state made, newest first */
    int steps;               /* > 0: every unroll runs this many steps instead */
    int models;              /* made so far (MAX_MODELS) */
} cc;

/* ---- built-ins ---- */

/* The functions of one value that ops define (relu, softmax, ...: CF_CALL in the op
 * table) are found there, by their names; this table holds the rest, and aliases. */
enum {
    B_OP, B_RESHAPE, B_HCAT, B_PARAM, B_STAT, B_STATE, B_NORMAL, B_UNIFORM, B_INPUT, B_CHAIN, B_UNROLL,
    B_CONV2D, B_MAXPOOL, B_AVGPOOL, B_DROPOUT, B_BATCHNORM, B_CHUNK, B_EMBEDDING, B_LAYERNORM, B_GELU,
    B_SOFTMAX, B_TRANSPOSE, B_SQRT, B_REPEAT, B_POSITIONS
};

static const struct builtin {
    const char *name;
    int id;
    cf_opcode op;     /* for functions of one tensor */
    int unary;        /* usable as a Chain element / a model of one input */
} builtins[] = {
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
#define NBUILTINS ((int)(sizeof builtins / sizeof builtins[0]))

/* A built-in function by number: those of the table above, then from NBUILTINS on
 * the ops that the notation calls by name (NBUILTINS + opcode). */
static struct builtin builtin_at(int fn)
{
    if (fn < NBUILTINS) return builtins[fn];
    return (struct builtin){cf_ops[fn - NBUILTINS]->name, B_OP, (cf_opcode)(fn - NBUILTINS), 1};
}

/* The number of the built-in function `name`, or -1. */
static int builtin_find(const char *name)
{
    for (int i = 0; i < NBUILTINS; i++)
        if (strcmp(builtins[i].name, name) == 0) return i;
    for (int op = 0; op < CF_OP_COUNT_; op++)
        if (cf_ops[op] && (cf_ops[op]->flags & CF_CALL) && strcmp(cf_ops[op]->name, name) == 0) return NBUILTINS + op;
    return -1;
}

static const struct { const char *name; cf_init init; } inits[] = {
    {"glorot", {CF_INIT_GLOROT, 0}}, {"zeros", {CF_INIT_ZEROS, 0}}, {"ones", {CF_INIT_ONES, 0}},
};

/* ---- errors ---- */

/* Trace line k: frame nframes-1-k, at the place where (innermost) the error is or
 * (further out) the frame inside it was entered from. */
typedef struct {
    const cc *c;
    frame at;    /* the error's place (name unused) */
} trace_ctx;

static void trace_line(void *ctx, int k, char *buf)
{
    const trace_ctx *t = ctx;
    int i = t->c->nframes - 1 - k;
    const frame *at = k == 0 ? &t->at : &t->c->frames[i + 1];
    snprintf(buf, CF_TRACE_LINE, "  in %s at %s:%d:%d", t->c->frames[i].name, at->file, at->line, at->col);
}

/* "error: MSG" and a trace line per frame, innermost first, starting at file:line:col. */
static int cerr(cc *c, const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int cerr(cc *c, const char *file, int line, int col, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->nframes == 0) return cf_seterr("%s:%d:%d: error: %s", file, line, col, msg);
    trace_ctx t = {c, {NULL, file, line, col}};
    int n = 0;
    for (int i = c->nframes - 1; i >= 0 && file; i--, n++) file = c->frames[i].file;
    cf_seterr("error: %s", msg);
    cf_adderr_lines(n, trace_line, &t);
    return -1;
}

#define ERR(c, en, e, ...) cerr(c, (en)->file, (e)->line, (e)->col, __VA_ARGS__)

/* A frame in both traces: the compiler's and the graph's. */
static int enter(cc *c, const char *name, const char *file, int line, int col)
{
    if (c->nframes >= (int)(sizeof c->frames / sizeof c->frames[0]))
        return cerr(c, file, line, col, "calls nested deeper than %d (does a net use itself?)",
                    (int)(sizeof c->frames / sizeof c->frames[0]));
    c->frames[c->nframes++] = (frame){name, file, line, col};
    cf_scope_begin_at(c->m, name, NULL, file, line, col);
    return 0;
}

static void leave(cc *c)
{
    c->nframes--;
    cf_scope_end(c->m);
}

/* The edit distance of two short strings (bytes), for "did you mean". */
static int distance(const char *a, const char *b)
{
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 40 || lb > 40) return 99;
    int d[41][41];
    for (int i = 0; i <= la; i++) d[i][0] = i;
    for (int j = 0; j <= lb; j++) d[0][j] = j;
    for (int i = 1; i <= la; i++)
        for (int j = 1; j <= lb; j++) {
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

static void consider(const char *name, const char *cand, const char **best, int *bestd)
{
    int d = distance(name, cand);
    if (d < *bestd) {
        *bestd = d;
        *best = cand;
    }
}

static const char *suggest(const env *en, const char *name)
{
    const char *best = NULL;
    int bestd = 99;
    for (; en; en = en->parent)
        for (int i = 0; i < en->n; i++) consider(name, en->names[i], &best, &bestd);
    for (int i = 0; i < NBUILTINS; i++) consider(name, builtins[i].name, &best, &bestd);
    for (int op = 0; op < CF_OP_COUNT_; op++)
        if (cf_ops[op] && (cf_ops[op]->flags & CF_CALL)) consider(name, cf_ops[op]->name, &best, &bestd);
    for (int i = 0; i < 3; i++) consider(name, inits[i].name, &best, &bestd);
    int len = (int)strlen(name);
    return best && bestd <= (len < 4 ? 1 : len / 3 + 1) ? best : NULL;
}

/* ---- environments ---- */

static env *env_new(cc *c, env *parent, const char *file)
{
    env *en = cf_arena_alloc(&c->arena, sizeof *en);
    if (en) {
        en->parent = parent;
        en->file = file ? file : parent ? parent->file : "?";
    }
    return en;
}

static int bind(cc *c, env *en, const char *name, value v, const ast *where)
{
    if (en->n == en->cap) {
        int cap = en->cap ? en->cap * 2 : 4;
        const char **names = cf_arena_alloc(&c->arena, (size_t)cap * sizeof *names);
        value *vals = cf_arena_alloc(&c->arena, (size_t)cap * sizeof *vals);
        const ast **wh = cf_arena_alloc(&c->arena, (size_t)cap * sizeof *wh);
        if (!names || !vals || !wh) return cf_oom((size_t)cap * sizeof *vals);
        if (en->n) {
            memcpy(names, en->names, (size_t)en->n * sizeof *names);
            memcpy(vals, en->vals, (size_t)en->n * sizeof *vals);
            memcpy(wh, en->where, (size_t)en->n * sizeof *wh);
        }
        en->names = names;
        en->vals = vals;
        en->where = wh;
        en->cap = cap;
    }
    en->names[en->n] = name;
    en->vals[en->n] = v;
    en->where[en->n] = where;
    en->n++;
    return 0;
}

/* The binding of name in en itself (not its parents), or -1. */
static int local_index(const env *en, const char *name)
{
    for (int i = en->n - 1; i >= 0; i--)
        if (strcmp(en->names[i], name) == 0) return i;
    return -1;
}

static const value *lookup(const env *en, const char *name)
{
    for (; en; en = en->parent) {
        int i = local_index(en, name);
        if (i >= 0) return &en->vals[i];
    }
    return NULL;
}

/* ---- values ---- */

static value num_value(double x) { return (value){.kind = V_NUM, .num = x}; }
static value tensor_value(cf_node *n) { return (value){.kind = V_TENSOR, .node = n}; }
static value model_value(inst *i) { return (value){.kind = V_MODEL, .model = i}; }

static const char *kind_name(const value *v)
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
static int count_model(cc *c, const char *file, int line, int col)
{
    if (++c->models > MAX_MODELS)
        return cerr(c, file, line, col, "the model makes more than %d nets, Chains and functions (repeats "
                    "inside repeats, and nets that make several of another, multiply)", MAX_MODELS);
    return 0;
}

static inst *inst_new(cc *c, ikind kind, const char *tname, const char *file, int line, int col)
{
    if (count_model(c, file, line, col)) return NULL;
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
static void place(inst *i, inst *parent, const char *local)
{
    if (!i || i->placed || i == parent) return;
    i->placed = 1;
    i->parent = parent;
    i->local = local;
}

/* A number that must be a positive integer dimension. */
static int dim_of(cc *c, env *en, const ast *e, const value *v, const char *what, int *out)
{
    if (v->kind != V_NUM)
        return ERR(c, en, e, "%s must be a number, not %s", what, kind_name(v));
    if (!(v->num >= 1 && v->num <= 1e9) || v->num != (double)(long)v->num) {
        const value *a, *b;   /* in / heads: say which number does not divide which */
        if (e->kind == AST_BINOP && e->op == OP_DIV && e->a->kind == AST_NAME && e->b->kind == AST_NAME &&
            (a = lookup(en, e->a->name)) && (b = lookup(en, e->b->name)) && a->kind == V_NUM && b->kind == V_NUM)
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
static int made(cc *c, const env *en, const ast *e, cf_node *n)
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

static int is_unresolved(cc *c, const cf_node *n)
{
    for (int i = 0; i < c->nunresolved; i++)
        if (c->unresolved[i] == n) return 1;
    return 0;
}

/* Give an input of unknown shape the per-sample shape s. */
static void resolve(cc *c, cf_node *n, cf_shape s)
{
    n->shape.rank = s.rank + 1;
    n->shape.d[0] = CF_BATCH;
    for (int i = 0; i < s.rank; i++) n->shape.d[i + 1] = s.d[i];
    n->batched = 1;
    for (int i = 0; i < c->nunresolved; i++)
        if (c->unresolved[i] == n) c->unresolved[i] = c->unresolved[--c->nunresolved];
}

static int unresolved_error(cc *c, const env *en, const ast *e, const cf_node *n, const char *what)
{
    return ERR(c, en, e, "cannot tell the shape of the input '%s' from %s: begin the model with Input(...)",
               n->name, what);
}

/* Before a two-input op: an input of unknown shape takes its shape from the other
 * operand (x * W: (B, rows of W); x + b: b's per-sample shape). */
static int resolve_pair(cc *c, const env *en, const ast *e, cf_opcode op, cf_node *a, cf_node *b)
{
    int ua = is_unresolved(c, a), ub = is_unresolved(c, b);
    if (!ua && !ub) return 0;
    if (ua && ub) return unresolved_error(c, en, e, a, "an operation on two inputs");
    cf_node *u = ua ? a : b, *k = ua ? b : a;
    cf_shape s = k->shape;
    if (op == CF_OP_MATMUL) {
        if (!ua || k->shape.rank != 2 || k->batched) return unresolved_error(c, en, e, u, "this product");
        resolve(c, u, (cf_shape){1, {k->shape.d[0]}});
        return 0;
    }
    if (k->batched) {   /* drop the batch dimension */
        s.rank--;
        memmove(s.d, s.d + 1, (size_t)s.rank * sizeof s.d[0]);
    } else if (s.rank >= 1) {
        s = (cf_shape){1, {s.d[s.rank - 1]}};
    } else {
        return unresolved_error(c, en, e, u, "an operation with a number");
    }
    resolve(c, u, s);
    return 0;
}

/* A number as a graph constant. */
static cf_node *as_node(cc *c, env *en, const ast *e, const value *v)
{
    if (v->kind == V_TENSOR) return v->node;
    cf_node *n = cf_scalar_at(c->m, (float)v->num, en->file, e->line, e->col);
    return made(c, en, e, n) ? NULL : n;
}

static int unary_node(cc *c, env *en, const ast *e, cf_opcode op, const value *x, float a, value *out)
{
    if (x->kind != V_TENSOR)
        return ERR(c, en, e, "%s needs a value, not %s", cf_ops[op]->what, kind_name(x));
    if (is_unresolved(c, x->node)) return unresolved_error(c, en, e, x->node, cf_ops[op]->name);
    cf_node *n = cf_unary_at(c->m, op, x->node, a, en->file, e->line, e->col);
    if (made(c, en, e, n)) return -1;
    *out = tensor_value(n);
    return 0;
}

/* ---- evaluation ---- */

static int eval(cc *c, env *en, const ast *e, value *out);
static int call_model(cc *c, inst *mdl, value *args, int nargs, const char *file, int line, int col, value *out);
static int instantiate(cc *c, const value *tmpl, value *args, int nargs, const char **kwn, value *kwv, int nkw,
                       const char *file, int line, int col, int in_chain, value *out);


/* The full name of what a net instance declares: "outer.inner.W". 0, or -1 with the
 * message when it is too long. */
static int full_name(const inst *owner, const char *local, const char *file, int line, int col, char *name,
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
        if (full_name(owner, t->p->local, t->p->file, t->p->line, t->p->col, names[n], sizeof names[n])) return -1;
        maps[n] = (cf_tmap){names[n], t->form, {t->src[0], t->src[1]}};
        n++;
    }
    cf_layer l = {.prefix = prefix, .seq = seq, .tname = owner->tname, .loc = {owner->file, owner->line, owner->col},
                  .declared = owner->declared, .maps = maps, .nmaps = n};
    return cf_model_add_layer(c->m, &l);
}

/* A net's torch(P = weight, Q = transpose(weight), R = bias_ih + bias_hh, ...): how
 * PyTorch keeps each of its parameters and running statistics. Without one, each is
 * kept under its own name, as is. */
static int torch_decl(cc *c, env *body, inst *self, const ast *decl)
{
    int n = 0;
    for (int i = 0; i < body->n; i++)
        n += body->vals[i].kind == V_PARAM && body->vals[i].param->owner == self;
    if (n > MAX_ARGS) return cerr(c, body->file, self->line, self->col, "a net with more than %d parameters", MAX_ARGS);
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
        const value *p = local_index(body, kw->name) >= 0 ? lookup(body, kw->name) : NULL;
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

static int param_node(cc *c, param *p, value *out)
{
    if (!p->node) {
        char name[512];
        if (full_name(p->owner, p->local ? p->local : p->state ? "stat" : "param", p->file, p->line, p->col, name,
                      sizeof name))
            return -1;
        p->node = p->state ? cf_state_at(c->m, name, p->shape, p->init, p->file, p->line, p->col)
                           : cf_param_at(c->m, name, p->shape, p->init, p->file, p->line, p->col);
        if (!p->node || (p->owner && add_layer(c, p->owner))) return -1;
    }
    *out = tensor_value(p->node);
    return 0;
}

/* Make a state's start, its carried leaf, when first needed. */
static int state_start(cc *c, rstate *st, env *en, const ast *e)
{
    if (st->start) return 0;
    char name[512];
    if (full_name(st->owner, st->local ? st->local : "state", st->file, st->line, st->col, name, sizeof name))
        return -1;
    st->start = cf_carry_at(c->m, name, st->shape, st->init, st->file, st->line, st->col);
    return made(c, en, e, st->start);
}

/* y{-1}: a state's value at the previous step, or its start (a carried leaf). */
static int state_prev(cc *c, env *en, const ast *e, value *out)
{
    const value *v = lookup(en, e->name);
    if (!v)
        return ERR(c, en, e, "%s{%g}: there is no state named '%s'; declare it in the net body with %s = state(...)",
                   e->name, e->num, e->name, e->name);
    if (v->kind != V_STATE)
        return ERR(c, en, e, "%s{%g}: '%s' is %s, not a state; declare it in the net body with %s = state(...)",
                   e->name, e->num, e->name, kind_name(v), e->name);
    if (e->num != -1)
        return ERR(c, en, e, "%s{%g}: only the previous step, %s{-1}, can be read", e->name, e->num, e->name);
    if (!c->in_forward) return ERR(c, en, e, "%s{-1} is read inside a forward function", e->name);
    rstate *st = v->state;
    st->touched = 1;
    if (st->prev) {
        *out = tensor_value(st->prev);
        return 0;
    }
    if (state_start(c, st, en, e)) return -1;
    *out = tensor_value(st->start);
    return 0;
}

/* name = value, where name is a state: its value for this step. */
static int state_assign(cc *c, env *en, const ast *s, rstate *st, const value *v)
{
    if (v->kind != V_TENSOR)
        return ERR(c, en, s, "the state '%s' is set to a value, not to %s", s->name, kind_name(v));
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

static int eval_name(cc *c, env *en, const ast *e, value *out)
{
    const value *v = lookup(en, e->name);
    if (v) {
        if (v->kind == V_PARAM && c->in_forward) return param_node(c, v->param, out);
        if (v->kind == V_STATE && c->in_forward) {
            if (!v->state->cur)
                return ERR(c, en, e, "'%s' is a state: read its previous step as %s{-1}, or set it first (%s = ...)",
                           e->name, e->name, e->name);
            *out = tensor_value(v->state->cur);
            return 0;
        }
        *out = *v;
        return 0;
    }
    int fn = builtin_find(e->name);
    if (fn >= 0) {
        *out = (value){.kind = V_BUILTIN, .fn = fn};
        return 0;
    }
    for (int i = 0; i < 3; i++)
        if (strcmp(inits[i].name, e->name) == 0) {
            *out = (value){.kind = V_INIT, .init = inits[i].init};
            return 0;
        }
    if (strcmp(e->name, "true") == 0 || strcmp(e->name, "false") == 0) {
        *out = num_value(e->name[0] == 't');
        return 0;
    }
    const char *s = suggest(en, e->name);
    if (s) return ERR(c, en, e, "unknown name '%s' (did you mean '%s'?)", e->name, s);
    return ERR(c, en, e, "unknown name '%s'", e->name);
}

/* a op b, with a and b evaluated. */
static int binop_values(cc *c, env *en, const ast *e, value a, value b, value *out)
{
    static const char *sym[] = {"+", "-", "*", ".*", "./", ".+", ".-", "/"};
    const char *op = sym[e->op];
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
        return ERR(c, en, e, "'%s' needs numbers or values, but got %s and %s%s", op, kind_name(&a), kind_name(&b),
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
    cf_node *na = as_node(c, en, e, &a), *nb = na ? as_node(c, en, e, &b) : NULL;
    if (!nb) return -1;
    if (resolve_pair(c, en, e, code, na, nb)) return -1;
    cf_node *n = cf_binary_at(c->m, code, na, nb, en->file, e->line, e->col);
    if (made(c, en, e, n)) return -1;
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
    int rc = eval(c, en, leftmost, &acc);
    for (int i = 0; i < n && rc == 0; i++) {
        value b;
        rc = eval(c, en, spine[i]->b, &b);
        if (rc == 0) rc = binop_values(c, en, spine[i], acc, b, &acc);
    }
    free(spine);
    *out = acc;
    return rc;
}

static int eval_block(cc *c, env *en, const ast *e, value *out)
{
    env *inner = env_new(c, en, NULL);
    if (!inner) return cf_oom(sizeof *inner);
    for (int i = 0; i < e->n; i++) {
        const ast *s = e->items[i];
        if (s->kind == AST_ASSIGN) {
            value v;
            const value *old = lookup(inner, s->name);
            if (eval(c, inner, s->a, &v)) return -1;
            if (old && old->kind == V_STATE && c->in_forward) {
                if (state_assign(c, inner, s, old->state, &v)) return -1;
            } else if (bind(c, inner, s->name, v, s)) {
                return -1;
            }
            if (i == e->n - 1) *out = v;
        } else if (eval(c, inner, s, out)) {
            return -1;
        }
    }
    return 0;
}

/* The arguments of a call to a net that reach its parameters without a default: npos
 * positional ones and the keywords that name such a parameter; *required is how many
 * such parameters the net has. A Chain fills in the input size when the net's first
 * parameter is named `in`, no keyword names `in` and the call gives one fewer. */
static int given_required(const ast *net, int npos, const char *const *kwn, int nkw, int *required)
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

static int names_in(const char *const *kwn, int nkw)
{
    for (int q = 0; q < nkw; q++)
        if (strcmp(kwn[q], "in") == 0) return 1;
    return 0;
}

static int first_is_in(const ast *net) { return net->n > 0 && strcmp(net->items[0]->name, "in") == 0; }

/* Evaluate call arguments: positional into args, keyword into kwn/kwv. */
static int eval_args(cc *c, env *en, const ast *e, value *args, int *nargs, const char **kwn, value *kwv, int *nkw,
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
            if (eval(c, en, a->a, &kwv[(*nkw)++])) return -1;
            continue;
        }
        if (*nkw) return ERR(c, en, a, "a positional argument after keyword arguments");
        const ast *x = a;
        value *v = &args[(*nargs)++];
        /* Chain(Affine(128)): a template one argument short of its `in` waits for it */
        if (allow_partial && x->kind == AST_CALL && x->n <= MAX_ARGS) {
            value callee;
            if (eval(c, en, x->a, &callee)) return -1;
            if (callee.kind == V_TEMPLATE && callee.net->n > 0) {
                const char *names[MAX_ARGS];
                int npos = 0, nnamed = 0, required;
                for (int k = 0; k < x->n; k++) {
                    if (x->items[k]->kind == AST_KWARG) names[nnamed++] = x->items[k]->name;
                    else npos++;
                }
                int given = given_required(callee.net, npos, names, nnamed, &required);
                if (first_is_in(callee.net) && callee.net->items[0]->kind == AST_NAME && !names_in(names, nnamed) &&
                    given == required - 1) {
                    if (count_model(c, en->file, x->line, x->col)) return -1;
                    partial *p = cf_arena_alloc(&c->arena, sizeof *p);
                    if (!p) return cf_oom(sizeof *p);
                    p->args = cf_arena_alloc(&c->arena, (size_t)x->n * sizeof *p->args);
                    p->kwvals = cf_arena_alloc(&c->arena, (size_t)x->n * sizeof *p->kwvals);
                    p->kwnames = cf_arena_alloc(&c->arena, (size_t)x->n * sizeof *p->kwnames);
                    if (!p->args || !p->kwvals || !p->kwnames) return -1;
                    p->tmpl = callee;
                    if (eval_args(c, en, x, p->args, &p->nargs, p->kwnames, p->kwvals, &p->nkw, 0)) return -1;
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
        int rc = eval(c, en, x, v);
        c->chain_elem = outer;
        if (rc) return -1;
    }
    return 0;
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
        if (dim_of(c, en, e->items[i], &args[i], w, &s->d[i - from])) return -1;
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
            return ERR(c, en, e->items[k], "conv2d's argument %d must be a value, not %s", k + 1, kind_name(&args[k]));
        if (is_unresolved(c, args[k].node)) return unresolved_error(c, en, e, args[k].node, "conv2d");
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
    if (made(c, en, e, n)) return -1;
    if (nargs == 3) {
        n = cf_binary_at(c->m, CF_OP_ADD, n, args[2].node, en->file, e->line, e->col);
        if (made(c, en, e, n)) return -1;
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
    if (is_unresolved(c, args[0].node)) return unresolved_error(c, en, e, args[0].node, fname);
    int k = 0, v[2] = {0, 0};   /* stride (0: the window), pad */
    if (dim_of(c, en, e->items[1], &args[1], "the window's size", &k)) return -1;
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
    if (made(c, en, e, n)) return -1;
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
    if (is_unresolved(c, args[0].node)) return unresolved_error(c, en, e, args[0].node, "dropout");
    if (args[1].num == 0) {   /* nothing dropped: x itself, no copy */
        *out = args[0];
        return 0;
    }
    float p = (float)args[1].num;
    cf_node *n = cf_op_at(c->m, CF_OP_DROPOUT, 1, &args[0].node, NULL, 0, &p, 1, en->file, e->line, e->col);
    if (made(c, en, e, n)) return -1;
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
        if (is_unresolved(c, args[k].node)) return unresolved_error(c, en, e, args[k].node, "embedding");
    cf_node *n = cf_binary_at(c->m, CF_OP_EMBEDDING, args[0].node, args[1].node, en->file, e->line, e->col);
    if (made(c, en, e, n)) return -1;
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
                       kind_name(&args[k]));
        if (is_unresolved(c, args[k].node)) return unresolved_error(c, en, e, args[k].node, "batchnorm");
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
    if (made(c, en, e, n)) return -1;
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
                       kind_name(&args[k]));
        if (is_unresolved(c, args[k].node)) return unresolved_error(c, en, e, args[k].node, "layernorm");
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
    if (made(c, en, e, n)) return -1;
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
    return unary_node(c, en, e, CF_OP_GELU, &args[0], exact, out);
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
    return unary_node(c, en, e, CF_OP_SOFTMAX, &args[0], causal, out);
}

/* chunk(x, k, n): part k (from 1) of n equal parts of x's last dimension. */
static int chunk_call(cc *c, env *en, const ast *e, value *args, int nargs, int nkw, const char **kwn, value *out)
{
    if (no_keywords(c, en, e, "chunk", nkw, kwn)) return -1;
    if (nargs != 3 || args[0].kind != V_TENSOR)
        return ERR(c, en, e, "chunk takes a value, a part and a number of parts: chunk(z, 2, 4)");
    if (is_unresolved(c, args[0].node)) return unresolved_error(c, en, e, args[0].node, "chunk");
    int k, n;
    if (dim_of(c, en, e->items[1], &args[1], "chunk's part", &k) || dim_of(c, en, e->items[2], &args[2],
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
    if (made(c, en, e, r)) return -1;
    *out = tensor_value(r);
    return 0;
}

static int call_builtin(cc *c, env *en, const ast *e, int fi, value *args, int nargs, const char **kwn, value *kwv,
                        int nkw, value *out);

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
    if (is_unresolved(c, args[0].node)) return unresolved_error(c, en, e, args[0].node, "transpose");
    cf_node *n = cf_op_at(c->m, CF_OP_TRANSPOSE, 1, &args[0].node, d, 2, NULL, 0, en->file, e->line, e->col);
    if (made(c, en, e, n)) return -1;
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
        if (is_unresolved(c, args[k].node)) return unresolved_error(c, en, e, args[k].node, "positions");
    const cf_node *P = args[0].node, *x = args[1].node;
    char sp[96], sx[96];
    if (P->batched || P->shape.rank != 2)
        return ERR(c, en, e, "positions' table must be a matrix (context, d), not %s", cf_shape_str(P->shape, sp, sizeof sp));
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
    if (made(c, en, e, n)) return -1;
    *out = tensor_value(n);
    return 0;
}

/* repeat(m, n): a Chain of n models, the expression m evaluated n times, so that each
 * is made afresh with parameters of its own: repeat(TransformerBlock(heads = 4), 6). */
static int repeat_call(cc *c, env *en, const ast *e, value *out)
{
    static const char *usage = "repeat takes a model and a count: repeat(TransformerBlock(heads = 4), 6)";
    if (e->n != 2 || e->items[0]->kind == AST_KWARG || e->items[1]->kind == AST_KWARG) return ERR(c, en, e, "%s", usage);
    value nv;
    int n;
    if (eval(c, en, e->items[1], &nv) || dim_of(c, en, e->items[1], &nv, "repeat's count", &n)) return -1;
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
    if (eval_args(c, en, &chain, args, &nargs, kwn, kwv, &nkw, 1)) goto out;
    if (n > 1 && args[0].kind == V_MODEL && args[1].kind == V_MODEL && args[0].model == args[1].model) {
        rc = ERR(c, en, e->items[0], "repeat would use this one model %d times, its parameters shared; give the "
                 "call that makes it, as in repeat(TransformerBlock(heads = 4), %d)", n, n);
        goto out;
    }
    if (n > 1 && args[0].kind == V_TENSOR) {
        rc = ERR(c, en, e->items[0], "%s", usage);
        goto out;
    }
    rc = call_builtin(c, en, &chain, builtin_find("Chain"), args, nargs, kwn, kwv, 0, out);
out:
    free(args);
    free(kwn);
    return rc;
}

/* An op's function of one value, with the numbers its row declares (cf_opdef.attrs)
 * after the value, by position or by name: leakyrelu(x, 0.2), clamp(x, lo = 0). */
static int op_call(cc *c, env *en, const ast *e, cf_opcode op, value *args, int nargs, const char **kwn, value *kwv,
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
            if (v != floor(v) || fabs(v) > 1e9) return ERR(c, en, e, "the %s of %s must be a whole number", d->name, name);
            ia[d->slot] = (int)v;
            if (d->slot + 1 > nia) nia = d->slot + 1;
        } else {
            fa[d->slot] = (float)v;
            if (d->slot + 1 > nfa) nfa = d->slot + 1;
        }
    }
    if (args[0].kind != V_TENSOR) return ERR(c, en, e, "%s needs a value, not %s", od->what, kind_name(&args[0]));
    if (is_unresolved(c, args[0].node)) return unresolved_error(c, en, e, args[0].node, name);
    cf_node *n = cf_op_at(c->m, op, 1, &args[0].node, ia, nia, fa, nfa, en->file, e->line, e->col);
    if (made(c, en, e, n)) return -1;
    *out = tensor_value(n);
    return 0;
}

static int call_builtin(cc *c, env *en, const ast *e, int fi, value *args, int nargs, const char **kwn, value *kwv,
                        int nkw, value *out)
{
    const struct builtin bf = builtin_at(fi), *b = &bf;
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
                const char *s = distance(kwn[k], "init") <= 2 ? " (did you mean 'init'?)" : "";
                return ERR(c, en, e, "%s has no argument named '%s'%s", what, kwn[k], s);
            }
            if (kwv[k].kind != V_INIT)
                return ERR(c, en, e, "init must be an initialiser (glorot, zeros, ones, normal(std), uniform(a)), not %s",
                           kind_name(&kwv[k]));
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
        *out = (value){.kind = V_INIT, .init = {b->id == B_NORMAL ? CF_INIT_NORMAL : CF_INIT_UNIFORM, (float)args[0].num}};
        return 0;
    }
    case B_INPUT: {
        if (no_keywords(c, en, e, "Input", nkw, kwn)) return -1;
        inst *i = inst_new(c, I_INPUT, "Input", en->file, e->line, e->col);   /* Input(): one number a sample */
        if (!i || dims_of(c, en, e, args, nargs, 0, &i->shape, "Input", CF_MAX_DIMS - 1)) return -1;
        if (!cf_shape_count_checked(i->shape))
            return ERR(c, en, e, "Input is too large: more than 2^36 elements per sample");
        *out = model_value(i);
        return 0;
    }
    case B_CHAIN: {
        if (no_keywords(c, en, e, "Chain", nkw, kwn)) return -1;
        if (nargs == 0) return ERR(c, en, e, "Chain needs at least one model");
        inst *i = inst_new(c, I_CHAIN, "Chain", en->file, e->line, e->col);
        if (!i) return -1;
        i->env = en;   /* where its elements were written */
        i->items = cf_arena_alloc(&c->arena, (size_t)nargs * sizeof *i->items);
        i->item_ast = cf_arena_alloc(&c->arena, (size_t)nargs * sizeof *i->item_ast);
        if (!i->items || !i->item_ast) return cf_oom((size_t)nargs * sizeof *i->items);
        i->n = nargs;
        for (int k = 0; k < nargs; k++) {
            value *v = &args[k];
            const ast *a = e->items[k];
            int ok = v->kind == V_MODEL || v->kind == V_PARTIAL || (v->kind == V_BUILTIN && builtin_at(v->fn).unary);
            if (!ok)
                return ERR(c, en, a, "a Chain element must be a model or a function like relu, not %s%s%s%s",
                           kind_name(v), v->kind == V_TEMPLATE ? " (give its arguments: " : "",
                           v->kind == V_TEMPLATE ? v->net->name : "", v->kind == V_TEMPLATE ? "(...))" : "");
            if (v->kind == V_MODEL && v->model->kind == I_INPUT && k > 0)
                return ERR(c, en, a, "Input must come first in a Chain");
            i->items[k] = *v;
            i->item_ast[k] = a;
            if (v->kind == V_MODEL) {
                char *local = cf_arena_alloc(&c->arena, 12);
                if (!local) return cf_oom(12);
                snprintf(local, 12, "%d", k);
                place(v->model, i, local);
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
        inst *i = inst_new(c, I_UNROLL, "unroll", en->file, e->line, e->col);
        if (!i || dim_of(c, en, e->items[1], &args[1], "unroll's number of steps", &i->n)) return -1;
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
        place(args[0].model, i, NULL);
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
            if (args[k].kind != V_TENSOR) return ERR(c, en, e->items[k], "hcat joins values, not %s", kind_name(&args[k]));
            if (is_unresolved(c, args[k].node)) return unresolved_error(c, en, e, args[k].node, "hcat");
            xs[k] = args[k].node;
        }
        cf_node *n = cf_concat_at(c->m, -1, nargs, xs, en->file, e->line, e->col);
        if (made(c, en, e, n)) return -1;
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
            if (dim_of(c, en, e->items[k], &args[k], "a reshape dimension", &s.d[k - 1])) return -1;
        }
        if (is_unresolved(c, args[0].node)) return unresolved_error(c, en, e, args[0].node, "reshape");
        cf_node *n = cf_reshape_at(c->m, args[0].node, s, en->file, e->line, e->col);
        if (made(c, en, e, n)) return -1;
        *out = tensor_value(n);
        return 0;
    }
    return op_call(c, en, e, b->op, args, nargs, kwn, kwv, nkw, out);
}

static int eval_call_with(cc *c, env *en, const ast *e, const value *callee, value *args, value *kwv,
                          const char **kwn, value *out);

static int eval_call(cc *c, env *en, const ast *e, value *out)
{
    value callee;
    if (eval(c, en, e->a, &callee)) return -1;
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
    int chain = callee.kind == V_BUILTIN && builtin_at(callee.fn).id == B_CHAIN;
    if (callee.kind == V_BUILTIN && builtin_at(callee.fn).id == B_REPEAT) return repeat_call(c, en, e, out);
    if (eval_args(c, en, e, args, &nargs, kwn, kwv, &nkw, chain)) return -1;
    switch (callee.kind) {
    case V_BUILTIN: return call_builtin(c, en, e, callee.fn, args, nargs, kwn, kwv, nkw, out);
    case V_TEMPLATE:
        if (c->in_forward)
            return ERR(c, en, e, "%s(...) makes new parameters: make it in the net body (name = %s(...)), "
                       "not in the forward function", callee.net->name, callee.net->name);
        return instantiate(c, &callee, args, nargs, kwn, kwv, nkw, en->file, e->line, e->col, e == c->chain_elem,
                           out);
    case V_MODEL:
        if (!c->in_forward)
            return ERR(c, en, e, "a model is applied to values inside a forward function (x -> m(x))");
        if (nkw) return ERR(c, en, e, "a model takes no keyword arguments");
        return call_model(c, callee.model, args, nargs, en->file, e->line, e->col, out);
    default:
        return ERR(c, en, e, "%s cannot be called", kind_name(&callee));
    }
}

#define MAX_EVAL_DEPTH 1000

static int eval_at(cc *c, env *en, const ast *e, value *out);

static int eval(cc *c, env *en, const ast *e, value *out)
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
    case AST_NAME: return eval_name(c, en, e, out);
    case AST_BINOP: return eval_binop(c, en, e, out);
    case AST_NEG: {
        value x;
        if (eval(c, en, e->a, &x)) return -1;
        if (x.kind == V_NUM) {
            *out = num_value(-x.num);
            return 0;
        }
        return unary_node(c, en, e, CF_OP_NEG, &x, 0, out);
    }
    case AST_TUPLE: {
        value *items = cf_arena_alloc(&c->arena, (size_t)e->n * sizeof *items);
        if (!items) return cf_oom((size_t)e->n * sizeof *items);
        for (int i = 0; i < e->n; i++)
            if (eval(c, en, e->items[i], &items[i])) return -1;
        *out = (value){.kind = V_TUPLE, .items = items, .n = e->n};
        return 0;
    }
    case AST_LAMBDA: {
        inst *i = inst_new(c, I_LAMBDA, "lambda", en->file, e->line, e->col);
        if (!i) return -1;
        i->lambda = e;
        i->env = en;
        *out = model_value(i);
        return 0;
    }
    case AST_BLOCK: return eval_block(c, en, e, out);
    case AST_CALL: return eval_call(c, en, e, out);
    case AST_PREV: return state_prev(c, en, e, out);
    case AST_ASSIGN: return ERR(c, en, e, "an assignment is not a value");
    default: return ERR(c, en, e, "this is not an expression");
    }
}

/* ---- nets and models ---- */

static int instantiate(cc *c, const value *tmpl, value *args, int nargs, const char **kwn, value *kwv, int nkw,
                       const char *file, int line, int col, int in_chain, value *out)
{
    const ast *net = tmpl->net;
    env *body = env_new(c, tmpl->defenv, NULL);
    if (!body) return cf_oom(sizeof *body);
    if (c->depth >= MAX_INSTANTIATION_DEPTH)
        return cerr(c, file, line, col, "nets nested deeper than %d (does %s make itself?)", MAX_INSTANTIATION_DEPTH,
                    net->name);
    inst *self = inst_new(c, I_NET, net->name, file, line, col);
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
        return cerr(c, file, line, col, "%s takes %d argument%s (%s) but was given %d", net->name, np,
                    np == 1 ? "" : "s", list, nargs);
    }
    for (int k = 0; k < nkw; k++) {
        int found = 0;
        for (int p = 0; p < np; p++) found |= strcmp(net->items[p]->name, kwn[k]) == 0;
        if (!found) {
            const char *best = NULL;
            int bestd = 99;
            for (int p = 0; p < np; p++) consider(kwn[k], net->items[p]->name, &best, &bestd);
            if (best && bestd <= 2)
                return cerr(c, file, line, col, "%s has no parameter '%s' (did you mean '%s'?)", net->name, kwn[k], best);
            return cerr(c, file, line, col, "%s has no parameter '%s'", net->name, kwn[k]);
        }
    }
    /* every parameter given once, or with a default: checked at the call, outside */
    for (int p = 0; p < np; p++) {
        const ast *par = net->items[p];
        int k = -1;
        for (int q = 0; q < nkw; q++)
            if (strcmp(kwn[q], par->name) == 0) k = q;
        if (p < nargs && k >= 0)
            return cerr(c, file, line, col, "%s: the argument '%s' is given twice", net->name, par->name);
        if (p >= nargs && k < 0 && par->kind != AST_KWARG) {
            /* one short: did the caller expect a Chain to fill in the input size? */
            int required, short_one = given_required(net, nargs, kwn, nkw, &required) == required - 1;
            int sizes = 1;
            for (int q = 0; q < nargs; q++) sizes &= args[q].kind == V_NUM;
            if (short_one && !in_chain && first_is_in(net) && !names_in(kwn, nkw))
                return cerr(c, file, line, col,
                            "%s is missing the argument '%s' (leaving out 'in' works only inside a Chain, which "
                            "knows the input size)", net->name, par->name);
            if (short_one && in_chain && !first_is_in(net) && sizes)
                return cerr(c, file, line, col,
                            "%s is missing the argument '%s' (a Chain fills in the input size only for a net whose "
                            "first parameter is named 'in'; %s's first parameter is '%s')",
                            net->name, par->name, net->name, net->items[0]->name);
            return cerr(c, file, line, col, "%s is missing the argument '%s'", net->name, par->name);
        }
    }
    if (enter(c, net->name, file, line, col)) return -1;
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
        else if (eval(c, body, par->a, &v)) goto done;   /* the default */
        if (v.kind == V_MODEL) place(v.model, self, par->name);
        if (bind(c, body, par->name, v, par)) goto done;
    }
    /* the body's bindings, then its forward function */
    const ast *blk = net->a, *decl = NULL;
    for (int i = 0; i < blk->n - 1; i++) {
        const ast *s = blk->items[i];
        value v;
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
        if (local_index(body, s->name) >= 0) {
            int j = local_index(body, s->name);
            const ast *w = body->where[j];
            ERR(c, body, s, "'%s' is bound twice in %s (first at %d:%d)", s->name, net->name, w->line, w->col);
            goto done;
        }
        if (eval(c, body, s->a, &v)) goto done;
        if (v.kind == V_PARAM && !v.param->local && v.param->owner == self) v.param->local = s->name;
        if (v.kind == V_STATE && !v.state->local && v.state->owner == self) v.state->local = s->name;
        if (v.kind == V_MODEL) place(v.model, self, s->name);
        if (bind(c, body, s->name, v, s)) goto done;
    }
    if (torch_decl(c, body, self, decl)) goto done;
    self->lambda = blk->items[blk->n - 1];
    self->env = body;
    *out = model_value(self);
    rc = 0;
done:
    c->building = outer;
    c->in_forward = was_forward;
    c->depth--;
    leave(c);
    return rc;
}

/* The size a Chain passes to a template's `in`: the channels of an image
 * (B, C, H, W), else the last dimension. */
static int features_from(cf_shape s, int first)   /* a sample's dims start at d[first] */
{
    if (s.rank - first == 3) return s.d[first];   /* an image (C, H, W) */
    if (s.rank - first == 0) return 1;
    return s.rank ? s.d[s.rank - 1] : 1;
}

static int feature_size(const cf_node *x)
{
    return x->batched ? features_from(x->shape, 1) : x->shape.rank ? x->shape.d[x->shape.rank - 1] : 1;
}

/* Chain item pos, a template waiting for its input size, made for values of
 * `features` (once: later calls reuse it). */
static int make_partial(cc *c, inst *chain, int pos, int features, value *out)
{
    partial *p = chain->items[pos].partial;
    value args[MAX_ARGS + 1];
    args[0] = num_value(features);
    for (int k = 0; k < p->nargs; k++) args[k + 1] = p->args[k];
    int was = c->in_forward;
    c->in_forward = 0;
    int rc = instantiate(c, &p->tmpl, args, p->nargs + 1, p->kwnames, p->kwvals, p->nkw, p->file, p->line, p->col, 1,
                         out);
    c->in_forward = was;
    if (rc) return -1;
    char *local = cf_arena_alloc(&c->arena, 12);
    if (!local) return cf_oom(12);
    snprintf(local, 12, "%d", pos);
    place(out->model, chain, local);
    chain->items[pos] = *out;
    return 0;
}

static int apply(cc *c, const value *f, value *x, int nx, const char *file, const ast *where, value *out, inst *chain,
                 int pos)
{
    if (f->kind == V_MODEL) return call_model(c, f->model, x, nx, file, where->line, where->col, out);
    if (f->kind == V_BUILTIN) {
        env tmp = {.file = file};
        struct builtin b = builtin_at(f->fn);
        if (nx != 1) return cerr(c, file, where->line, where->col, "%s takes one value", b.name);
        return op_call(c, &tmp, where, b.op, x, 1, NULL, NULL, 0, out);
    }
    /* a partial: give it the size of what flows in, once */
    partial *p = f->partial;
    if (nx != 1 || x[0].kind != V_TENSOR)
        return cerr(c, file, where->line, where->col, "%s(...) in a Chain needs one value flowing in",
                    p->tmpl.net->name);
    if (is_unresolved(c, x[0].node))
        return cerr(c, file, where->line, where->col,
                    "cannot tell the input size for %s: begin the Chain with Input(...)", p->tmpl.net->name);
    value made_model;
    if (make_partial(c, chain, pos, feature_size(x[0].node), &made_model)) return -1;
    return call_model(c, made_model.model, x, nx, file, where->line, where->col, out);
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
 * and so on. Built that way, a standard-library LSTM becomes one lstm node over the
 * whole sequence (ops/lstm.c) instead of n copies of its cell, and the layers around
 * it that treat each position alike (Affine, Embedding, LayerNorm, elementwise functions,
 * softmax) run once over (B, n, ...) instead of once per step. Only Chains made of
 * such layers and at least one LSTM are built this way; the LSTM's definition in the
 * notation stays what it means, and tests/test_lstm_fused.c holds the two to the
 * same numbers. cf_lang_fuse = 0 turns it off. */
int cf_lang_fuse = 1;

/* v is the standard library's net `name` (a made instance, or a template waiting
 * for its input size in a Chain), not a net of the user's that is called so too. */
static int stdlib_net(const value *v, const char *name)
{
    const env *def;
    if (v->kind == V_MODEL && v->model->kind == I_NET) {
        if (strcmp(v->model->tname, name) != 0 || !v->model->env) return 0;
        def = v->model->env->parent;
    } else if (v->kind == V_PARTIAL) {
        if (strcmp(v->partial->tmpl.net->name, name) != 0) return 0;
        def = v->partial->tmpl.defenv;
    } else {
        return 0;
    }
    return def && strncmp(def->file, "<stdlib>/", 9) == 0;
}

/* A function of one value that treats every position of (B, n, ...) alike. */
static int positionwise_op(const value *v)
{
    if (v->kind != V_BUILTIN) return 0;
    struct builtin b = builtin_at(v->fn);
    if (!b.unary) return 0;   /* an op's (B_OP), or gelu's */
    return (cf_ops[b.op]->flags & CF_POSITIONWISE) != 0;
}

/* Can unroll(m, n) be built layer by layer, and does it gain by it? */
static int unroll_by_layers(const inst *m)
{
    if (!cf_lang_fuse || m->kind != I_CHAIN) return 0;
    int lstm = 0;
    for (int k = 0; k < m->n; k++) {
        const value *v = &m->items[k];
        for (int j = 0; j < k; j++)   /* one instance twice: its state would be shared */
            if (v->kind == V_MODEL && m->items[j].kind == V_MODEL && m->items[j].model == v->model) return 0;
        if (stdlib_net(v, "LSTM")) lstm = 1;
        else if (v->kind == V_MODEL && v->model->kind == I_INPUT) { if (k != 0) return 0; }
        else if (!stdlib_net(v, "Affine") && !stdlib_net(v, "Embedding") && !stdlib_net(v, "LayerNorm") &&
                 !positionwise_op(v))
            return 0;
    }
    return lstm;
}

/* A parameter or state of a made net, by its name in the net's body. */
static const value *net_local(const inst *net, const char *name, vkind kind)
{
    const value *v = lookup(net->env, name);
    return v && v->kind == kind ? v : NULL;
}

/* The LSTM net over whole sequences x (B, n, I), or over the rows of the table E
 * picked by indices x (B, n): one lstm node, which then answers for the Embedding too
 * (emb_loc in frame emb: where its errors are traced). Its states start from their
 * carried leaves, and end as the last step's h and c (for unroll to carry on). */
static int lstm_layer(cc *c, const inst *net, cf_node *x, cf_node *E, cf_srcloc emb_loc, const cf_frame *emb,
                      const char *file, int line, int col, value *out)
{
    const value *W = net_local(net, "W", V_PARAM), *U = net_local(net, "U", V_PARAM), *b = net_local(net, "b", V_PARAM);
    const value *h = net_local(net, "h", V_STATE), *cs = net_local(net, "c", V_STATE);
    if (!W || !U || !b || !h || !cs) return cerr(c, file, line, col, "LSTM: the standard library's net has changed");
    env here = {.file = file};
    ast where = {.line = line, .col = col};
    cf_node *in[7];
    value v;
    rstate *st[2] = {h->state, cs->state};
    for (int i = 0; i < 2; i++) {
        if (state_start(c, st[i], &here, &where)) return -1;
        in[i] = st[i]->start;
    }
    if (param_node(c, W->param, &v)) return -1;
    in[2] = v.node;
    if (param_node(c, U->param, &v)) return -1;
    in[3] = v.node;
    if (param_node(c, b->param, &v)) return -1;
    in[4] = v.node;
    int nin = 6;
    in[5] = x;
    if (E) {
        in[5] = E;
        in[6] = x;
        nin = 7;
    }
    if (enter(c, net->tname, file, line, col)) return -1;
    int rc = -1, T = x->shape.d[1], H = in[3]->shape.d[0];
    cf_node *y = cf_op_at(c->m, CF_OP_LSTM, nin, in, NULL, 0, NULL, 0, file, line, col);
    if (made(c, &here, &where, y)) goto done;
    if (E) y->folded_loc = emb_loc, y->folded_frame = emb;
    cf_node *hs = cf_slice_at(c->m, y, 2, 0, H, file, line, col);
    if (made(c, &here, &where, hs)) goto done;
    cf_node *last = cf_slice_at(c->m, y, 1, T - 1, 1, file, line, col);
    if (made(c, &here, &where, last)) goto done;
    cf_shape one = {1, {H}};
    for (int i = 0; i < 2; i++) {
        cf_node *s = cf_slice_at(c->m, last, 2, i * H, H, file, line, col);
        if (made(c, &here, &where, s)) goto done;
        s = cf_reshape_at(c->m, s, one, file, line, col);
        if (made(c, &here, &where, s)) goto done;
        st[i]->prev = s;
        st[i]->touched = 1;
    }
    *out = tensor_value(hs);
    rc = 0;
done:
    leave(c);
    return rc;
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
                return cerr(c, f, where->line, where->col, "Input%s does not fit the value flowing in: %s",
                            cf_shape_str(s, s1, sizeof s1), cf_shape_str(x->shape, s2, sizeof s2));
            }
            cf_shape seq = {s.rank + 1, {n}};
            for (int i = 0; i < s.rank; i++) seq.d[i + 1] = s.d[i];
            x = cf_reshape_at(c->m, x, seq, f, where->line, where->col);
            if (made(c, &at, where, x)) return -1;
            continue;
        }
        if (item->kind == V_PARTIAL) {
            value mv;
            /* what a Chain passes at one step: the features of (B, d...) */
            if (make_partial(c, m, k, features_from(x->shape, 2), &mv)) return -1;
        }
        value xv = tensor_value(x), yv;
        if (stdlib_net(item, "Embedding") && k + 1 < m->n && stdlib_net(&m->items[k + 1], "LSTM") &&
            x->shape.rank == 2) {
            /* folded into the LSTM: its input products become a look-up in E W */
            const value *E = net_local(item->model, "E", V_PARAM);
            value ev;
            if (!E) return cerr(c, f, where->line, where->col, "Embedding: the standard library's net has changed");
            if (enter(c, item->model->tname, f, where->line, where->col)) return -1;
            /* an index out of range is the Embedding's: traced from its body's embedding(x, E) */
            const cf_frame *emb = c->m->frame;
            const ast *body = item->model->lambda ? item->model->lambda->a : NULL;
            cf_srcloc emb_loc = {item->model->env ? item->model->env->file : f, body ? body->line : where->line,
                                 body ? body->col : where->col};
            int rc = param_node(c, E->param, &ev);
            leave(c);
            if (rc) return -1;
            k++;
            if (m->items[k].kind == V_PARTIAL) {
                value mv;
                if (make_partial(c, m, k, ev.node->shape.d[1], &mv)) return -1;
            }
            where = m->item_ast[k];
            if (lstm_layer(c, m->items[k].model, x, ev.node, emb_loc, emb, f, where->line, where->col, &yv)) return -1;
        } else if (stdlib_net(item, "LSTM")) {
            if (lstm_layer(c, item->model, x, NULL, (cf_srcloc){0}, NULL, f, where->line, where->col, &yv)) return -1;
        } else if (apply(c, item, &xv, 1, f, where, &yv, m, k)) {
            return -1;
        }
        if (yv.kind != V_TENSOR || !yv.node->batched)
            return cerr(c, f, where->line, where->col, "unroll: %s must give one value with the batch dimension",
                        m->tname);
        x = yv.node;
    }
    *out = tensor_value(x);
    return 0;
}

/* unroll(m, n): x (B, n, d...) -> m at every step, sharing its parameters, with its
 * states carried from each step to the next; outputs joined along dimension 1. */
static int call_unroll(cc *c, inst *u, value *args, int nargs, const char *file, int line, int col, value *out)
{
    inst *m = u->items[0].model;
    ast where = {.line = line, .col = col};
    env here = {.file = file};
    if (nargs != 1 || args[0].kind != V_TENSOR) return cerr(c, file, line, col, "unroll takes one value: sequences");
    cf_node *x = args[0].node;
    cf_shape step;
    if (is_unresolved(c, x)) {
        if (unrolled_input(m, &step))
            return cerr(c, file, line, col,
                        "cannot tell the shape of the input '%s': begin the unrolled model with Input(...)",
                        x->name);
        cf_shape seq = {step.rank + 1, {u->n}};
        if (seq.rank > CF_MAX_DIMS - 1) return cerr(c, file, line, col, "unroll: the steps have too many dimensions");
        for (int i = 0; i < step.rank; i++) seq.d[i + 1] = step.d[i];
        resolve(c, x, seq);
    }
    char sx[96];
    if (!x->batched || x->shape.rank < 2 || x->shape.d[1] != u->n)
        return cerr(c, file, line, col, "unroll over %d steps takes sequences (B, %d, ...), but was given %s", u->n,
                    u->n, cf_shape_str(x->shape, sx, sizeof sx));
    step = (cf_shape){x->shape.rank - 2, {0}};
    for (int i = 2; i < x->shape.rank; i++) step.d[i - 2] = x->shape.d[i];
    for (rstate *st = c->states; st; st = st->next) st->prev = st->cur = NULL, st->touched = 0;
    cf_node **ys = NULL;
    int nout = 0, rc = -1;
    if (unroll_by_layers(m)) {
        if (unroll_layers(c, m, x, u->n, file, out)) goto done;
        goto carry;
    }
    for (int t = 0; t < u->n; t++) {
        cf_node *xt = cf_slice_at(c->m, x, 1, t, 1, file, line, col);
        if (made(c, &here, &where, xt)) goto done;
        xt = cf_reshape_at(c->m, xt, step, file, line, col);
        if (made(c, &here, &where, xt)) goto done;
        value xv = tensor_value(xt), yv;
        if (call_model(c, m, &xv, 1, file, line, col, &yv)) goto done;
        int k = yv.kind == V_TUPLE ? yv.n : 1;
        if (t == 0) {
            int any = 0;
            for (rstate *st = c->states; st; st = st->next) any |= st->touched;
            if (!any) {
                cerr(c, file, line, col, "unroll: %s has no state to carry from step to step (a net declares one "
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
            cerr(c, file, line, col, "unroll: %s gave %d outputs at step 1 but %d at step %d", m->tname, nout, k, t + 1);
            goto done;
        }
        for (int j = 0; j < k; j++) {
            const value *v = yv.kind == V_TUPLE ? &yv.items[j] : &yv;
            if (v->kind != V_TENSOR || !v->node->batched) {
                cerr(c, file, line, col, "unroll: %s must give values with the batch dimension at each step",
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
        if (made(c, &here, &where, r)) goto done;
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
    for (rstate *st = c->states; st; st = st->next) st->prev = st->cur = NULL;
    return rc;
}

static int call_model(cc *c, inst *mdl, value *args, int nargs, const char *file, int line, int col, value *out)
{
    for (int k = 0; k < nargs; k++)
        if (args[k].kind != V_TENSOR && args[k].kind != V_TUPLE)
            return cerr(c, file, line, col, "%s is applied to values, not to %s", mdl->tname, kind_name(&args[k]));
    if (enter(c, mdl->tname, file, line, col)) return -1;
    int rc = -1, was = c->in_forward;
    c->in_forward = 1;
    switch (mdl->kind) {
    case I_NET:
    case I_LAMBDA: {
        const ast *lam = mdl->lambda;
        env *en = env_new(c, mdl->env, NULL);
        if (!en) break;
        if (nargs == 1 && args[0].kind == V_TUPLE && lam->n > 1) {   /* a tuple flowing into (x, h) -> ... */
            nargs = args[0].n;
            args = args[0].items;
        }
        if (nargs != lam->n) {
            cerr(c, en->file, lam->line, lam->col, "the forward function of %s takes %d input%s but was given %d",
                 mdl->tname, lam->n, lam->n == 1 ? "" : "s", nargs);
            break;
        }
        int ok = 1;
        for (int k = 0; k < lam->n && ok; k++) ok = bind(c, en, lam->items[k]->name, args[k], lam->items[k]) == 0;
        if (ok) rc = eval(c, en, lam->a, out);
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
            rc = apply(c, &mdl->items[k], cur, ncur, mdl->env ? mdl->env->file : file, where, &next, mdl, k);
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
    case I_UNROLL: rc = call_unroll(c, mdl, args, nargs, file, line, col, out); break;
    case I_INPUT: {
        if (nargs != 1 || args[0].kind != V_TENSOR) {
            cerr(c, file, line, col, "Input takes one value");
            break;
        }
        cf_node *x = args[0].node;
        if (is_unresolved(c, x)) {
            resolve(c, x, mdl->shape);
            *out = args[0];
            rc = 0;
            break;
        }
        size_t want = cf_shape_count(mdl->shape), have = cf_shape_count_b(x->shape, 1);
        if (!x->batched || want != have) {
            char s1[96], s2[96];
            cf_shape_str(mdl->shape, s1, sizeof s1);
            cerr(c, file, line, col, "Input%s does not fit the value flowing in: %s", s1,
                 cf_shape_str(x->shape, s2, sizeof s2));
            break;
        }
        cf_node *n = cf_reshape_at(c->m, x, mdl->shape, file, line, col);
        env tmp = {.file = file};
        ast where = {.line = line, .col = col};
        if (made(c, &tmp, &where, n)) break;
        *out = tensor_value(n);
        rc = 0;
        break;
    }
    }
    c->in_forward = was;
    leave(c);
    return rc;
}

/* ---- files ---- */

/* Bind every net of a file in en; "defined twice" is an error. */
static int hoist_nets(cc *c, env *en, const ast *root)
{
    for (int i = 0; i < root->n; i++) {
        const ast *s = root->items[i];
        if (s->kind != AST_NET) continue;
        int j = local_index(en, s->name);
        if (j >= 0) {
            const ast *w = en->where[j];
            return cerr(c, en->file, s->line, s->col, "the net '%s' is defined twice (first at %d:%d)", s->name,
                        w->line, w->col);
        }
        value v = {.kind = V_TEMPLATE, .net = s, .defenv = en};
        if (bind(c, en, s->name, v, s)) return -1;
    }
    return 0;
}

static int eval_top(cc *c, env *en, const ast *root)
{
    for (int i = 0; i < root->n; i++) {
        const ast *s = root->items[i];
        if (s->kind == AST_NET) continue;
        if (s->kind != AST_ASSIGN)
            return cerr(c, en->file, s->line, s->col, "expected a binding 'name = ...' or a net at the top level");
        int j = local_index(en, s->name);
        if (j >= 0) {
            const ast *w = en->where[j];
            return cerr(c, en->file, s->line, s->col, "'%s' is bound twice (first at %d:%d)", s->name, w->line, w->col);
        }
        value v;
        c->frames[c->nframes++] = (frame){s->name, NULL, 0, 0};
        int rc = eval(c, en, s->a, &v);
        c->nframes--;
        if (rc || bind(c, en, s->name, v, s)) return -1;
    }
    return 0;
}

static int add_outputs(cc *c, const value *v, const char *file, const ast *where)
{
    if (v->kind == V_TUPLE) {
        for (int i = 0; i < v->n; i++)
            if (add_outputs(c, &v->items[i], file, where)) return -1;
        return 0;
    }
    if (v->kind != V_TENSOR)
        return cerr(c, file, where->line, where->col, "the model's forward function returns %s, not a value",
                    kind_name(v));
    return cf_output(c->m, v->node) < 0 ? -1 : 0;
}

/* Build the graph: call model's forward function on fresh inputs. */
static int build_model(cc *c, env *top, const char *file)
{
    int j = local_index(top, "model");
    if (j < 0) {
        c->nframes = 0;
        const char *best = NULL;
        int bestd = 99;
        for (int k = 0; k < top->n; k++) consider("model", top->names[k], &best, &bestd);
        if (best && bestd <= 2)
            return cerr(c, file, top->where[local_index(top, best)]->line, top->where[local_index(top, best)]->col,
                        "the file does not bind 'model' (did you mean 'model' instead of '%s'?)", best);
        return cerr(c, file, 1, 1, "the file does not bind 'model' (the model to build: model = ...)");
    }
    value root = top->vals[j];
    const ast *where = top->where[j]->a;   /* the model's expression */
    c->frames[c->nframes++] = (frame){"model", NULL, 0, 0};
    cf_scope_begin_at(c->m, "model", NULL, NULL, 0, 0);
    if (root.kind == V_TEMPLATE) {
        if (instantiate(c, &root, NULL, 0, NULL, NULL, 0, file, where->line, where->col, 0, &root)) return -1;
    }
    if (root.kind != V_MODEL)
        return cerr(c, file, where->line, where->col, "model must be a model, such as Chain(...), not %s",
                    kind_name(&root));
    inst *r = root.model;
    int nin = 1;
    const char *names[MAX_ARGS] = {"x"};
    if (r->kind == I_NET || r->kind == I_LAMBDA) {
        nin = r->lambda->n;
        for (int k = 0; k < nin && k < MAX_ARGS; k++) names[k] = r->lambda->items[k]->name;
    }
    if (nin > MAX_ARGS) return cerr(c, file, where->line, where->col, "a model takes at most %d inputs", MAX_ARGS);
    value args[MAX_ARGS];
    for (int k = 0; k < nin; k++) {
        cf_node *x = cf_input_at(c->m, names[k], CF_SCALAR, file, where->line, where->col);
        if (!x) return -1;
        args[k] = tensor_value(x);
        c->unresolved[c->nunresolved++] = x;
    }
    value out;
    if (call_model(c, r, args, nin, file, where->line, where->col, &out)) return -1;
    if (c->nunresolved)
        return cerr(c, file, where->line, where->col,
                    "cannot tell the shape of the input '%s': begin the model with Input(...)", c->unresolved[0]->name);
    if (add_outputs(c, &out, file, where)) return -1;
    cf_scope_end(c->m);
    c->nframes--;
    return 0;
}

/* Compile text; on failure NULL, unless keep is set and the failure came after the
 * graph began (a shape that does not fit): then the model is returned as far as it
 * got, *failed set, for listings. */
static cf_model *compile(const char *text, size_t len, const char *file, int keep, int *failed, int steps)
{
    cc c = {0};
    c.steps = steps;
    enum { MAXLIBS = 32 };
    cf_ast *user = NULL, *libs[MAXLIBS] = {0};
    cf_model *m = cf_model_new();
    if (!m) return NULL;
    c.m = m;
    /* The standard library: each file's nets see their own file (for locations) and,
     * through the parent, every other library net. */
    env *std = env_new(&c, NULL, "<stdlib>");
    int rc = std ? 0 : -1;
    if (cf_stdlib_count > MAXLIBS) rc = cf_seterr("error: the standard library has more than %d files", MAXLIBS);
    for (int i = 0; i < cf_stdlib_count && rc == 0; i++) {
        const cf_stdlib_file *sf = &cf_stdlib_files[i];
        env *fe = env_new(&c, std, sf->name);
        libs[i] = cf_parse(sf->text, strlen(sf->text), sf->name);
        if (!fe || !libs[i] || hoist_nets(&c, fe, cf_ast_root(libs[i]))) rc = -1;
        for (int k = 0; rc == 0 && k < fe->n; k++)
            if (bind(&c, std, fe->names[k], fe->vals[k], fe->where[k])) rc = -1;
    }
    if (rc == 0) {
        user = cf_parse(text, len, file);
        if (!user) rc = -1;
    }
    env *top = rc == 0 ? env_new(&c, std, file) : NULL;
    if (rc == 0 && !top) rc = -1;
    if (rc == 0) rc = hoist_nets(&c, top, cf_ast_root(user));
    if (rc == 0) rc = eval_top(&c, top, cf_ast_root(user));
    if (rc == 0) rc = build_model(&c, top, file);
    if (rc == 0) rc = cf_model_infer_shapes(m);
    for (int i = 0; i < MAXLIBS; i++) cf_ast_free(libs[i]);
    cf_ast_free(user);
    cf_arena_free(&c.arena);
    if (rc == 0) {
        m->source = malloc(len + 1);
        m->source_name = strdup(file);
        if (m->source && m->source_name) {
            memcpy(m->source, text, len);
            m->source[len] = 0;
        } else {
            rc = cf_oom(len + strlen(file) + 2);
        }
    }
    if (failed) *failed = rc != 0;
    if (rc && !(keep && c.shape_failed && !m->builderr)) {
        char msg[CF_ERRMAX];
        snprintf(msg, sizeof msg, "%s", cf_last_error());
        cf_model_free(m);
        cf_seterr("%s", msg);
        return NULL;
    }
    return m;
}

cf_model *cf_lang_compile(const char *text, size_t len, const char *file, int keep, int *failed)
{
    return compile(text, len, file, keep, failed, 0);
}

cf_model *cf_model_parse(const char *src, const char *filename)
{
    if (!src) return cf_seterr("error: cf_model_parse: no text"), NULL;
    return compile(src, strlen(src), filename ? filename : "<model>", 0, NULL, 0);
}

/* The text of a model file, NUL-terminated (malloc'd), or NULL with the error. */
char *cf_lang_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return cf_seterr("error: %s: cannot open: %s", path, strerror(errno)), NULL;
    char *buf = malloc(CF_PARSE_MAX_BYTES + 2);
    if (!buf) {
        fclose(f);
        return cf_oom(CF_PARSE_MAX_BYTES), NULL;
    }
    size_t n = fread(buf, 1, CF_PARSE_MAX_BYTES + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return cf_seterr("error: %s: cannot read", path), NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

cf_model *cf_model_load_steps(const char *path, int steps)
{
    if (!path) return cf_seterr("error: cf_model_load: no path"), NULL;
    if (steps < 0) return cf_seterr("error: cf_model_load_steps: %d steps", steps), NULL;
    size_t n;
    char *text = cf_lang_read_file(path, &n);
    if (!text) return NULL;
    cf_model *m = compile(text, n, path, 0, NULL, steps);
    free(text);
    return m;
}

cf_model *cf_model_load(const char *path) { return cf_model_load_steps(path, 0); }
