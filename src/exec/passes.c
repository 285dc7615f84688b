/* passes.c - the list of passes, and running them (passes.h). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "exec/passes.h"

static const cf_pass *const passes[] = {
    &cf_pass_fuse_lstm,
    &cf_pass_fuse_attention,
    &cf_pass_fuse_affine,
    &cf_pass_fuse_bn_add_relu,
    &cf_pass_fuse_bn_relu,
    &cf_pass_quantize,
};
#define NPASSES ((int)(sizeof passes / sizeof passes[0]))

/* Which passes CFLUX_PASSES leaves on: on[i] for passes[i]. 0 or -1 with the message. */
static int passes_on(unsigned char *on)
{
    for (int i = 0; i < NPASSES; i++) on[i] = 1;
    const char *spec = getenv("CFLUX_PASSES");
    if (!spec) return 0;
    const char *p = spec;
    while (*p) {
        size_t len = strcspn(p, ",");
        char item[64];
        if (len >= sizeof item) len = sizeof item - 1;
        memcpy(item, p, len);
        item[len] = 0;
        p += len + (p[len] == ',');
        if (!*item) continue;
        if (strcmp(item, "none") == 0) {
            memset(on, 0, NPASSES);
            continue;
        }
        int want = *item != '-';
        const char *name = *item == '-' || *item == '+' ? item + 1 : item;
        int k = 0;
        while (k < NPASSES && strcmp(passes[k]->name, name) != 0) k++;
        if (k == NPASSES) {
            cf_seterr("error: CFLUX_PASSES: no pass is called '%s' (the passes:", name);
            for (int i = 0; i < NPASSES; i++) cf_adderr("%s %s", i ? "," : "", passes[i]->name);
            cf_adderr("; write -NAME to switch one off, or none)");
            return -1;
        }
        on[k] = (unsigned char)want;
    }
    return 0;
}

int cf_graph_lower(cf_graph *g, cf_analysis *a, unsigned flags, int all)
{
    unsigned char on[NPASSES];
    cf_analysis_free(a);
    if (passes_on(on) || cf_analyse(a, g, flags)) return -1;
    for (int i = 0; i < NPASSES; i++) {
        int changed = 0;
        if (!on[i] || (!passes[i]->structural && !all)) continue;
        if (passes[i]->run(g, a, &changed)) return -1;
        if (!changed) continue;
        cf_analysis_free(a);
        if (cf_analyse(a, g, flags)) return -1;
    }
    return 0;
}

cf_node *cf_graph_node(cf_graph *g, int id, cf_opcode op, int nin, cf_node *const *in, const cf_node *like)
{
    cf_node *n = cf_arena_alloc(&g->arena, sizeof *n + (size_t)nin * sizeof *n->in);
    if (!n) return NULL;
    n->in = (cf_node **)(n + 1);
    memcpy(n->in, in, (size_t)nin * sizeof *in);
    n->id = id;
    n->op = op;
    n->nin = nin;
    n->model = g->m;
    n->shape = like->shape;
    n->batched = like->batched;
    n->loc = like->loc;
    n->frame = like->frame;
    return n;
}
