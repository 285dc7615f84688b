/* summary.c - what a model holds and costs, layer by layer, as Keras's
 * model.summary() prints it but tied to the model's source: cf_model_summary and
 * cf_model_flops. Nothing is bound or allocated for the weights: the graph and its
 * shapes are enough, so a model too big to train is summarised all the same.
 *
 * Rows. Only live nodes count: those the outputs need (and the next values of carried
 * states), as cf_bind finds them; a training loss is not part of the model. A node's
 * row comes from its frames, the calls around it, outermost first, below the
 * notation's "model" frame: the first is the model's top-level composite (a Chain, an
 * unroll, a user's net), and an unroll of a Chain looks through to the Chain. The
 * frame one level below the composite is the node's row: one Chain item, one layer
 * (Affine, Conv2D, LSTM, a user's net). A node directly in the composite (relu,
 * flatten, softmax, an unroll's step slicing) is a row of its own, named by its op.
 * Rows with the same template (or op and shape) at the same place in the source are
 * one: the steps of an unroll that is not fused into whole-sequence nodes ("×50").
 * Each model input is a row, first. A model built in C (no "model" frame) has a row
 * per outermost scope (cf_scope_begin) and per node outside any.
 *
 * Levels (cf_model_summary_ex's depth). Those are the rows of level 1. A net row of
 * level L < depth that is made of calls (a node of its own lies in a call below its
 * frame: GPT, a TransformerBlock, repeat's Chain; not an Affine, which is made of ops)
 * is a composite, and its nodes have rows of level L + 1 by the same rule one frame
 * further down: a call inside it, or an op used there directly. A row's key holds its
 * parent's, so the same call under two parents is two rows; the same call made again
 * under one parent (repeat's blocks, an unroll's steps) is one row, "×4". A node's
 * figures count in its deepest row and in every row above it, so a parent holds the
 * totals of its children; the rows are printed as a tree, each after its parent.
 *
 * Parameters and running statistics (model state without the batch dimension) belong
 * to the row of the first live node that reads them directly; when that node has rows
 * on several levels, to the deepest of them whose call made them (GPT's P is listed
 * with GPT, not with the "+" that reads it); see param_row.
 *
 * FLOPs per sample, forward and backward, follow what the kernels compute (src/ops);
 * see cf_model_summary in cflux.h and each op's flops (src/ops). Backward counts the gradients
 * that a training bind (CF_TRAIN, without CF_INPUT_GRADS) computes: a node runs its
 * backward when it carries a gradient (fed by a trainable parameter, on the way to an
 * output), and computes only the input gradients that are wanted; this repeats
 * cf_bind's rules (exec.c) without binding. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/error.h"
#include "core/graph.h"
#include "core/mem.h"
#include "core/rng.h"
#include "exec/passes.h"
#include "ops/op.h"

enum { ROW_INPUT, ROW_NET, ROW_OP };
static const char *kind_names[] = {"input", "layer", "op"};

typedef struct row {
    char *key;                 /* what makes two nodes one row (see row_of) */
    const char *name;          /* the template, op or "Input" */
    char *label;               /* NULL, or the name with the layers folded into it */
    const char *input;         /* ROW_INPUT: the input's name */
    int kind;
    int depth, parent;         /* its level (1: the top) and the row it is under (-1: none) */
    int composite;             /* a net made of calls: rows of the level below show them */
    cf_srcloc place;           /* where it is called (a layer) or made (an op, an input) */
    int calls;                 /* frames (or nodes) merged into it */
    const cf_frame *last_frame;
    const cf_node *out;        /* the value it gives */
    double fwd, bwd;           /* FLOPs per sample, of everything under it */
    double act, act_fixed;     /* bytes of values: per sample, and once (no batch dimension) */
    double weights;            /* numbers in the parameters and statistics under it */
    const cf_node **params;    /* those it lists (none that a row under it lists), as first read */
    int nparams, cap_params;
} row;

typedef struct summary {
    cf_model *m;
    row *rows;
    int nrows, cap_rows;
    int *slots, nslots;        /* hash of keys -> row index + 1 */
    int *rowof;                /* per node: its deepest row (a weight: the row listing it), -1 when dead */
    cf_graph *g;
    cf_analysis an;            /* g's, for training: live, hasgrad, bstep per node */
    unsigned char *live, *hasgrad, *bstep;
    double fwd, bwd, act, act_fixed;
    double trained, frozen, stats;   /* numbers in parameters and statistics */
    const cf_node **unused;    /* parameters and statistics that no live node reads */
    int nunused;
} summary;

/* The rows are of the graph as the structural passes leave it (an LSTM over its
 * sequence is one node), analysed for training without the loss: what cf_bind would
 * run for the outputs, before the passes that only make a step faster. */
static int nsrc(const summary *s, int i) { return CF_NSRC(&s->an, i); }
static const cf_node *src(const summary *s, int i, int j) { return s->g->node[CF_SRC(&s->an, i, j)]; }

/* Elements of a shape in one sample. */
static double count1(cf_shape s) { return cf_count1(s); }

/* ---- rows ---- */

static unsigned long hash_str(const char *s)
{
    uint64_t h = cf_hash_str(s);
    return (unsigned long)(h ^ h >> 32);
}

/* The frame `depth` calls below the outermost of f's chain (of k frames), or NULL. */
static const cf_frame *frame_at(const cf_frame *f, int k, int depth)
{
    for (int i = k - 1; f && i > depth; i--) f = f->parent;
    return depth < k ? f : NULL;
}

static int is_model_frame(const cf_frame *f) { return f && !f->call.file && f->name && strcmp(f->name, "model") == 0; }

static char *place_str(cf_srcloc l, char *buf, size_t size)
{
    if (!l.file) snprintf(buf, size, "-");
    else if (l.col > 0) snprintf(buf, size, "%s:%d:%d", l.file, l.line, l.col);
    else snprintf(buf, size, "%s:%d", l.file, l.line);
    return buf;
}

/* How many frames of node n's chain (*k of them, outermost first) lie above its rows
 * of level 1: "model" and the top-level composite, or with an unroll of a Chain the
 * Chain too; none in C, where each outermost scope is a row. */
static int frames_above_rows(const cf_node *n, int *k)
{
    *k = 0;
    for (const cf_frame *f = n->frame; f; f = f->parent) (*k)++;
    if (!is_model_frame(frame_at(n->frame, *k, 0))) return 0;
    const cf_frame *c = frame_at(n->frame, *k, 1), *in = frame_at(n->frame, *k, 2);
    if (c && in && c->name && in->name && strcmp(c->name, "unroll") == 0 && strcmp(in->name, "Chain") == 0) return 3;
    return 2;
}

/* The call that makes node n's row of `level` (1: the top), or NULL where n is an op
 * of its own there. */
static const cf_frame *level_frame(const cf_node *n, int level)
{
    int k, at = frames_above_rows(n, &k) + level - 1;
    return k > at ? frame_at(n->frame, k, at) : NULL;
}

/* The row of node n (not an input) at `level`, under row `parent` (-1 at level 1): its
 * key, name, kind, place and the frame that makes it (NULL for an op row). */
static void row_of(const cf_node *n, int level, int parent, char *key, size_t size, const char **name, int *kind,
                   cf_srcloc *place, const cf_frame **frame)
{
    char where[512], sh[96];
    const cf_frame *f = level_frame(n, level);
    int at = snprintf(key, size, "%d\x1f", parent);
    if (f) {
        *name = f->name ? f->name : "?";
        *kind = ROW_NET;
        *place = f->call;
        snprintf(key + at, size - (size_t)at, "F\x1f%s\x1f%s", *name, place_str(f->call, where, sizeof where));
    } else {
        *name = cf_ops[n->op]->name;
        *kind = ROW_OP;
        *place = n->loc;
        snprintf(key + at, size - (size_t)at, "O\x1f%s\x1f%s\x1f%s", *name, place_str(n->loc, where, sizeof where),
                 cf_shape_str(n->shape, sh, sizeof sh));
    }
    *frame = f;
}

/* The index of the row with this key, or -1. Given `made`, a missing row is made
 * (*made = 1), and -1 means out of memory (the message set). */
static int find_row(summary *s, const char *key, int *made)
{
    int create = made != NULL;
    if (made) *made = 0;
    if (!create) {
        if (!s->nslots) return -1;
        for (unsigned long h = hash_str(key) & (unsigned long)(s->nslots - 1); s->slots[h];
             h = (h + 1) & (unsigned long)(s->nslots - 1))
            if (strcmp(s->rows[s->slots[h] - 1].key, key) == 0) return s->slots[h] - 1;
        return -1;
    }
    if (2 * (s->nrows + 1) > s->nslots) {       /* grow the hash: half full at most */
        int n = s->nslots ? 2 * s->nslots : 64, *slots = calloc((size_t)n, sizeof *slots);
        if (!slots) return cf_oom((size_t)n * sizeof *slots);
        for (int r = 0; r < s->nrows; r++) {
            unsigned long h = hash_str(s->rows[r].key) & (unsigned long)(n - 1);
            while (slots[h]) h = (h + 1) & (unsigned long)(n - 1);
            slots[h] = r + 1;
        }
        free(s->slots);
        s->slots = slots;
        s->nslots = n;
    }
    unsigned long h = hash_str(key) & (unsigned long)(s->nslots - 1);
    for (; s->slots[h]; h = (h + 1) & (unsigned long)(s->nslots - 1))
        if (strcmp(s->rows[s->slots[h] - 1].key, key) == 0) return s->slots[h] - 1;
    if (s->nrows == s->cap_rows) {
        int cap = s->cap_rows ? 2 * s->cap_rows : 16;
        row *r = realloc(s->rows, (size_t)cap * sizeof *r);
        if (!r) return cf_oom((size_t)cap * sizeof *r);
        s->rows = r;
        s->cap_rows = cap;
    }
    row *r = &s->rows[s->nrows];
    memset(r, 0, sizeof *r);
    if (!(r->key = strdup(key))) return cf_oom(strlen(key) + 1);
    s->slots[h] = ++s->nrows;
    *made = 1;
    return s->nrows - 1;
}

static int add_param(row *r, const cf_node *p)
{
    if (r->nparams == r->cap_params) {
        int cap = r->cap_params ? 2 * r->cap_params : 4;
        const cf_node **q = realloc(r->params, (size_t)cap * sizeof *q);
        if (!q) return cf_oom((size_t)cap * sizeof *q);
        r->params = q;
        r->cap_params = cap;
    }
    r->params[r->nparams++] = p;
    return 0;
}

/* A parameter or a statistic: what a row lists. */
static int is_weight(const cf_node *n) { return n->op == CF_OP_PARAM || (n->op == CF_OP_STATE && !n->batched); }

static int by_id(const void *a, const void *b)
{
    int x = (*(const cf_node *const *)a)->id, y = (*(const cf_node *const *)b)->id;
    return (x > y) - (x < y);
}

/* Each row's parameters in the model's order; and a row that reads parameters made in
 * another layer's call that has no row of its own (an Embedding folded into the LSTM
 * after it) is named after both: "Embedding+LSTM". */
static int name_folded(summary *s)
{
    char key[1024];
    for (int r = 0; r < s->nrows; r++) {
        row *w = &s->rows[r];
        if (w->nparams > 1) qsort(w->params, (size_t)w->nparams, sizeof *w->params, by_id);
        for (int i = 0; i < w->nparams; i++) {
            const char *name;
            int kind;
            cf_srcloc place;
            const cf_frame *frame;
            row_of(w->params[i], w->depth, w->parent, key, sizeof key, &name, &kind, &place, &frame);
            if (kind != ROW_NET || find_row(s, key, NULL) >= 0) continue;
            const char *now = w->label ? w->label : w->name;
            size_t n = strlen(name) + strlen(now) + 2;
            char *label = malloc(n);
            if (!label) return cf_oom(n);
            snprintf(label, n, "%s+%s", name, now);
            free(w->label);
            w->label = label;
        }
    }
    return 0;
}

static void summary_free(summary *s)
{
    for (int r = 0; r < s->nrows; r++) {
        free(s->rows[r].key);
        free(s->rows[r].label);
        free(s->rows[r].params);
    }
    free(s->rows);
    free(s->slots);
    free(s->rowof);
    cf_analysis_free(&s->an);
    cf_graph_free(s->g);
    free(s->unused);
}

/* A node whose figures a row counts: live and computed (not an input or a weight). */
static int counted(const summary *s, int i) { return s->live[i] && !cf_is_leaf(s->g->node[i]); }

/* Is row a the row r or one above it? */
static int row_within(const summary *s, int r, int a)
{
    for (; r >= 0; r = s->rows[r].parent)
        if (r == a) return 1;
    return 0;
}

/* A row per live model input, first, in their order. */
static int input_rows(summary *s)
{
    char key[64];
    int made;
    for (int i = 0; i < s->m->ninputs; i++) {
        const cf_node *n = s->m->inputs[i];
        if (!s->live[n->id]) continue;          /* a loss's labels */
        snprintf(key, sizeof key, "I\x1f%d", n->id);
        int r = find_row(s, key, &made);
        if (r < 0) return -1;
        row *w = &s->rows[r];
        w->name = "Input";
        w->input = n->name;
        w->kind = ROW_INPUT;
        w->depth = 1;
        w->parent = -1;
        w->place = n->loc;
        w->calls = 1;
        w->out = n;
        s->rowof[n->id] = r;
    }
    return 0;
}

/* Mark the net rows of `level` that are made of calls: a node of theirs lies in a call
 * below their own. Whether any is. */
static int mark_composite(summary *s, int level)
{
    int any = 0;
    for (int i = 0; i < s->m->nnodes; i++) {
        if (!counted(s, i)) continue;
        row *w = &s->rows[s->rowof[i]];
        if (w->depth == level && w->kind == ROW_NET && level_frame(s->g->node[i], level + 1))
            any = w->composite = 1;
    }
    return any;
}

/* The rows of `level`: at 1 the top level's, below it those inside each composite row
 * of the level above; each node's s->rowof moves down to its row there. Rows are made
 * in the order of their first nodes. */
static int level_rows(summary *s, int level)
{
    char key[1024];
    for (int i = 0; i < s->m->nnodes; i++) {
        if (!counted(s, i)) continue;
        int parent = level == 1 ? -1 : s->rowof[i];
        if (parent >= 0 && (s->rows[parent].depth != level - 1 || !s->rows[parent].composite)) continue;
        const char *name;
        int kind, made;
        cf_srcloc place;
        const cf_frame *frame;
        row_of(s->g->node[i], level, parent, key, sizeof key, &name, &kind, &place, &frame);
        int r = find_row(s, key, &made);
        if (r < 0) return -1;
        if (made) {
            row *w = &s->rows[r];
            w->name = name;
            w->kind = kind;
            w->place = place;
            w->depth = level;
            w->parent = parent;
        }
        s->rowof[i] = r;
    }
    return 0;
}

/* The row that lists parameter p, first read by node n: of n's rows, the deepest
 * whose call made p or a call around it (GPT's P, read by a "+" of GPT's own that has
 * a row below GPT's, goes with GPT); else n's deepest row (a parameter made outside
 * any call, an Embedding's table read by the LSTM it is folded into). */
static int param_row(const summary *s, const cf_node *n, const cf_node *p)
{
    for (int r = s->rowof[n->id]; r >= 0; r = s->rows[r].parent) {
        const cf_frame *f = level_frame(n, s->rows[r].depth);
        for (const cf_frame *g = p->frame; f && g; g = g->parent)
            if (g == f) return r;
    }
    return s->rowof[n->id];
}

/* Each node's FLOPs and values into its deepest row and every row above it, its calls
 * counted on each; the weights it reads first listed by their row (param_row) and
 * counted there and above. */
static int count_nodes(summary *s)
{
    unsigned char want[CF_MAX_INPUTS + 1];
    for (int i = 0; i < s->m->nnodes; i++) {
        if (!counted(s, i)) continue;
        const cf_node *n = s->g->node[i];
        for (int j = 0; j < nsrc(s, i) && j <= CF_MAX_INPUTS; j++)
            want[j] = s->bstep[i] && s->hasgrad[src(s, i, j)->id] && cf_slot_differentiable(&s->an, n, j);
        double f = 0, b = 0, bytes = 4 * count1(n->shape);
        if (cf_ops[n->op]->flops) cf_ops[n->op]->flops(n, want, &f, &b);   /* none: CF_NO_FLOPS */
        for (int r = s->rowof[i]; r >= 0; r = s->rows[r].parent) {
            row *w = &s->rows[r];
            const cf_frame *frame = w->kind == ROW_NET ? level_frame(n, w->depth) : NULL;
            if (w->kind == ROW_OP || frame != w->last_frame) w->calls++;
            w->last_frame = frame;
            w->fwd += f;
            w->bwd += s->bstep[i] ? b : 0;
            if (n->batched) w->act += bytes;
            else w->act_fixed += bytes;
        }
        for (int j = 0; j < n->nin; j++) {
            const cf_node *p = n->in[j];
            if (!is_weight(p) || s->rowof[p->id] >= 0) continue;
            int r = param_row(s, n, p);
            s->rowof[p->id] = r;
            if (add_param(&s->rows[r], p)) return -1;
            for (; r >= 0; r = s->rows[r].parent) s->rows[r].weights += count1(p->shape);
        }
    }
    return 0;
}

/* x, one of row r's nodes, is read outside r or given out: r's value is the last such. */
static void offer_out(summary *s, int r, const cf_node *x)
{
    if (!s->rows[r].out || s->rows[r].out->id < x->id) s->rows[r].out = x;
}

/* Each row's value: the last of its nodes read by a node outside it (not in it or a
 * row under it) or given out; else its first node. */
static void row_outputs(summary *s)
{
    const cf_model *m = s->m;
    for (int i = 0; i < m->nnodes; i++) {
        if (!counted(s, i)) continue;
        const cf_node *n = s->g->node[i];
        for (int j = 0; j < n->nin; j++) {
            const cf_node *x = s->g->node[n->in[j]->id];
            if (is_weight(x)) continue;
            /* x's rows from the deepest up, until one that holds n too */
            for (int r = s->rowof[x->id]; r >= 0 && !row_within(s, s->rowof[i], r); r = s->rows[r].parent)
                offer_out(s, r, x);
        }
    }
    for (int o = 0; o < m->noutputs; o++)
        for (int r = s->rowof[m->outputs[o]->id]; r >= 0; r = s->rows[r].parent) offer_out(s, r, m->outputs[o]);
    for (int i = 0; i < m->nnodes; i++)
        if (s->g->node[i] && !is_weight(s->g->node[i]))
            for (int r = s->rowof[i]; r >= 0; r = s->rows[r].parent)
                if (!s->rows[r].out) s->rows[r].out = s->g->node[i];
}

/* Row r and the rows under it, depth first, into order[*n]. */
static void tree_order(int r, const int *child, const int *next, int *order, int *n)
{
    order[(*n)++] = r;
    for (int c = child[r]; c >= 0; c = next[c]) tree_order(c, child, next, order, n);
}

/* The rows in the order they print: each followed by the rows under it, siblings in
 * the order they were made; level 1 keeps its order. Indices in s->rowof, the rows'
 * parents and the key hash follow, but keys keep the parents' indices they were made
 * with (row_of): rows are found by key before this, never after. */
static int sort_tree(summary *s)
{
    int n = s->nrows;
    int *child = malloc((size_t)(4 * n + 1) * sizeof *child);
    row *sorted = malloc((size_t)(n + 1) * sizeof *sorted);
    if (!child || !sorted) {
        free(child);
        free(sorted);
        return cf_oom((size_t)n * (4 * sizeof *child + sizeof *sorted));
    }
    int *next = child + n, *order = next + n, *index = order + n, k = 0;
    for (int r = 0; r < n; r++) child[r] = next[r] = -1;
    for (int r = n - 1; r >= 0; r--)            /* children lists, in the order made */
        if (s->rows[r].parent >= 0) {
            next[r] = child[s->rows[r].parent];
            child[s->rows[r].parent] = r;
        }
    for (int r = 0; r < n; r++)
        if (s->rows[r].parent < 0) tree_order(r, child, next, order, &k);
    for (int i = 0; i < n; i++) index[order[i]] = i;
    for (int i = 0; i < n; i++) {
        sorted[i] = s->rows[order[i]];
        if (sorted[i].parent >= 0) sorted[i].parent = index[sorted[i].parent];
    }
    for (int i = 0; i < s->m->nnodes; i++)
        if (s->rowof[i] >= 0) s->rowof[i] = index[s->rowof[i]];
    for (int h = 0; h < s->nslots; h++)
        if (s->slots[h]) s->slots[h] = index[s->slots[h] - 1] + 1;
    free(s->rows);
    s->rows = sorted;
    s->cap_rows = n;
    free(child);
    return 0;
}

/* The whole model's figures: the top level's rows hold everything once; every
 * parameter and statistic counts, read or not. */
static void totals(summary *s)
{
    for (int r = 0; r < s->nrows; r++) {
        row *w = &s->rows[r];
        if (w->kind == ROW_INPUT) w->act += 4 * count1(w->out->shape);
        if (w->parent >= 0) continue;
        s->fwd += w->fwd;
        s->bwd += w->bwd;
        s->act += w->act;
        s->act_fixed += w->act_fixed;
    }
    for (int i = 0; i < s->m->nnodes; i++) {
        const cf_node *n = s->g->node[i];
        if (!n || !is_weight(n)) continue;
        double c = count1(n->shape);
        if (n->op == CF_OP_STATE) s->stats += c;
        else if (n->req == CF_GRAD_NONE) s->frozen += c;
        else s->trained += c;
        if (s->rowof[i] < 0) s->unused[s->nunused++] = n;
    }
}

/* The rows of m down to `depth` levels (1: the top level's alone), with their figures
 * and the totals. 0, or -1 with the error; s is to be freed either way. */
static int summarise(cf_model *m, int depth, summary *s)
{
    memset(s, 0, sizeof *s);
    s->m = m;
    if (!m) return cf_seterr("error: cf_model_summary: no model");
    if (cf_model_infer_shapes(m)) return -1;
    int nn = m->nnodes;
    s->rowof = malloc((size_t)(nn ? nn : 1) * sizeof *s->rowof);
    s->unused = malloc((size_t)(m->nparams + m->nstates + 1) * sizeof *s->unused);
    if (!s->rowof || !s->unused) return cf_oom((size_t)nn * sizeof(int));
    if (!(s->g = cf_graph_new(m)) || cf_graph_lower(s->g, &s->an, CF_TRAIN | CF_ANALYSE_NO_LOSS, 0)) return -1;
    s->live = s->an.live;
    s->hasgrad = s->an.hasgrad;
    s->bstep = s->an.bstep;
    for (int i = 0; i < nn; i++) s->rowof[i] = -1;
    if (input_rows(s)) return -1;
    for (int level = 1; level <= depth; level++) {
        if (level > 1 && !mark_composite(s, level - 1)) break;   /* no row left to open */
        if (level_rows(s, level)) return -1;
    }
    if (count_nodes(s) || name_folded(s) || sort_tree(s)) return -1;
    row_outputs(s);
    totals(s);
    return 0;
}

/* ---- cf_model_flops ---- */

int cf_model_flops(cf_model *m, double *forward, double *backward)
{
    summary s;
    int rc = summarise(m, 1, &s);
    if (rc == 0) {
        if (forward) *forward = s.fwd;
        if (backward) *backward = s.bwd;
    }
    summary_free(&s);
    return rc;
}

/* ---- the table ---- */

/* A count in 4 significant digits: "128", "200.8K", "1.235G" (powers of 1000). */
static char *count_str(double v, char *buf, size_t size)
{
    static const char *unit[] = {"", "K", "M", "G", "T", "P", "E"};
    int u = 0;
    while (v >= 999.95 && u < 6) v /= 1000, u++;
    if (u == 0) snprintf(buf, size, "%.0f", v);
    else snprintf(buf, size, "%.*f%s", v >= 99.995 ? 1 : v >= 9.9995 ? 2 : 3, v, unit[u]);
    return buf;
}

static char *bytes_str(double v, char *buf)
{
    return cf_mem_str(v > 0 ? (size_t)v : 0, buf);
}

/* Columns on a terminal: UTF-8 code points ("σ", "×" are one each). */
static int width(const char *s)
{
    int w = 0;
    for (; *s; s++) w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

/* s padded to w columns, left (left != 0) or right aligned. */
static void put_col(FILE *out, const char *s, int w, int left)
{
    int pad = w - width(s);
    if (!left) fprintf(out, "%*s", pad > 0 ? pad : 0, "");
    fputs(s, out);
    if (left) fprintf(out, "%*s", pad > 0 ? pad : 0, "");
}

static void rule(FILE *out, int c, int n)
{
    for (int i = 0; i < n; i++) fputc(c, out);
    fputc('\n', out);
}

static char *shape_b(cf_shape s, int batch, char *buf, size_t size)
{
    if (batch > 0)
        for (int i = 0; i < s.rank; i++)
            if (s.d[i] == CF_BATCH) s.d[i] = batch;
    return cf_shape_str(s, buf, size);
}

enum { C_NAME, C_PLACE, C_OUT, C_PARAMS, C_FWD, C_BWD, C_ACT, NCOL };
static const char *heads[NCOL] = {"Layer", "Place", "Output", "Params", "FLOPs fwd", "FLOPs bwd", "Activations"};

/* Columns a row of `depth` is indented by: 2 a level below the top. */
static int indent_of(int depth) { return 2 * (depth - 1); }

/* A row's cells; with `own` (the model's file), places in it are written with its
 * base name only, to keep the table narrow (the heading names the file in full). */
/* The row's frozen parameters (CF_GRAD_NONE), counted, and whether they are all its
 * parameters (its statistics are never trained): the table marks them. */
static double row_frozen(const row *w, int *all)
{
    double c = 0;
    int trained = 0;
    for (int i = 0; i < w->nparams; i++) {
        const cf_node *q = w->params[i];
        if (q->op == CF_OP_PARAM && q->req == CF_GRAD_NONE) c += count1(q->shape);
        else if (q->op == CF_OP_PARAM) trained = 1;
    }
    if (all) *all = c > 0 && !trained;
    return c;
}

static void row_cells(const row *w, int batch, const char *own, char cell[NCOL][160])
{
    char sh[96];
    if (w->kind == ROW_INPUT) snprintf(cell[C_NAME], 160, "Input %s", w->input);
    else snprintf(cell[C_NAME], 160, "%*s%s", indent_of(w->depth), "", w->label ? w->label : w->name);
    cf_srcloc at = w->place;
    if (own && at.file && strcmp(at.file, own) == 0 && strrchr(own, '/')) at.file = strrchr(own, '/') + 1;
    place_str(at, cell[C_PLACE], 160);
    shape_b(w->out->shape, batch, sh, sizeof sh);
    if (w->calls > 1) snprintf(cell[C_OUT], 160, "%s ×%d", sh, w->calls);
    else snprintf(cell[C_OUT], 160, "%s", sh);
    int all;
    double frozen = row_frozen(w, &all);
    if (all) snprintf(cell[C_PARAMS], 160, "%.0f (frozen)", w->weights);
    else if (frozen > 0) snprintf(cell[C_PARAMS], 160, "%.0f (%.0f frozen)", w->weights, frozen);
    else snprintf(cell[C_PARAMS], 160, "%.0f", w->weights);
    count_str(w->fwd, cell[C_FWD], 160);
    count_str(w->bwd, cell[C_BWD], 160);
    char b[CF_MEM_STR];
    snprintf(cell[C_ACT], 160, "%s", bytes_str(w->act + w->act_fixed, b));
}

/* Print items "name count" separated by ", " after `lead`, wrapped at `max` columns
 * with continuation lines indented by `indent`. */
typedef struct wrap {
    FILE *out;
    int col, indent, max, first;
} wrap;

static void wrap_item(wrap *p, const char *item)
{
    int w = width(item) + (p->first ? 0 : 2);
    if (!p->first && p->col + w > p->max) {
        fprintf(p->out, ",\n%*s", p->indent, "");
        p->col = p->indent;
        w -= 2;
    } else if (!p->first) {
        fputs(", ", p->out);
    }
    fputs(item, p->out);
    p->col += w;
    p->first = 0;
}

static void list_params(FILE *out, const cf_node *const *ps, int n, int indent, int max)
{
    wrap p = {out, indent, indent, max, 1};
    char item[256];
    fprintf(out, "%*s", indent, "");
    int stats = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) {
            const cf_node *q = ps[i];
            if ((q->op == CF_OP_STATE) != pass) continue;
            if (pass && !stats++) {
                const char *lead = p.first ? "statistics (not trained): " : "; statistics (not trained): ";
                fputs(lead, out);
                p.col += width(lead);
                p.first = 1;
            }
            snprintf(item, sizeof item, "%s %.0f%s", q->name, count1(q->shape),
                     q->op == CF_OP_PARAM && q->req == CF_GRAD_NONE ? " (frozen)" : "");
            wrap_item(&p, item);
        }
    fputc('\n', out);
}

static void print_table(const summary *s, int batch, FILE *out)
{
    const cf_model *m = s->m;
    int wd[NCOL], total = 0;
    const char *own = NULL;
    char cell[NCOL][160];
    for (int pass = 0; pass < 2; pass++) {   /* again with short places, if too wide */
        for (int c = 0; c < NCOL; c++) wd[c] = width(heads[c]);
        for (int r = 0; r < s->nrows; r++) {
            row_cells(&s->rows[r], batch, own, cell);
            for (int c = 0; c < NCOL; c++)
                if (width(cell[c]) > wd[c]) wd[c] = width(cell[c]);
        }
        total = 0;
        for (int c = 0; c < NCOL; c++) total += wd[c] + (c ? 2 : 0);
        if (total <= 100 || !(own = m->source_name)) break;
    }
    /* the model: its file and top-level composite, when it came from the notation */
    const cf_frame *top = NULL;
    for (int i = 0; i < m->nnodes && !top; i++) {
        const cf_frame *f = m->nodes[i]->frame;
        int k = 0;
        for (const cf_frame *g = f; g; g = g->parent) k++;
        if (k >= 2 && is_model_frame(frame_at(f, k, 0))) top = frame_at(f, k, 1);
    }
    char where[512];
    if (top && top->name) fprintf(out, "Model: %s at %s", top->name, place_str(top->call, where, sizeof where));
    else fprintf(out, "Model: %s", m->source_name ? m->source_name : "built in C");
    if (batch > 0) fprintf(out, "\nFLOPs and activations are per sample; the batch is %d.\n", batch);
    else fprintf(out, "\nFLOPs and activations are per sample; B is the batch size.\n");
    for (int c = 0; c < NCOL; c++) {
        if (c) fputs("  ", out);
        put_col(out, heads[c], wd[c], c < C_PARAMS);
    }
    fputc('\n', out);
    rule(out, '=', total);
    int maxw = total > 72 ? total : 72;
    for (int r = 0; r < s->nrows; r++) {
        const row *w = &s->rows[r];
        row_cells(w, batch, own, cell);
        for (int c = 0; c < NCOL; c++) {
            if (c) fputs("  ", out);
            put_col(out, cell[c], wd[c], c < C_PARAMS);
        }
        fputc('\n', out);
        if (w->nparams) list_params(out, w->params, w->nparams, 4 + indent_of(w->depth), maxw);
    }
    rule(out, '-', total);
    char a[32], b[32], c1[CF_MEM_STR], c2[CF_MEM_STR];
    fprintf(out, "Parameters: %.0f trained", s->trained);
    if (s->frozen > 0) fprintf(out, ", %.0f frozen", s->frozen);
    if (s->stats > 0) fprintf(out, "; %.0f running statistics (not trained)", s->stats);
    fprintf(out, "; %s\n", bytes_str(4 * (s->trained + s->frozen + s->stats), c1));
    if (s->nunused) {
        fprintf(out, "Not read by the outputs:\n");
        list_params(out, s->unused, s->nunused, 4, maxw);
    }
    fprintf(out, "FLOPs a sample: %s forward, %s backward (2 per multiply-add)\n", count_str(s->fwd, a, sizeof a),
            count_str(s->bwd, b, sizeof b));
    fprintf(out, "Activations a sample: %s", bytes_str(s->act, c1));
    if (s->act_fixed > 0) fprintf(out, " (and %s without the batch dimension)", bytes_str(s->act_fixed, c2));
    if (batch > 0) fprintf(out, "; at batch %d: %s", batch, bytes_str(s->act * batch + s->act_fixed, c2));
    fputc('\n', out);
}

/* ---- JSON ----
 *
 * cJSON adds nothing to a NULL parent and keeps no item it failed to add, so each
 * addition is checked: a failure clears *ok, the caller drops the whole tree and says
 * it ran out of memory, rather than print part of it. */

/* item into o, under key (into the array o when key is NULL); on failure it is freed */
static void put(cJSON *o, const char *key, cJSON *item, int *ok)
{
    if (item && o && (key ? cJSON_AddItemToObject(o, key, item) : cJSON_AddItemToArray(o, item))) return;
    cJSON_Delete(item);
    *ok = 0;
}

static void put_num(cJSON *o, const char *key, double v, int *ok)
{
    if (!cJSON_AddNumberToObject(o, key, v)) *ok = 0;
}

static void put_str(cJSON *o, const char *key, const char *v, int *ok)
{
    if (!cJSON_AddStringToObject(o, key, v)) *ok = 0;
}

static cJSON *shape_json(cf_shape s, int batch, int *ok)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < s.rank; i++)
        put(a, NULL, cJSON_CreateNumber(s.d[i] == CF_BATCH && batch > 0 ? batch : s.d[i]), ok);
    if (!a) *ok = 0;
    return a;
}

static cJSON *param_json(const cf_node *p, int *ok)
{
    cJSON *o = cJSON_CreateObject();
    put_str(o, "name", p->name, ok);
    put(o, "shape", shape_json(p->shape, 0, ok), ok);
    put_num(o, "count", count1(p->shape), ok);
    const char *kind = p->op == CF_OP_STATE ? "statistic" : p->req == CF_GRAD_NONE ? "frozen" : "trained";
    put_str(o, "kind", kind, ok);
    return o;
}

static cJSON *params_json(const cf_node *const *ps, int n, int *ok)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) put(a, NULL, param_json(ps[i], ok), ok);
    return a;
}

static cJSON *row_json(const row *w, int batch, int *ok)
{
    char buf[512];
    cJSON *o = cJSON_CreateObject();
    if (w->kind == ROW_INPUT) snprintf(buf, sizeof buf, "Input %s", w->input);
    else snprintf(buf, sizeof buf, "%s", w->label ? w->label : w->name);
    put_str(o, "name", buf, ok);
    put_str(o, "kind", kind_names[w->kind], ok);
    put_num(o, "depth", w->depth, ok);
    put_num(o, "parent", w->parent, ok);
    put_str(o, "place", place_str(w->place, buf, sizeof buf), ok);
    if (w->place.file) {
        put_str(o, "file", w->place.file, ok);
        put_num(o, "line", w->place.line, ok);
        put_num(o, "col", w->place.col, ok);
    }
    put_str(o, "output", shape_b(w->out->shape, batch, buf, sizeof buf), ok);
    put(o, "output_shape", shape_json(w->out->shape, batch, ok), ok);
    put_num(o, "calls", w->calls, ok);
    put_num(o, "param_count", w->weights, ok);
    put_num(o, "param_frozen", row_frozen(w, NULL), ok);
    put(o, "params", params_json(w->params, w->nparams, ok), ok);
    put_num(o, "flops_forward", w->fwd, ok);
    put_num(o, "flops_backward", w->bwd, ok);
    put_num(o, "activation_bytes", w->act, ok);
    if (w->act_fixed > 0) put_num(o, "activation_bytes_unbatched", w->act_fixed, ok);
    return o;
}

static cJSON *totals_json(const summary *s, int batch, int *ok)
{
    cJSON *t = cJSON_CreateObject();
    put_num(t, "trained", s->trained, ok);
    put_num(t, "frozen", s->frozen, ok);
    put_num(t, "statistics", s->stats, ok);
    put_num(t, "weight_bytes", 4 * (s->trained + s->frozen + s->stats), ok);
    put_num(t, "flops_forward", s->fwd, ok);
    put_num(t, "flops_backward", s->bwd, ok);
    put_num(t, "activation_bytes", s->act, ok);
    put_num(t, "activation_bytes_unbatched", s->act_fixed, ok);
    if (batch > 0) put_num(t, "activation_bytes_batch", s->act * batch + s->act_fixed, ok);
    if (s->nunused) put(t, "unused", params_json(s->unused, s->nunused, ok), ok);
    return t;
}

static int print_json(const summary *s, int batch, FILE *out)
{
    int ok = 1;
    cJSON *root = cJSON_CreateObject(), *rows = cJSON_CreateArray();
    if (s->m->source_name) put_str(root, "model", s->m->source_name, &ok);
    put_num(root, "batch", batch > 0 ? batch : 0, &ok);
    for (int r = 0; r < s->nrows; r++) put(rows, NULL, row_json(&s->rows[r], batch, &ok), &ok);
    put(root, "rows", rows, &ok);
    put(root, "totals", totals_json(s, batch, &ok), &ok);
    char *text = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!text) return cf_oom(0);
    fprintf(out, "%s\n", text);
    cJSON_free(text);
    return 0;
}

int cf_model_summary_ex(cf_model *m, int batch, int json, int depth, FILE *out)
{
    if (!out) return cf_seterr("error: cf_model_summary: no stream to write to");
    if (batch < 0) return cf_seterr("error: cf_model_summary: batch %d; it must be 0 (B) or more", batch);
    if (depth < 1) return cf_seterr("error: cf_model_summary: depth %d; it must be 1 (the top level) or more", depth);
    summary s;
    int rc = summarise(m, depth, &s);
    if (rc == 0) rc = json ? print_json(&s, batch, out) : (print_table(&s, batch, out), 0);
    summary_free(&s);
    if (rc == 0 && ferror(out)) rc = cf_seterr("error: cf_model_summary: could not write the summary");
    return rc;
}

int cf_model_summary(cf_model *m, int batch, int json, FILE *out)
{
    return cf_model_summary_ex(m, batch, json, 1, out);
}
