/* names.c - the compiler's names: errors and the trace of calls around them,
 * environments (the scopes of bindings), what a name means, and "did you mean" for
 * one that means nothing. */
#include <stdarg.h>
#include <stdio.h>
#include <ctype.h>
#include <string.h>

#include "lang/compile_int.h"

/* The initialisers that are names (normal(std) and uniform(a) are built-ins). */
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

int cc_err(cc *c, const char *file, int line, int col, const char *fmt, ...)
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

/* A frame in both traces: the compiler's and the graph's. */
int cc_enter(cc *c, const char *name, const char *file, int line, int col)
{
    if (c->nframes >= (int)(sizeof c->frames / sizeof c->frames[0]))
        return cc_err(c, file, line, col, "calls nested deeper than %d (does a net use itself?)",
                      (int)(sizeof c->frames / sizeof c->frames[0]));
    c->frames[c->nframes++] = (frame){name, file, line, col};
    cf_scope_begin_at(c->m, name, NULL, file, line, col);
    return 0;
}

void cc_leave(cc *c)
{
    c->nframes--;
    cf_scope_end(c->m);
}

/* The edit distance of two short strings (bytes), for "did you mean", case aside:
 * 'Relu' is 0 from 'relu'. */
int cc_distance(const char *a, const char *b)
{
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 40 || lb > 40) return 99;
    int d[41][41];
    for (int i = 0; i <= la; i++) d[i][0] = i;
    for (int j = 0; j <= lb; j++) d[0][j] = j;
    for (int i = 1; i <= la; i++)
        for (int j = 1; j <= lb; j++) {
            int best = d[i - 1][j - 1] + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

void cc_consider(const char *name, const char *cand, const char **best, int *bestd)
{
    int d = cc_distance(name, cand);
    if (d < *bestd) {
        *bestd = d;
        *best = cand;
    }
}

/* What PyTorch (nn.X, its keyword arguments) and Keras (layers.X) call what cflux
 * calls otherwise. */
static const struct {
    const char *theirs, *ours, *whose;
} foreign[] = {
    {"Dense", "Affine", "Keras's"}, {"Linear", "Affine", "PyTorch's"},
    {"Sequential", "Chain", "PyTorch's and Keras's"}, {"ReLU", "relu", "PyTorch's"},
    {"Sigmoid", "sigmoid", "PyTorch's"}, {"Tanh", "tanh", "PyTorch's"}, {"Softmax", "softmax", "PyTorch's"},
    {"GELU", "gelu", "PyTorch's"}, {"LeakyReLU", "leakyrelu", "PyTorch's and Keras's"},
    {"Conv2d", "Conv2D", "PyTorch's"}, {"Flatten", "flatten", "PyTorch's and Keras's"},
    {"BatchNorm1d", "BatchNorm", "PyTorch's"}, {"BatchNorm2d", "BatchNorm", "PyTorch's"},
    {"BatchNormalization", "BatchNorm", "Keras's"}, {"MaxPool2d", "MaxPool", "PyTorch's"},
    {"MaxPooling2D", "MaxPool", "Keras's"}, {"AvgPool2d", "AvgPool", "PyTorch's"},
    {"AveragePooling2D", "AvgPool", "Keras's"}, {"AdaptiveAvgPool2d", "GlobalAvgPool", "PyTorch's"},
    {"GlobalAveragePooling2D", "GlobalAvgPool", "Keras's"}, {"LayerNormalization", "LayerNorm", "Keras's"},
    {"RNN", "Recurrent", "PyTorch's"}, {"SimpleRNN", "Recurrent", "Keras's"},
    /* keyword arguments */
    {"padding", "pad", "PyTorch's and Keras's"}, {"kernel_size", "k", "PyTorch's"}, {"strides", "stride", "Keras's"},
    {"in_channels", "in", "PyTorch's"}, {"out_channels", "out", "PyTorch's"}, {"in_features", "in", "PyTorch's"},
    {"out_features", "out", "PyTorch's"}, {"units", "out", "Keras's"}, {"filters", "out", "Keras's"},
    {"rate", "p", "Keras's"}, {"num_embeddings", "vocab", "PyTorch's"}, {"embedding_dim", "dim", "PyTorch's"},
};

const char *cc_foreign(const char *name, const char **whose)
{
    for (size_t i = 0; i < sizeof foreign / sizeof *foreign; i++)
        if (!strcmp(foreign[i].theirs, name)) {
            if (whose) *whose = foreign[i].whose;
            return foreign[i].ours;
        }
    return NULL;
}

static const char *suggest(const env *en, const char *name)
{
    const char *best = NULL;
    int bestd = 99;
    for (; en; en = en->parent)
        for (int i = 0; i < en->n; i++) cc_consider(name, en->names[i], &best, &bestd);
    for (int i = 0; i < cc_nbuiltins; i++) cc_consider(name, cc_builtins[i].name, &best, &bestd);
    for (int op = 0; op < CF_OP_COUNT_; op++)
        if (cf_ops[op] && (cf_ops[op]->flags & CF_CALL)) cc_consider(name, cf_ops[op]->name, &best, &bestd);
    for (int i = 0; i < 3; i++) cc_consider(name, inits[i].name, &best, &bestd);
    int len = (int)strlen(name);
    return best && bestd <= (len < 4 ? 1 : len / 3 + 1) ? best : NULL;
}

/* ---- environments ---- */

env *cc_env_new(cc *c, env *parent, const char *file)
{
    env *en = cf_arena_alloc(&c->arena, sizeof *en);
    if (en) {
        en->parent = parent;
        en->file = file ? file : parent ? parent->file : "?";
    }
    return en;
}

int cc_bind(cc *c, env *en, const char *name, value v, const ast *where)
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
int cc_local_index(const env *en, const char *name)
{
    for (int i = en->n - 1; i >= 0; i--)
        if (strcmp(en->names[i], name) == 0) return i;
    return -1;
}

const value *cc_lookup(const env *en, const char *name)
{
    for (; en; en = en->parent) {
        int i = cc_local_index(en, name);
        if (i >= 0) return &en->vals[i];
    }
    return NULL;
}

/* Does name mean something here (a binding, a built-in, an initialiser, true, false)? */
int cc_name_known(const env *en, const char *name)
{
    if (cc_lookup(en, name) || cc_builtin_find(name) >= 0 || !strcmp(name, "true") || !strcmp(name, "false")) return 1;
    for (int i = 0; i < 3; i++)
        if (strcmp(inits[i].name, name) == 0) return 1;
    return 0;
}

int cc_eval_name(cc *c, env *en, const ast *e, value *out)
{
    const value *v = cc_lookup(en, e->name);
    if (v) {
        if (v->kind == V_PARAM && c->in_forward) return cc_param_node(c, v->param, out);
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
    int fn = cc_builtin_find(e->name);
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
    const char *whose, *ours = cc_foreign(e->name, &whose);
    if (ours && cc_name_known(en, ours))
        return ERR(c, en, e, "unknown name '%s' (did you mean '%s'? %s %s is %s in cflux)", e->name, ours, whose,
                   e->name, ours);
    const char *s = suggest(en, e->name);
    if (s) return ERR(c, en, e, "unknown name '%s' (did you mean '%s'?)", e->name, s);
    return ERR(c, en, e, "unknown name '%s'", e->name);
}
