/* cached.c - a model of causal attention over a window (a GPT) made into one that reads
 * one position per forward against cached keys and values (cf_model_load_cached).
 *
 * The window model reads x (B, T) and gives (B, T, ...): each position sees those
 * before it through its attention, softmax(q k^T, causal = true) v, and knows where it
 * is through positions(P, x). Run one position at a time, a position's keys and values
 * never change once computed, so they are kept: the model as written is compiled, then
 *  - its input becomes (B, 1), one position;
 *  - a carried state pos (B, 1) counts the positions read (pos + 1 after each forward);
 *  - each attention  s = q * transpose(k); a = softmax(s, causal); [dropout(a)]; a * v
 *    becomes  attention(q, Kw, Vw, pos), with Kw = cache_write(Kc, k, pos) and the
 *    same for v: Kc and Vc carried states of T positions (zeros at first), each
 *    taking its written value after the forward, and the query seeing keys 0..pos;
 *  - each positions(P, x) becomes rows_at(P, pos), the table's row at pos.
 * Everything else is computed on the one position as on each of the window's, so the
 * outputs are the window model's at that position, to rounding. A model that mixes
 * positions some other way (a product over the sequence, a convolution along it)
 * would be wrong run so; cflux sample compares the two on its prime text.
 * The parameters keep their names: a checkpoint of the window model loads. The caches
 * and pos are carried states (cf_exec_reset_state empties them); after T forwards the
 * cache is full and the next forward fails. Loaded to read n positions a forward
 * (cf_model_load_cached_n: a prompt at once), the input is (B, n), pos goes on by n, and
 * the attention's n queries see the cache up to each one's own position. */
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/error.h"
#include "core/graph.h"
#include "ops/op.h"

/* An attention found: its nodes. */
typedef struct found {
    cf_node *out, *q, *k, *v;
} found;

/* Readers of each node (inputs of computed nodes, outputs, carries' next values). */
static int *reader_counts(const cf_model *m)
{
    int *uses = calloc((size_t)m->nnodes + 1, sizeof *uses);
    if (!uses) return cf_oom(((size_t)m->nnodes + 1) * sizeof *uses), NULL;
    for (int i = 0; i < m->nnodes; i++)
        for (int j = 0; j < m->nodes[i]->nin; j++) uses[m->nodes[i]->in[j]->id]++;
    for (int i = 0; i < m->noutputs; i++) uses[m->outputs[i]->id] += 2;
    for (int i = 0; i < m->ncarries; i++)
        if (m->carries[i].next) uses[m->carries[i].next->id] += 2;
    return uses;
}

/* Node `out` as the end of an attention (see the top), into *f: 1, 0 when it is not. */
static int attention_at(cf_node *out, const int *uses, found *f)
{
    if (out->op != CF_OP_MATMUL) return 0;
    cf_node *a = out->in[0];
    if (a->op == CF_OP_DROPOUT) {
        if (uses[a->id] != 1) return 0;
        a = a->in[0];
    }
    if (a->op != CF_OP_SOFTMAX || a->attr.f[0] == 0 || uses[a->id] != 1) return 0;
    cf_node *s = a->in[0];
    if (s->op != CF_OP_MATMUL || uses[s->id] != 1 || s->in[1]->op != CF_OP_TRANSPOSE) return 0;
    cf_node *kt = s->in[1];
    int r = s->in[0]->shape.rank;
    if (r < 3 || kt->attr.i[2] != r - 2 || kt->attr.i[3] != r - 1 || !s->in[0]->batched) return 0;
    *f = (found){out, s->in[0], kt->in[0], out->in[1]};
    return 1;
}

/* m's nodes in an order where each comes after its inputs: the model's order, with the
 * nodes added since (ids from `first` on) just before their first reader. */
static int visit(cf_model *m, cf_node *n, unsigned char *done, cf_node **order, int *k)
{
    if (done[n->id]) return 0;
    done[n->id] = 1;
    for (int j = 0; j < n->nin; j++)
        if (visit(m, n->in[j], done, order, k)) return -1;
    order[(*k)++] = n;
    return 0;
}

static int renumber(cf_model *m, int first)
{
    int n = m->nnodes;
    unsigned char *done = calloc((size_t)n, 1);
    cf_node **order = malloc((size_t)n * sizeof *order);
    if (!done || !order) {
        free(done);
        free(order);
        return cf_oom((size_t)n * (1 + sizeof *order));
    }
    int k = 0;
    for (int i = 0; i < first; i++) visit(m, m->nodes[i], done, order, &k);
    for (int i = first; i < n; i++) visit(m, m->nodes[i], done, order, &k);
    for (int i = 0; i < n; i++) {
        m->nodes[i] = order[i];
        order[i]->id = i;
    }
    free(done);
    free(order);
    return 0;
}

static int make_cached(cf_model *m, const char *path, int n)
{
    int *uses = reader_counts(m);
    if (!uses) return -1;
    found *att = malloc((size_t)m->nnodes * sizeof *att);
    int natt = 0;
    if (!att) {
        free(uses);
        return cf_oom((size_t)m->nnodes * sizeof *att);
    }
    for (int i = 0; i < m->nnodes; i++)
        if (attention_at(m->nodes[i], uses, &att[natt])) natt++;
    free(uses);
    int rc = -1;
    /* what a model lacks most first: without causal attention (a CNN, say) there is
       nothing to cache, whatever its input (cflux bench asks every model) */
    if (natt == 0) {
        cf_seterr("error: %s: no causal attention to cache (softmax(q * transpose(k, 2, 3), causal = true) * v)",
                  path);
        goto out;
    }
    if (m->ninputs != 1 || m->inputs[0]->shape.rank != 2 || !m->inputs[0]->batched) {
        cf_seterr("error: %s: a cached model reads one sequence of T positions, (B, T)", path);
        goto out;
    }
    if (n < 1 || n > m->inputs[0]->shape.d[1]) {
        cf_seterr("error: %s: a cached model reads from 1 to T = %d positions a forward, not %d", path,
                  m->inputs[0]->shape.d[1], n);
        goto out;
    }
    if (m->nregions) {
        cf_seterr("error: %s: a cached model runs attention one position at a time; this one unrolls a recurrent "
                  "net (run it a step at a time with cf_model_load_steps)", path);
        goto out;
    }
    cf_node *x = m->inputs[0];
    int T = x->shape.d[1], first = m->nnodes;
    cf_node *pos = cf_carry_at(m, "cache.position", CF_SHAPE(1), CF_ZEROS, path, 0, 0);
    cf_node *next = pos ? cf_add(m, pos, cf_scalar(m, (float)n)) : NULL;
    if (!next || cf_carry_set_next(m, pos, next)) goto out;
    for (int i = 0; i < natt; i++) {
        found *f = &att[i];
        cf_node *w[2];
        for (int kv = 0; kv < 2; kv++) {   /* the keys' cache, then the values' */
            cf_node *rows = kv ? f->v : f->k;
            cf_shape s = rows->shape;   /* (B, ..., T, D): per sample (..., T, D) */
            s.rank--;
            memmove(s.d, s.d + 1, (size_t)s.rank * sizeof *s.d);
            char name[64];
            snprintf(name, sizeof name, "cache.%d.%s", i, kv ? "v" : "k");
            cf_node *c = cf_carry_at(m, name, s, CF_ZEROS, path, 0, 0);
            cf_node *in[3] = {c, rows, pos};
            w[kv] = c ? cf_op_at(m, CF_OP_CACHE_WRITE, 3, in, NULL, 0, NULL, 0, path, 0, 0) : NULL;
            if (!w[kv] || cf_carry_set_next(m, c, w[kv])) goto out;
            c->loc = w[kv]->loc = f->out->loc;   /* the attention's place */
            c->frame = w[kv]->frame = f->out->frame;
        }
        cf_node **in = cf_arena_alloc(&m->arena, 4 * sizeof *in);
        if (!in) goto out;
        in[0] = f->q, in[1] = w[0], in[2] = w[1], in[3] = pos;
        cf_node *o = f->out;   /* the product a * v becomes the attention, in place: its readers read it */
        o->op = CF_OP_ATTENTION;
        o->nin = 4;
        o->in = in;
        memset(&o->attr, 0, sizeof o->attr);
        o->attr.f[0] = 1;
    }
    for (int i = 0; i < m->nposuses; i++) {   /* the rows of P at the position */
        cf_node *in[2] = {m->posuses[i].table, pos}, *old = m->posuses[i].value;
        int readers = 0;
        for (int j = 0; j < m->nnodes; j++)
            for (int a = 0; a < m->nodes[j]->nin; a++) readers += m->nodes[j]->in[a] == old;
        if (old == in[0] && readers != 1) {   /* the table itself: positions must be its one reader */
            cf_seterr("error: %s: the table of positions '%s' is read %d times; a cached model needs it read "
                      "through positions(P, x) alone", path, old->name ? old->name : "?", readers);
            goto out;
        }
        cf_node *rows = cf_op_at(m, CF_OP_ROWS_AT, 2, in, (const int[]){n, T}, 2, NULL, 0, path, 0, 0);
        if (!rows) goto out;
        rows->loc = old->loc, rows->frame = old->frame;   /* positions(P, x)'s place */
        for (int j = 0; j < m->nnodes; j++)
            for (int a = 0; a < m->nodes[j]->nin; a++)
                if (m->nodes[j]->in[a] == old && m->nodes[j] != rows) m->nodes[j]->in[a] = rows;
    }
    if (m->builderr) {
        cf_seterr("%s", m->builderr);
        goto out;
    }
    if (renumber(m, first)) goto out;
    x->shape.d[1] = n;
    m->shaped = 0;
    if (cf_model_infer_shapes(m)) {
        char msg[CF_ERRMAX];
        snprintf(msg, sizeof msg, "%s", cf_last_error());
        cf_seterr("error: %s: the model does not run %s at a time (T = %d instead of %d): %s", path,
                  n == 1 ? "one position" : "a part of its window", n, T, msg + (strncmp(msg, "error: ", 7) == 0 ? 7 : 0));
        goto out;
    }
    rc = 0;
out:
    free(att);
    return rc;
}

cf_model *cf_model_load_cached(const char *path) { return cf_model_load_cached_n(path, 1); }

cf_model *cf_model_load_cached_n(const char *path, int n)
{
    cf_model *m = cf_model_load(path);
    if (m && make_cached(m, path, n)) {
        cf_model_free(m);
        return NULL;
    }
    return m;
}

int cf_model_cache_size(const cf_model *m)
{
    if (!m) return 0;
    for (int i = 0; i < m->ncarries; i++)
        if (m->carries[i].next && m->carries[i].next->op == CF_OP_CACHE_WRITE) {
            cf_shape s = m->carries[i].state->shape;
            return s.d[s.rank - 2];
        }
    return 0;
}
