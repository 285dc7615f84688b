/* identity.c - telling models and nodes apart for people and for checkpoints: a hash
 * of a model's graph (what a checkpoint was trained with), and a node named as the
 * user wrote it ("Affine at model.flux:1:42", not "+"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/graph.h"
#include "core/rng.h"

static uint64_t mix_int(uint64_t h, long long v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((unsigned long long)v >> 8 * i);
    return cf_fnv1a(h, b, 8);
}

static uint64_t mix_shape(uint64_t h, cf_shape s)
{
    h = mix_int(h, s.rank);
    for (int i = 0; i < s.rank; i++) h = mix_int(h, s.d[i]);
    return h;
}

/* One node's op, inputs (by their numbers in the hashed graph), attributes, shape and
 * name. */
static uint64_t mix_node(uint64_t h, const cf_node *n, int nin, const int *in)
{
    h = mix_int(h, n->op);
    h = mix_int(h, nin);
    for (int k = 0; k < nin; k++) h = mix_int(h, in[k]);
    for (int k = 0; k < 4; k++) h = mix_int(h, n->attr.i[k]);
    uint32_t fa;
    memcpy(&fa, &n->attr.f[0], 4);
    h = mix_int(h, fa);
    h = mix_shape(h, n->attr.shape);
    /* the attributes past the first four integers and first number, only where an op
       sets them: a graph without them hashes as before they existed */
    for (int k = 4; k < CF_ATTR_INTS; k++)
        if (n->attr.i[k]) h = mix_int(h, (uint32_t)(k << 24) ^ (uint32_t)n->attr.i[k]);
    for (int k = 1; k < CF_ATTR_FLOATS; k++)
        if (n->attr.f[k] != 0) {
            memcpy(&fa, &n->attr.f[k], 4);
            h = mix_int(h, (uint32_t)k << 24);
            h = mix_int(h, fa);
        }
    h = mix_shape(h, n->shape);
    return cf_fnv1a(h, n->name ? n->name : "", n->name ? strlen(n->name) + 1 : 1);
}

/* A region (cf_region) hashes as the nodes that run it over its sequence: the lstm
 * node, all steps' h, the last step, its h and c: how the compiler built it before the
 * pass did (checkpoints of then still resume). An Embedding only it reads is folded. */
static uint64_t mix_region(uint64_t h, const cf_region *r, const int *num, int base, int fold)
{
    const cf_node *x = r->in[5];
    int nin = fold ? 7 : 6, in[7];
    for (int k = 0; k < 5; k++) in[k] = num[r->in[k]->id];
    in[5] = num[fold ? x->in[1]->id : x->id];
    in[6] = fold ? num[x->in[0]->id] : 0;
    int T = x->shape.d[1], H = r->in[3]->shape.d[0];
    cf_node y = {.op = CF_OP_LSTM, .shape = {3, {CF_BATCH, T, 2 * H}}};
    cf_node s[6] = {{.op = CF_OP_SLICE, .attr.i = {2, 0, H, 2}, .shape = {3, {CF_BATCH, T, H}}},
                    {.op = CF_OP_SLICE, .attr.i = {1, T - 1, 1, 1}, .shape = {3, {CF_BATCH, 1, 2 * H}}},
                    {.op = CF_OP_SLICE, .attr.i = {2, 0, H, 2}, .shape = {3, {CF_BATCH, 1, H}}},
                    {.op = CF_OP_RESHAPE, .attr.shape = {1, {H}}, .shape = {2, {CF_BATCH, H}}},
                    {.op = CF_OP_SLICE, .attr.i = {2, H, H, 2}, .shape = {3, {CF_BATCH, 1, H}}},
                    {.op = CF_OP_RESHAPE, .attr.shape = {1, {H}}, .shape = {2, {CF_BATCH, H}}}};
    static const int from[6] = {0, 0, 2, 3, 2, 5};   /* each one's input, from the lstm node's number */
    h = mix_node(h, &y, nin, in);
    for (int k = 0; k < 6; k++) h = mix_node(h, &s[k], 1, (const int[]){base + from[k]});
    return h;
}

/* Is r's sequence an Embedding's lookup that nothing outside r reads (last[]: each
 * node's last reader)? */
static int folds(const cf_region *r, const int *last)
{
    const cf_node *x = r->in[5];
    return x->op == CF_OP_EMBEDDING && last[x->id] >= r->lo && last[x->id] <= r->hi;
}

/* Every node's op, inputs, attributes, shape and name, in order, and the outputs:
 * the same for the same model whatever its comments, layout or source file, and
 * the same on every machine (integers are mixed byte by byte, little end first).
 * Regions hash as their fused form (mix_region). */
uint64_t cf_model_graph_hash(const cf_model *m)
{
    int nn = m->nnodes, count = 0;
    int *num = malloc(2 * (size_t)(nn ? nn : 1) * sizeof *num), *last = num ? num + nn : NULL;
    if (!num) return 0;   /* no memory: a hash that matches no checkpoint */
    for (int i = 0; i < nn; i++) last[i] = -1, num[i] = -2;   /* -2: inside a region */
    for (int i = 0; i < nn; i++)
        for (int k = 0; k < m->nodes[i]->nin; k++) last[m->nodes[i]->in[k]->id] = i;
    /* the hashed graph's numbers: a region's seven nodes in place of its steps */
    for (int i = 0, r = 0; i < nn; i++) {
        while (r < m->nregions && m->regions[r].hi < i) r++;
        const cf_region *g = r < m->nregions && m->regions[r].lo <= i ? &m->regions[r] : NULL;
        if (g && i == g->lo) {
            num[g->seq->id] = count + 1, num[g->last[0]->id] = count + 4, num[g->last[1]->id] = count + 6;
            count += 7;
        }
        if (g) continue;
        int folded = 0;
        for (int k = 0; k < m->nregions && !folded; k++) folded = m->regions[k].in[5] == m->nodes[i] && folds(&m->regions[k], last);
        num[i] = folded ? -1 : count++;
    }
    uint64_t h = mix_int(CF_FNV_OFFSET, count);
    for (int i = 0, r = 0; i < nn; i++) {
        while (r < m->nregions && m->regions[r].hi < i) r++;
        const cf_region *g = r < m->nregions && m->regions[r].lo <= i ? &m->regions[r] : NULL;
        if (g) {
            if (i == g->lo) h = mix_region(h, g, num, num[g->seq->id] - 1, folds(g, last));
            continue;
        }
        const cf_node *n = m->nodes[i];
        if (num[i] < 0) continue;
        int in[CF_MAX_INPUTS];
        for (int k = 0; k < n->nin; k++) in[k] = num[n->in[k]->id];
        h = mix_node(h, n, n->nin, in);
    }
    for (int i = 0; i < m->noutputs; i++) h = mix_int(h, num[m->outputs[i]->id]);
    free(num);
    return h;
}

/* The template the user called that made n (its innermost frame, unless that is
 * only the model or a Chain around it), or else the op where it was written. */
char *cf_node_describe(const cf_node *n, char *buf, size_t size)
{
    const cf_frame *f = n->frame;
    int layer = f && f->call.file && strcmp(f->name, "Chain") != 0 && strcmp(f->name, "model") != 0;
    const char *name = layer ? f->name : cf_node_op_name(n);
    cf_srcloc at = layer ? f->call : n->loc;
    if (!at.file) snprintf(buf, size, "%s", name);
    else if (at.col > 0) snprintf(buf, size, "%s at %s:%d:%d", name, at.file, at.line, at.col);
    else snprintf(buf, size, "%s at %s:%d", name, at.file, at.line);
    return buf;
}
