/* identity.c - telling models and nodes apart for people and for checkpoints: a hash
 * of a model's graph (what a checkpoint was trained with), and a node named as the
 * user wrote it ("Affine at model.flux:1:42", not "+"). */
#include <stdio.h>
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

/* Every node's op, inputs, attributes, shape and name, in order, and the outputs:
 * the same for the same model whatever its comments, layout or source file, and
 * the same on every machine (integers are mixed byte by byte, little end first). */
uint64_t cf_model_graph_hash(const cf_model *m)
{
    uint64_t h = CF_FNV_OFFSET;
    h = mix_int(h, m->nnodes);
    for (int i = 0; i < m->nnodes; i++) {
        const cf_node *n = m->nodes[i];
        h = mix_int(h, n->op);
        h = mix_int(h, n->nin);
        for (int k = 0; k < n->nin; k++) h = mix_int(h, n->in[k]->id);
        for (int k = 0; k < 4; k++) h = mix_int(h, n->attr.i[k]);
        uint32_t fa;
        memcpy(&fa, &n->attr.f[0], 4);
        h = mix_int(h, fa);
        h = mix_shape(h, n->attr.shape);
        /* the attributes past the first four integers and first number, only where an
           op sets them: a graph without them hashes as before they existed */
        for (int k = 4; k < CF_ATTR_INTS; k++)
            if (n->attr.i[k]) h = mix_int(h, (uint32_t)(k << 24) ^ (uint32_t)n->attr.i[k]);
        for (int k = 1; k < CF_ATTR_FLOATS; k++)
            if (n->attr.f[k] != 0) {
                memcpy(&fa, &n->attr.f[k], 4);
                h = mix_int(h, (uint32_t)k << 24);
                h = mix_int(h, fa);
            }
        h = mix_shape(h, n->shape);
        h = cf_fnv1a(h, n->name ? n->name : "", n->name ? strlen(n->name) + 1 : 1);
    }
    for (int i = 0; i < m->noutputs; i++) h = mix_int(h, m->outputs[i]->id);
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
