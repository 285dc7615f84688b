/* frozen.c - which parameters a run keeps fixed (CF_GRAD_NONE), as a checkpoint's
 * metadata "frozen" holds it: their names, one a line, in the model's order (absent:
 * none). Resuming needs the same set: the optimizer keeps state for the trained
 * parameters alone, and a frozen batchnorm normalises another way (ops/batchnorm.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"
#include "core/safetensors.h"
#include "train/trainer.h"

char *cf_frozen_meta(const cf_model *m)
{
    size_t len = 0;
    for (int i = 0; i < m->nparams; i++)
        if (m->params[i]->req == CF_GRAD_NONE) len += strlen(m->params[i]->name) + 1;
    if (!len) return NULL;
    char *s = malloc(len), *p = s;
    if (!s) return cf_oom(len), NULL;
    for (int i = 0; i < m->nparams; i++) {
        if (m->params[i]->req != CF_GRAD_NONE) continue;
        if (p > s) *p++ = '\n';
        size_t n = strlen(m->params[i]->name);
        memcpy(p, m->params[i]->name, n);
        p += n;
    }
    *p = 0;
    return s;
}

/* The line of meta at p: its length in *k; where the next begins, or NULL after the last. */
static const char *line_at(const char *p, size_t *k)
{
    const char *q = strchr(p, '\n');
    *k = q ? (size_t)(q - p) : strlen(p);
    return q ? q + 1 : NULL;
}

/* How many lines meta (NULL: none) has, and whether name is one of them. */
static int lines_of(const char *meta, const char *name, int *has)
{
    int n = 0;
    size_t k, len = name ? strlen(name) : 0;
    for (const char *p = meta, *next; p && *p; p = next, n++) {
        next = line_at(p, &k);
        if (has && k == len && !strncmp(p, name, k)) *has = 1;
    }
    return n;
}

int cf_frozen_check(const cf_model *m, const char *meta, const char *path)
{
    int nfile = lines_of(meta, NULL, NULL), nhere = 0, same = 1;
    for (int i = 0; i < m->nparams; i++) {
        int frozen = m->params[i]->req == CF_GRAD_NONE, has = 0;
        lines_of(meta, m->params[i]->name, &has);
        nhere += frozen;
        if (has != frozen) same = 0;
    }
    if (same && nhere == nfile) return 0;
    return cf_seterr("error: %s: the checkpoint's run kept %d parameter%s frozen and this one %d%s: a run resumes "
                     "with the same parameters frozen (cflux train: the same --freeze, or none to take the "
                     "checkpoint's)", path, nfile, nfile == 1 ? "" : "s", nhere, nhere == nfile ? ", others" : "");
}

int cf_checkpoint_freeze(const char *path, cf_model *m)
{
    if (!path || !m) return cf_seterr("error: cf_checkpoint_freeze: no path or no model");
    cf_st_file *f = cf_st_read_ex(path, CF_ST_HEADER_ONLY);
    if (!f) return -1;
    const char *meta = cf_st_meta(f, "frozen");
    int n = 0, rc = 0;
    size_t k;
    for (const char *p = meta, *next; p && *p && rc == 0; p = next, n++) {
        next = line_at(p, &k);
        char name[512];
        snprintf(name, sizeof name, "%.*s", (int)(k < sizeof name ? k : sizeof name - 1), p);
        if (cf_model_set_grad_req(m, name, CF_GRAD_NONE))
            rc = cf_seterr("error: %s: the checkpoint's run froze '%s', which the model does not have", path, name);
    }
    cf_st_free(f);
    return rc ? -1 : n;
}
