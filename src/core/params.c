/* params.c - a model's parameters: one block of values and one of gradients, carved
 * by offset, initialised from the model's seed; and its state, a block of its own. Each parameter draws from its own
 * stream (seed mixed with its name), so adding a layer leaves the others as they were. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"
#include "core/mem.h"
#include "core/rng.h"

static void fans(cf_shape s, double *in, double *out)
{
    if (s.rank == 0) { *in = *out = 1; return; }
    if (s.rank == 1) { *in = *out = s.d[0]; return; }
    if (s.rank == 2) { *in = s.d[0]; *out = s.d[1]; return; }
    /* (out, in, k...) as convolutions keep them */
    double rec = 1;
    for (int i = 2; i < s.rank; i++) rec *= s.d[i];
    *in = s.d[1] * rec;
    *out = s.d[0] * rec;
}

static void init_param(const cf_node *p, uint64_t seed, float *v)
{
    size_t n = cf_shape_count(p->shape);
    cf_rng r;
    cf_rng_seed(&r, seed ^ cf_hash_str(p->name));
    float a = p->init.a;
    switch (p->init.kind) {
    case CF_INIT_GLOROT: {
        double fi, fo;
        fans(p->shape, &fi, &fo);
        a = (float)sqrt(6.0 / (fi + fo));
    } /* fall through */
    case CF_INIT_UNIFORM:
        for (size_t i = 0; i < n; i++) v[i] = a * (2.0f * cf_rng_uniform(&r) - 1.0f);
        break;
    case CF_INIT_NORMAL:
        for (size_t i = 0; i < n; i++) v[i] = a * cf_rng_normal(&r);
        break;
    case CF_INIT_ZEROS: memset(v, 0, n * sizeof *v); break;
    case CF_INIT_ONES: for (size_t i = 0; i < n; i++) v[i] = 1; break;
    case CF_INIT_CONST: for (size_t i = 0; i < n; i++) v[i] = a; break;
    }
}

/* Offsets are rounded up to 16 floats so every parameter starts 64-byte aligned. */
#define PALIGN 16

int cf_model_blame_largest(const cf_model *m)
{
    const cf_node *big = NULL;
    for (int i = 0; i < m->nparams; i++)
        if (!big || cf_shape_count(m->params[i]->shape) > cf_shape_count(big->shape)) big = m->params[i];
    if (!big) return -1;
    char sh[96], sz[CF_MEM_STR];
    cf_adderr("; the largest parameter is %s %s, %s", big->name, cf_shape_str(big->shape, sh, sizeof sh),
              cf_mem_str(cf_shape_count(big->shape) * sizeof(float), sz));
    cf_adderr_trace(big);
    return -1;
}

/* The floats a leaf takes in its block: its count rounded up to PALIGN. */
static size_t leaf_span(const cf_node *p) { return (cf_shape_count(p->shape) + PALIGN - 1) / PALIGN * PALIGN; }

/* Offsets of a list of leaves, each rounded up to PALIGN floats, into a new array
 * (n + 1 entries); the total in *total. NULL on OOM, with the message. */
static size_t *carve_offsets(cf_node *const *list, int n, size_t *total)
{
    size_t *off = calloc((size_t)n + 1, sizeof *off);
    if (!off) return cf_oom(((size_t)n + 1) * sizeof *off), NULL;
    size_t t = 0;
    for (int i = 0; i < n; i++) {
        off[i] = t;
        t += leaf_span(list[i]);
    }
    *total = t;
    return off;
}

size_t cf_leaf_floats(cf_node *const *list, int n)
{
    size_t t = 0;
    for (int i = 0; i < n; i++) t += leaf_span(list[i]);
    return t;
}

/* A zeroed block of n floats (NULL and no error when n is 0), with `what` in messages. */
static float *block(size_t n, const char *what, int *failed)
{
    *failed = 0;
    if (!n) return NULL;
    float *p = cf_mem_alloc(n * sizeof *p, what);
    if (!p) *failed = 1;
    else memset(p, 0, n * sizeof *p);
    return p;
}

int cf_model_init_params(cf_model *m)
{
    if (!m) return cf_seterr("error: no model");
    if (m->sealed) return 0;
    if (m->builderr) return cf_seterr("%s", m->builderr);
    size_t total = 0, stotal = 0;
    int failed = 0;
    size_t *off = carve_offsets(m->params, m->nparams, &total);
    size_t *soff = off ? carve_offsets(m->states, m->nstates, &stotal) : NULL;
    float *data = soff ? block(total, "the parameter block", &failed) : NULL;
    if (!soff || failed) {
        free(off);
        free(soff);
        return failed ? cf_model_blame_largest(m) : -1;
    }
    float *sdata = block(stotal, "the state block", &failed);
    if (failed) {
        free(off);
        free(soff);
        cf_mem_free(data);
        return -1;
    }
    for (int i = 0; i < m->nparams; i++) init_param(m->params[i], m->seed, data + off[i]);
    for (int i = 0; i < m->nstates; i++) init_param(m->states[i], m->seed, sdata + soff[i]);
    m->pdata = data;
    m->poff = off;
    m->nweights = total;
    m->sdata = sdata;
    m->soff = soff;
    m->nstatefloats = stotal;
    m->sealed = 1;
    return 0;
}

/* The gradient block, made on the first training bind. */
int cf_model_alloc_grads(cf_model *m)
{
    if (m->pgrad || m->nweights == 0) return 0;
    m->pgrad = cf_mem_alloc(m->nweights * sizeof *m->pgrad, "the gradient block");
    if (!m->pgrad) return cf_model_blame_largest(m);
    memset(m->pgrad, 0, m->nweights * sizeof *m->pgrad);
    return 0;
}

int cf_model_param_count(const cf_model *m) { return m ? m->nparams : 0; }

const char *cf_model_param_name(const cf_model *m, int i)
{
    return m && i >= 0 && i < m->nparams ? m->params[i]->name : NULL;
}

cf_shape cf_model_param_shape(const cf_model *m, int i)
{
    return m && i >= 0 && i < m->nparams ? m->params[i]->shape : (cf_shape){0, {0}};
}

int cf_model_param_index(const cf_model *m, const char *name)
{
    for (int i = 0; m && name && i < m->nparams; i++)
        if (strcmp(m->params[i]->name, name) == 0) return i;
    return -1;
}

float *cf_model_param_data(cf_model *m, int i)
{
    return m && m->pdata && i >= 0 && i < m->nparams ? m->pdata + m->poff[i] : NULL;
}

float *cf_model_param_grad(cf_model *m, int i)
{
    return m && m->pgrad && i >= 0 && i < m->nparams ? m->pgrad + m->poff[i] : NULL;
}

size_t cf_model_weight_count(const cf_model *m)
{
    size_t n = 0;
    for (int i = 0; m && i < m->nparams; i++) n += cf_shape_count(m->params[i]->shape);
    return n;
}

int cf_model_state_count(const cf_model *m) { return m ? m->nstates : 0; }

const char *cf_model_state_name(const cf_model *m, int i)
{
    return m && i >= 0 && i < m->nstates ? m->states[i]->name : NULL;
}

cf_shape cf_model_state_shape(const cf_model *m, int i)
{
    return m && i >= 0 && i < m->nstates ? m->states[i]->shape : (cf_shape){0, {0}};
}

int cf_model_state_index(const cf_model *m, const char *name)
{
    for (int i = 0; m && name && i < m->nstates; i++)
        if (strcmp(m->states[i]->name, name) == 0) return i;
    return -1;
}

float *cf_model_state_data(cf_model *m, int i)
{
    return m && m->sealed && i >= 0 && i < m->nstates ? m->sdata + m->soff[i] : NULL;
}

int cf_model_set_grad_req(cf_model *m, const char *name, cf_grad_req req)
{
    if (!m) return cf_seterr("error: no model");
    if (req < CF_GRAD_ADD || req > CF_GRAD_NONE) return cf_seterr("error: unknown gradient request %d", (int)req);
    if (m->pgrad) return cf_seterr("error: gradient requests must be set before the first training bind");
    int i = name ? cf_model_param_index(m, name) : 0;
    if (i < 0) return cf_seterr("error: the model has no parameter named '%s'", name);
    for (; i < m->nparams; i++) {
        m->params[i]->req = req;
        if (name) break;
    }
    return 0;
}

void cf_model_zero_grad(cf_model *m)
{
    if (m && m->pgrad) memset(m->pgrad, 0, m->nweights * sizeof *m->pgrad);
}
