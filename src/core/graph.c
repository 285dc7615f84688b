/* graph.c - building graphs: models, nodes, scopes and the source trace of each node.
 *
 * Building never fails loudly: a bad call records the first error in the model,
 * returns NULL, and every later call given that NULL returns NULL too; cf_bind then
 * reports the first error. Shapes are inferred later, all at once
 * (cf_model_infer_shapes), because they are only complete when the graph is. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"
#include "core/quant.h"
#include "core/mem.h"
#include "core/rng.h"
#include "ops/op.h"

/* ---- arena ---- */

struct cf_arena_chunk {
    cf_arena_chunk *next;
    size_t used, size;
    _Alignas(16) unsigned char data[];
};

void *cf_arena_alloc(cf_arena *a, size_t bytes)
{
    bytes = (bytes + 15) & ~(size_t)15;
    cf_arena_chunk *c = a->head;
    if (!c || c->size - c->used < bytes) {
        size_t size = bytes > 16384 ? bytes : 16384;
        c = calloc(1, sizeof *c + size);
        if (!c) return cf_oom(sizeof *c + size), NULL;
        c->size = size;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += bytes;
    return p;
}

char *cf_arena_strdup(cf_arena *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = cf_arena_alloc(a, n);
    if (p) memcpy(p, s, n);
    return p;
}

void cf_arena_free(cf_arena *a)
{
    while (a->head) {
        cf_arena_chunk *next = a->head->next;
        free(a->head);
        a->head = next;
    }
}

/* ---- models ---- */

cf_model *cf_model_new(void)
{
    cf_model *m = calloc(1, sizeof *m);
    if (!m) cf_oom(sizeof *m);
    return m;
}

void cf_model_free(cf_model *m)
{
    if (!m) return;
    free(m->nodes);
    free(m->params);
    free(m->states);
    free(m->carries);
    free(m->regions);
    free(m->posuses);
    free(m->layers);
    free(m->class_names);
    free(m->class_text);
    free(m->inputs);
    free(m->outputs);
    free(m->held_names.slots);
    free(m->carry_names.slots);
    free(m->builderr);
    free(m->source);
    free(m->source_name);
    cf_mem_free(m->pdata);
    cf_mem_free(m->pgrad);
    free(m->poff);
    cf_mem_free(m->sdata);
    free(m->soff);
    free(m->norm_mean);
    free(m->norm_std);
    free(m->tnorm_mean);
    free(m->tnorm_std);
    for (int i = 0; i < 2 * m->ninfo; i++) free(m->info[i]);
    free(m->info);
    cf_model_quant_free(m);
    cf_arena_free(&m->arena);
    free(m);
}

void cf_model_set_seed(cf_model *m, uint64_t seed) { m->seed = seed; }

/* Grow a node list by one; 0 or -1. */
static int push(cf_node ***list, int *n, int *cap, cf_node *x)
{
    if (*n == *cap) {
        int ncap = *cap ? *cap * 2 : 16;
        cf_node **p = realloc(*list, (size_t)ncap * sizeof *p);
        if (!p) return cf_oom((size_t)ncap * sizeof *p);
        *list = p;
        *cap = ncap;
    }
    (*list)[(*n)++] = x;
    return 0;
}

/* ---- names of leaves ---- */

/* The leaf named `name` in t, or NULL. */
static cf_node *names_find(const cf_names *t, const char *name)
{
    if (!t->cap) return NULL;
    size_t mask = (size_t)t->cap - 1;
    for (size_t h = cf_hash_str(name) & mask; t->slots[h]; h = (h + 1) & mask)
        if (strcmp(t->slots[h]->name, name) == 0) return t->slots[h];
    return NULL;
}

/* Add leaf n (its name not in t yet); 0 or -1. */
static int names_add(cf_names *t, cf_node *n)
{
    if (2 * (t->n + 1) > t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        cf_node **slots = calloc((size_t)cap, sizeof *slots);
        if (!slots) return cf_oom((size_t)cap * sizeof *slots);
        for (int i = 0; i < t->cap; i++)
            if (t->slots[i]) {
                size_t h = cf_hash_str(t->slots[i]->name) & (size_t)(cap - 1);
                while (slots[h]) h = (h + 1) & (size_t)(cap - 1);
                slots[h] = t->slots[i];
            }
        free(t->slots);
        t->slots = slots;
        t->cap = cap;
    }
    size_t h = cf_hash_str(n->name) & (size_t)(t->cap - 1);
    while (t->slots[h]) h = (h + 1) & (size_t)(t->cap - 1);
    t->slots[h] = n;
    t->n++;
    return 0;
}

/* One copy of each file and frame name: the same few strings come with every node
 * and every call (a small hash table of recent strings; a miss only costs a copy). */
static const char *intern(cf_model *m, const char *s)
{
    const char **slot = &m->interned[cf_hash_str(s) % CF_INTERN_SLOTS];
    if (*slot && strcmp(*slot, s) == 0) return *slot;
    const char *copy = cf_arena_strdup(&m->arena, s);
    if (copy) *slot = copy;
    return copy;
}

cf_node *cf_build_fail(cf_model *m, cf_srcloc loc, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (loc.col > 0) cf_seterr("error: %s\n  at %s:%d:%d", msg, loc.file, loc.line, loc.col);
    else cf_seterr("error: %s\n  at %s:%d", msg, loc.file ? loc.file : "?", loc.line);
    if (m && !m->builderr) m->builderr = strdup(cf_last_error());
    return NULL;
}

/* A new node of op with inputs; NULL (and the error recorded) if anything is wrong. */
static cf_node *node_new(cf_model *m, cf_opcode op, int nin, cf_node *const *in,
                         const char *file, int line, int col)
{
    cf_srcloc loc = {file, line, col};
    if (!m) return cf_build_fail(NULL, loc, "no model (NULL) given to %s", cf_ops[op]->name);
    if (m->sealed && (op == CF_OP_PARAM || op == CF_OP_STATE))
        return cf_build_fail(m, loc, "the model is sealed (bound or initialised): no %s can be added",
                             op == CF_OP_PARAM ? "parameter" : "state");
    for (int i = 0; i < nin; i++) {
        if (!in[i]) {
            if (!m->builderr)
                cf_build_fail(m, loc, "input %d of %s is NULL", i + 1, cf_ops[op]->name);
            return NULL;   /* an earlier failure, already recorded */
        }
        if (in[i]->model != m)
            return cf_build_fail(m, loc, "input %d of %s belongs to another model", i + 1, cf_ops[op]->name);
    }
    cf_node *n = cf_arena_alloc(&m->arena, sizeof *n);
    cf_node **ins = nin ? cf_arena_alloc(&m->arena, (size_t)nin * sizeof *ins) : NULL;
    loc.file = file ? intern(m, file) : "?";
    if (!n || (nin && !ins) || !loc.file || push(&m->nodes, &m->nnodes, &m->cap_nodes, n)) {
        cf_oom(sizeof *n);
        if (!m->builderr) m->builderr = strdup(cf_last_error());
        return NULL;
    }
    if (nin) memcpy(ins, in, (size_t)nin * sizeof *ins);
    n->id = m->nnodes - 1;
    n->op = op;
    n->nin = nin;
    n->in = ins;
    n->model = m;
    n->loc = loc;
    n->frame = m->frame;
    n->index = -1;
    m->shaped = 0;
    return n;
}

/* ---- scopes ---- */

void cf_scope_begin_at(cf_model *m, const char *frame, const char *path,
                       const char *file, int line, int col)
{
    if (!m) return;
    if (m->depth >= CF_MAX_SCOPES) {
        cf_build_fail(m, (cf_srcloc){file, line, col}, "scopes nested deeper than %d", CF_MAX_SCOPES);
        m->depth++;
        return;
    }
    const char *p = NULL;
    if (path && *path) {
        const char *outer = NULL;
        for (int i = m->depth - 1; i >= 0 && !outer; i--) outer = m->paths[i];
        size_t n = (outer ? strlen(outer) + 1 : 0) + strlen(path) + 1;
        char *s = cf_arena_alloc(&m->arena, n);
        if (s) snprintf(s, n, "%s%s%s", outer ? outer : "", outer ? "." : "", path);
        p = s;
    }
    m->paths[m->depth] = p;
    m->framed[m->depth] = 0;
    if (frame) {
        cf_frame *f = cf_arena_alloc(&m->arena, sizeof *f);
        if (f) {
            f->name = intern(m, frame);
            f->call = (cf_srcloc){file ? intern(m, file) : NULL, line, col};
            f->parent = m->frame;
            m->frame = f;
            m->framed[m->depth] = 1;
        }
    }
    m->depth++;
}

void cf_scope_end(cf_model *m)
{
    if (!m || m->depth == 0) return;
    m->depth--;
    if (m->depth < CF_MAX_SCOPES && m->framed[m->depth]) m->frame = m->frame->parent;
}

/* ---- leaves ---- */

size_t cf_shape_count_checked(cf_shape s)
{
    unsigned long long n = 1;
    for (int i = 0; i < s.rank; i++) {
        unsigned long long d = s.d[i] == CF_BATCH ? 1 : (unsigned long long)(s.d[i] > 0 ? s.d[i] : 0);
        if (d && n > CF_MAX_ELEMENTS / d) return 0;
        n *= d;
    }
    return n <= CF_MAX_ELEMENTS ? (size_t)n : 0;
}

static int check_shape(cf_model *m, cf_shape s, cf_srcloc loc, const char *what, const char *name)
{
    if (s.rank < 0 || s.rank > CF_MAX_DIMS) {
        cf_build_fail(m, loc, "%s '%s': rank %d is not in 0..%d", what, name, s.rank, CF_MAX_DIMS);
        return -1;
    }
    for (int i = 0; i < s.rank; i++)
        if (s.d[i] <= 0) {
            cf_build_fail(m, loc, "%s '%s': dimension %d is %d; dimensions must be positive",
                          what, name, i + 1, s.d[i]);
            return -1;
        }
    if (!cf_shape_count_checked(s)) {
        char b[96];
        cf_build_fail(m, loc, "%s '%s' of shape %s is too large (more than 2^36 elements)", what, name,
                      cf_shape_str(s, b, sizeof b));
        return -1;
    }
    return 0;
}

cf_node *cf_input_at(cf_model *m, const char *name, cf_shape s, const char *file, int line, int col)
{
    cf_srcloc loc = {file, line, col};
    if (!name || !*name) return cf_build_fail(m, loc, "an input needs a name");
    if (!m) return cf_build_fail(NULL, loc, "input '%s': no model", name);
    if (check_shape(m, s, loc, "input", name)) return NULL;
    if (s.rank == CF_MAX_DIMS)
        return cf_build_fail(m, loc, "input '%s': at most %d dimensions per sample", name, CF_MAX_DIMS - 1);
    for (int i = 0; i < m->ninputs; i++)
        if (strcmp(m->inputs[i]->name, name) == 0)
            return cf_build_fail(m, loc, "there is already an input named '%s'", name);
    cf_node *n = node_new(m, CF_OP_INPUT, 0, NULL, file, line, col);
    if (!n) return NULL;
    n->name = cf_arena_strdup(&m->arena, name);
    n->batched = 1;
    n->shape.rank = s.rank + 1;
    n->shape.d[0] = CF_BATCH;
    for (int i = 0; i < s.rank; i++) n->shape.d[i + 1] = s.d[i];
    n->index = m->ninputs;
    if (!n->name || push(&m->inputs, &m->ninputs, &m->cap_inputs, n)) return NULL;
    return n;
}

/* A named leaf kept by the model: a parameter or a state (`what` in messages). */
static cf_node *held_at(cf_model *m, cf_opcode op, const char *what, const char *name, cf_shape s, cf_init init,
                        const char *file, int line, int col)
{
    cf_srcloc loc = {file, line, col};
    if (!name || !*name) return cf_build_fail(m, loc, "a %s needs a name", what);
    if (!m) return cf_build_fail(NULL, loc, "%s '%s': no model", what, name);
    if (check_shape(m, s, loc, what, name)) return NULL;
    if (init.kind < CF_INIT_GLOROT || init.kind > CF_INIT_CONST)
        return cf_build_fail(m, loc, "%s '%s': unknown initialiser %d", what, name, (int)init.kind);
    /* The full name: the innermost scope path, then the name. */
    const char *outer = NULL;
    for (int i = (m->depth < CF_MAX_SCOPES ? m->depth : CF_MAX_SCOPES) - 1; i >= 0 && !outer; i--)
        outer = m->paths[i];
    char full[512];
    if (outer) snprintf(full, sizeof full, "%s.%s", outer, name);
    else snprintf(full, sizeof full, "%s", name);
    /* one namespace: both are saved in the same files */
    const cf_node *same = names_find(&m->held_names, full);
    if (same)
        return cf_build_fail(m, loc, "there is already a %s named '%s'", same->op == CF_OP_PARAM ? "parameter" : "state",
                             full);
    cf_node *n = node_new(m, op, 0, NULL, file, line, col);
    if (!n) return NULL;
    n->name = cf_arena_strdup(&m->arena, full);
    n->shape = s;
    n->init = init;
    if (!n->name || names_add(&m->held_names, n)) return NULL;
    if (op == CF_OP_PARAM) {
        n->index = m->nparams;
        if (push(&m->params, &m->nparams, &m->cap_params, n)) return NULL;
    } else {
        n->index = m->nstates;
        if (push(&m->states, &m->nstates, &m->cap_states, n)) return NULL;
    }
    return n;
}

cf_node *cf_param_at(cf_model *m, const char *name, cf_shape s, cf_init init,
                     const char *file, int line, int col)
{
    return held_at(m, CF_OP_PARAM, "parameter", name, s, init, file, line, col);
}

cf_node *cf_state_at(cf_model *m, const char *name, cf_shape s, cf_init init,
                     const char *file, int line, int col)
{
    return held_at(m, CF_OP_STATE, "state", name, s, init, file, line, col);
}

cf_node *cf_carry_at(cf_model *m, const char *name, cf_shape s, cf_init init, const char *file, int line, int col)
{
    cf_srcloc loc = {file, line, col};
    if (!m) return cf_build_fail(NULL, loc, "state '%s': no model", name ? name : "?");
    if (check_shape(m, s, loc, "state", name)) return NULL;
    if (init.kind != CF_INIT_ZEROS && init.kind != CF_INIT_ONES && init.kind != CF_INIT_CONST)
        return cf_build_fail(m, loc, "state '%s' starts from zeros, ones or a constant", name);
    if (s.rank + 1 > CF_MAX_DIMS)
        return cf_build_fail(m, loc, "state '%s' has too many dimensions (%d, and the batch)", name, s.rank);
    if (names_find(&m->carry_names, name)) return cf_build_fail(m, loc, "there is already a state named '%s'", name);
    if (m->ncarries == m->cap_carries) {
        int cap = m->cap_carries ? 2 * m->cap_carries : 8;
        struct cf_carry *p = realloc(m->carries, (size_t)cap * sizeof *p);
        if (!p) return cf_oom((size_t)cap * sizeof *p), NULL;
        m->carries = p;
        m->cap_carries = cap;
    }
    cf_node *n = node_new(m, CF_OP_STATE, 0, NULL, file, line, col);
    if (!n) return NULL;
    n->name = cf_arena_strdup(&m->arena, name);
    if (!n->name || names_add(&m->carry_names, n)) return NULL;
    n->shape.rank = s.rank + 1;
    n->shape.d[0] = CF_BATCH;
    for (int i = 0; i < s.rank; i++) n->shape.d[i + 1] = s.d[i];
    n->batched = 1;
    n->init = init;
    n->index = m->ncarries;
    m->carries[m->ncarries++] = (struct cf_carry){n, NULL};
    return n;
}

int cf_carry_set_next(cf_model *m, cf_node *carry, cf_node *next)
{
    if (!carry || !next || carry->op != CF_OP_STATE || !carry->batched || carry->model != m || next->model != m)
        return cf_seterr("error: cf_carry_set_next: not a carried state of this model");
    m->carries[carry->index].next = next;
    return 0;
}

int cf_model_add_region(cf_model *m, const cf_region *r)
{
    if (m->nregions == m->cap_regions) {
        int cap = m->cap_regions ? 2 * m->cap_regions : 4;
        cf_region *p = realloc(m->regions, (size_t)cap * sizeof *p);
        if (!p) return cf_oom((size_t)cap * sizeof *p);
        m->regions = p;
        m->cap_regions = cap;
    }
    m->regions[m->nregions++] = *r;
    return 0;
}

int cf_model_add_positions(cf_model *m, cf_node *value, cf_node *table)
{
    if (m->nposuses == m->cap_posuses) {
        int cap = m->cap_posuses ? 2 * m->cap_posuses : 4;
        struct cf_posuse *p = realloc(m->posuses, (size_t)cap * sizeof *p);
        if (!p) return cf_oom((size_t)cap * sizeof *p);
        m->posuses = p;
        m->cap_posuses = cap;
    }
    m->posuses[m->nposuses++] = (struct cf_posuse){value, table};
    return 0;
}

cf_node *cf_scalar_at(cf_model *m, float v, const char *file, int line, int col)
{
    cf_node *n = node_new(m, CF_OP_CONST, 0, NULL, file, line, col);
    if (!n) return NULL;
    n->attr.f[0] = v;
    n->shape.rank = 0;
    return n;
}

/* ---- ops ---- */

cf_node *cf_unary_at(cf_model *m, cf_opcode op, cf_node *x, float a, const char *file, int line, int col)
{
    if (op < 0 || op >= CF_OP_COUNT_ || !cf_ops[op] || cf_ops[op]->nin != 1 || (cf_ops[op]->flags & CF_OWN_BUILDER))
        return cf_build_fail(m, (cf_srcloc){file, line, col}, "op %d is not a one-input op", (int)op);
    cf_node *n = node_new(m, op, 1, &x, file, line, col);
    if (n) n->attr.f[0] = a;
    return n;
}

cf_node *cf_op_at(cf_model *m, cf_opcode op, int nin, cf_node *const *in, const int *ia, int nia, const float *fa,
                  int nfa, const char *file, int line, int col)
{
    cf_srcloc loc = {file, line, col};
    if (op < 0 || op >= CF_OP_COUNT_ || !cf_ops[op] || (cf_ops[op]->flags & CF_OWN_BUILDER) || cf_ops[op]->nin == 0)
        return cf_build_fail(m, loc, "op %d cannot be made by cf_op_at", (int)op);
    if (cf_ops[op]->nin != CF_NIN_ANY && nin != cf_ops[op]->nin)
        return cf_build_fail(m, loc, "%s takes %d input%s, not %d", cf_ops[op]->what, cf_ops[op]->nin,
                             cf_ops[op]->nin == 1 ? "" : "s", nin);
    if (nin < 1 || nin > CF_MAX_INPUTS || nia < 0 || nia > CF_ATTR_INTS || nfa < 0 || nfa > CF_ATTR_FLOATS ||
        (nia && !ia) || (nfa && !fa))
        return cf_build_fail(m, loc, "%s: bad arguments to cf_op_at (%d inputs, %d integers, %d numbers)",
                             cf_ops[op]->what, nin, nia, nfa);
    cf_node *n = node_new(m, op, nin, in, file, line, col);
    if (!n) return NULL;
    for (int k = 0; k < nia; k++) n->attr.i[k] = ia[k];
    for (int k = 0; k < nfa; k++) n->attr.f[k] = fa[k];
    return n;
}

cf_node *cf_call_at(cf_model *m, cf_opcode op, cf_node *x, const double *num, int nnum, const char *file, int line,
                    int col)
{
    cf_srcloc loc = {file, line, col};
    if (op < 0 || op >= CF_OP_COUNT_ || !cf_ops[op] || !(cf_ops[op]->flags & CF_CALL))
        return cf_build_fail(m, loc, "op %d is not a function of one value that cf_call makes", (int)op);
    const cf_opdef *d = cf_ops[op];
    int na = 0;
    while (na < CF_OP_ATTRS && d->attrs[na].name) na++;
    if (nnum < 0 || nnum > na || (nnum && !num))
        return cf_build_fail(m, loc, "%s takes a value and at most %d number%s, not %d", d->name, na,
                             na == 1 ? "" : "s", nnum);
    double v[CF_OP_ATTRS];
    for (int k = 0; k < na; k++) v[k] = k < nnum ? num[k] : NAN;
    int ia[CF_ATTR_INTS] = {0}, nia, nfa;
    float fa[CF_ATTR_FLOATS] = {0};
    int bad = cf_attrs_decode(d, v, ia, &nia, fa, &nfa);
    if (bad && (bad > nnum || isnan(num[bad - 1])))
        return cf_build_fail(m, loc, "%s needs its %s (number %d after the value)", d->name, d->attrs[bad - 1].name,
                             bad);
    if (bad)
        return cf_build_fail(m, loc, "the %s of %s must be a whole number, not %g", d->attrs[bad - 1].name, d->name,
                             num[bad - 1]);
    return cf_op_at(m, op, 1, &x, ia, nia, fa, nfa, file, line, col);
}

cf_node *cf_binary_at(cf_model *m, cf_opcode op, cf_node *a, cf_node *b, const char *file, int line, int col)
{
    int ok = op >= 0 && op < CF_OP_COUNT_ && cf_ops[op] && cf_ops[op]->nin == 2 && !(cf_ops[op]->flags & CF_OWN_BUILDER);
    if (!ok) return cf_build_fail(m, (cf_srcloc){file, line, col}, "op %d is not a two-input op", (int)op);
    cf_node *in[2] = {a, b};
    return node_new(m, op, 2, in, file, line, col);
}

cf_node *cf_reshape_at(cf_model *m, cf_node *x, cf_shape s, const char *file, int line, int col)
{
    cf_srcloc loc = {file, line, col};
    if (s.rank < 0 || s.rank > CF_MAX_DIMS)
        return cf_build_fail(m, loc, "reshape: rank %d is not in 0..%d", s.rank, CF_MAX_DIMS);
    int infer = 0;
    for (int i = 0; i < s.rank; i++) {
        if (s.d[i] == -1 && !infer++) continue;
        if (s.d[i] <= 0)
            return cf_build_fail(m, loc, "reshape: dimension %d is %d (only one may be -1, the rest positive)",
                                 i + 1, s.d[i]);
    }
    cf_node *n = node_new(m, CF_OP_RESHAPE, 1, &x, file, line, col);
    if (n) n->attr.shape = s;
    return n;
}

cf_node *cf_concat_at(cf_model *m, int dim, int n, cf_node *const *xs, const char *file, int line, int col)
{
    cf_srcloc loc = {file, line, col};
    if (n < 1 || n > CF_MAX_INPUTS || !xs)
        return cf_build_fail(m, loc, "concat: %d values given; 1 to %d can be joined", n, CF_MAX_INPUTS);
    cf_node *c = node_new(m, CF_OP_CONCAT, n, xs, file, line, col);
    if (c) c->attr.i[0] = dim;
    return c;
}

cf_node *cf_slice_at(cf_model *m, cf_node *x, int dim, int start, int len, const char *file, int line, int col)
{
    cf_node *n = node_new(m, CF_OP_SLICE, 1, &x, file, line, col);
    if (!n) return NULL;
    n->attr.i[0] = dim;
    n->attr.i[1] = start;
    n->attr.i[2] = len;
    return n;
}

int cf_output(cf_model *m, cf_node *n)
{
    if (!m) return cf_seterr("error: cf_output: no model");
    if (!n) {
        if (!m->builderr) cf_build_fail(m, (cf_srcloc){"?", 0, 0}, "cf_output: the node is NULL");
        return -1;
    }
    if (n->model != m) return cf_seterr("error: cf_output: the node belongs to another model");
    if (m->sealed) return cf_seterr("error: cf_output: the model is sealed (bound or initialised)");
    if (push(&m->outputs, &m->noutputs, &m->cap_outputs, n)) return -1;
    m->shaped = 0;
    return m->noutputs - 1;
}

/* ---- reading ---- */

int cf_node_input_count(const cf_node *n) { return n ? n->nin : 0; }
cf_node *cf_node_input(const cf_node *n, int i) { return n && i >= 0 && i < n->nin ? n->in[i] : NULL; }
const char *cf_node_op_name(const cf_node *n) { return n ? cf_ops[n->op]->name : ""; }
cf_shape cf_node_shape(const cf_node *n) { return n ? n->shape : (cf_shape){0, {0}}; }

/* ---- traces and shapes ---- */

/* A node's trace: one line per enclosing frame, innermost first, then where the
 * outermost was called from (when it was). */
typedef struct {
    const cf_node *n;
    int nframes;      /* frame lines; a last "at" line follows when there are more */
} trace_ctx;

static void trace_line(void *ctx, int k, char *buf)
{
    const trace_ctx *t = ctx;
    cf_srcloc at = t->n->loc;
    const cf_frame *f = t->n->frame;
    for (int i = 0; i < k && f; i++) {
        at = f->call;
        f = f->parent;
    }
    if (k < t->nframes) {
        if (at.col > 0) snprintf(buf, CF_TRACE_LINE, "  in %s at %s:%d:%d", f->name, at.file, at.line, at.col);
        else snprintf(buf, CF_TRACE_LINE, "  in %s at %s:%d", f->name, at.file, at.line);
    } else if (at.col > 0) snprintf(buf, CF_TRACE_LINE, "  at %s:%d:%d", at.file, at.line, at.col);
    else snprintf(buf, CF_TRACE_LINE, "  at %s:%d", at.file, at.line);
}

void cf_adderr_trace(const cf_node *n)
{
    trace_ctx t = {n, 0};
    cf_srcloc at = n->loc;
    for (const cf_frame *f = n->frame; f && t.nframes < CF_MAX_SCOPES; f = f->parent) {
        t.nframes++;
        at = f->call;
        if (!at.file) break;   /* the outermost frame was not called from anywhere (a model file's top) */
    }
    cf_adderr_lines(t.nframes + (at.file != NULL), trace_line, &t);
}

char *cf_shape_str(cf_shape s, char *buf, size_t size)
{
    size_t k = 0;
    k += snprintf(buf + k, size - k, "(");
    for (int i = 0; i < s.rank && k < size; i++) {
        if (s.d[i] == CF_BATCH && i == 0) k += snprintf(buf + k, size - k, "B");
        else k += snprintf(buf + k, size - k, "%s%d", i ? ", " : "", s.d[i]);
    }
    if (k < size) snprintf(buf + k, size - k, ")");
    return buf;
}

size_t cf_shape_count_b(cf_shape s, int batch)
{
    size_t n = 1;
    for (int i = 0; i < s.rank; i++) n *= (size_t)(s.d[i] == CF_BATCH ? batch : s.d[i]);
    return n;
}

size_t cf_shape_count(cf_shape s) { return cf_shape_count_b(s, 1); }

char *cf_shape_format(cf_shape s, char *buf, size_t size) { return cf_shape_str(s, buf, size); }

int cf_model_input_count(const cf_model *m) { return m ? m->ninputs : 0; }
int cf_model_output_count(const cf_model *m) { return m ? m->noutputs : 0; }

const char *cf_model_input_name(const cf_model *m, int i)
{
    return m && i >= 0 && i < m->ninputs ? m->inputs[i]->name : NULL;
}

cf_shape cf_model_input_shape(const cf_model *m, int i)
{
    return m && i >= 0 && i < m->ninputs ? m->inputs[i]->shape : (cf_shape){0, {0}};
}

const char *cf_model_output_op(const cf_model *m, int i)
{
    return m && i >= 0 && i < m->noutputs ? cf_ops[m->outputs[i]->op]->name : NULL;
}

cf_shape cf_model_output_shape(const cf_model *m, int i)
{
    return m && i >= 0 && i < m->noutputs ? m->outputs[i]->shape : (cf_shape){0, {0}};
}

/* The input whose values reach x unchanged, seen through ops that only move values
 * (reshape, flatten, slice), or NULL. */
static const cf_node *source_input(const cf_node *x)
{
    while (x->op == CF_OP_RESHAPE || x->op == CF_OP_FLATTEN || x->op == CF_OP_SLICE) x = x->in[0];
    return x->op == CF_OP_INPUT ? x : NULL;
}

int cf_model_input_classes(const cf_model *m, int i)
{
    if (!m || i < 0 || i >= m->ninputs) return 0;
    int V = 0;
    for (int k = 0; k < m->nnodes; k++) {
        const cf_node *n = m->nodes[k], *x, *E;
        if (n->op == CF_OP_EMBEDDING) x = n->in[0], E = n->in[1];
        else if (n->op == CF_OP_LSTM && n->nin == 7) x = n->in[6], E = n->in[5];   /* an Embedding folded in */
        else continue;
        if (source_input(x) != m->inputs[i]) continue;
        int rows = E->shape.rank == 2 ? E->shape.d[0] : 0;
        if (rows > 0 && (V == 0 || rows < V)) V = rows;
    }
    return V;
}

int cf_node_infer(cf_node *n)
{
    const cf_opdef *op = cf_ops[n->op];
    if (!op->infer) return 0;            /* leaves: shape set when made */
    if (op->infer(n)) {
        cf_adderr_trace(n);
        return -1;
    }
    /* the batch dimension can only stay in front */
    for (int d = 1; d < n->shape.rank; d++)
        if (n->shape.d[d] == CF_BATCH) {
            char s[96];
            cf_seterr("error: %s would move the batch dimension: %s", op->what, cf_shape_str(n->shape, s, sizeof s));
            cf_adderr_trace(n);
            return -1;
        }
    n->batched = n->shape.rank > 0 && n->shape.d[0] == CF_BATCH;
    if (!cf_shape_count_checked(n->shape)) {
        char s[96];
        cf_seterr("error: %s would make a value too large: %s (more than 2^36 elements%s)", op->what,
                  cf_shape_str(n->shape, s, sizeof s), n->batched ? " per sample" : "");
        cf_adderr_trace(n);
        return -1;
    }
    return 0;
}

int cf_model_infer_shapes(cf_model *m)
{
    if (m->builderr) return cf_seterr("%s", m->builderr);
    if (m->shaped) return 0;
    if (m->noutputs == 0) return cf_seterr("error: the model has no outputs (call cf_output)");
    for (int i = 0; i < m->nnodes; i++)
        if (cf_node_infer(m->nodes[i])) return -1;
    m->shaped = 1;
    return 0;
}
