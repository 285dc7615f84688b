/* layers.c - a model's layers as PyTorch sees them (cf_layer, graph.h): added by the
 * compiler, named by import, kept by parameter files. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"

int cf_model_add_layer(cf_model *m, const cf_layer *l)
{
    if (m->nlayers == m->cap_layers) {
        int cap = m->cap_layers ? m->cap_layers * 2 : 8;
        cf_layer *p = realloc(m->layers, (size_t)cap * sizeof *p);
        if (!p) return cf_oom((size_t)cap * sizeof *p);
        m->layers = p;
        m->cap_layers = cap;
    }
    cf_layer c = *l;
    c.prefix = cf_arena_strdup(&m->arena, l->prefix);
    c.seq = cf_arena_strdup(&m->arena, l->seq);
    c.torch = c.seq;
    c.tname = cf_arena_strdup(&m->arena, l->tname);
    c.loc.file = l->loc.file ? cf_arena_strdup(&m->arena, l->loc.file) : NULL;
    c.maps = l->nmaps ? cf_arena_alloc(&m->arena, (size_t)l->nmaps * sizeof *c.maps) : NULL;
    if (!c.prefix || !c.seq || !c.tname || (l->loc.file && !c.loc.file) || (l->nmaps && !c.maps)) return -1;
    for (int k = 0; k < l->nmaps; k++) {
        cf_tmap *t = &c.maps[k];
        *t = l->maps[k];
        t->name = cf_arena_strdup(&m->arena, l->maps[k].name);
        t->src[0] = cf_arena_strdup(&m->arena, l->maps[k].src[0]);
        t->src[1] = l->maps[k].src[1] ? cf_arena_strdup(&m->arena, l->maps[k].src[1]) : NULL;
        if (!t->name || !t->src[0] || (l->maps[k].src[1] && !t->src[1])) return -1;
    }
    m->layers[m->nlayers++] = c;
    return 0;
}

int cf_model_torch_names(const cf_model *m, char **out)
{
    *out = NULL;
    size_t len = 1;
    int any = 0;
    for (int i = 0; i < m->nlayers; i++) {
        len += strlen(m->layers[i].prefix) + strlen(m->layers[i].torch) + 2;
        any |= strcmp(m->layers[i].torch, m->layers[i].seq) != 0;
    }
    if (!any) return 0;
    char *s = malloc(len);
    if (!s) return cf_oom(len);
    char *p = s;
    for (int i = 0; i < m->nlayers; i++)
        p += sprintf(p, "%s=%s\n", m->layers[i].prefix, m->layers[i].torch);
    *p = 0;
    *out = s;
    return 0;
}

int cf_model_set_torch_names(cf_model *m, const char *s)
{
    while (s && *s) {
        const char *eq = strchr(s, '='), *nl = strchr(s, '\n');
        if (!nl) nl = s + strlen(s);
        if (eq && eq < nl)
            for (int i = 0; i < m->nlayers; i++) {
                cf_layer *l = &m->layers[i];
                if (strlen(l->prefix) == (size_t)(eq - s) && !strncmp(l->prefix, s, (size_t)(eq - s))) {
                    size_t n = (size_t)(nl - eq - 1);
                    char *t = cf_arena_alloc(&m->arena, n + 1);
                    if (!t) return -1;
                    memcpy(t, eq + 1, n);
                    l->torch = t;
                }
            }
        s = *nl ? nl + 1 : nl;
    }
    return 0;
}
