/* optim.c - optimizers: PyTorch's SGD (plain, momentum, nesterov; dampening 0), Adam
 * and AdamW, with clip_grad_norm_ before the step and weight decay.
 *
 * The state (momentum buffers, Adam's moments m and v) is one block of floats, made
 * by cf_optim_new and carved into one tensor per kind and trainable parameter, each
 * named after its parameter ("momentum.1.W", "adam.m.1.W", "adam.v.1.W") so that
 * checkpoints can hold it. Parameters frozen (CF_GRAD_NONE) when the optimizer is made
 * get no state. A step checks first (every gradient finite, a global norm for
 * clipping), then updates each parameter elementwise on the thread pool and zeroes
 * its gradient; it allocates nothing.
 *
 * The arithmetic follows torch.optim's single-tensor code in float32, with the
 * scalars that PyTorch keeps as Python doubles (1 - beta, the bias corrections,
 * lr / bias_correction1, 1 - lr wd) computed in double and rounded once to float. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/quant.h"
#include "core/graph.h"
#include "core/mem.h"
#include "rt/pool.h"

typedef enum { OPT_SGD, OPT_MOMENTUM, OPT_NESTEROV, OPT_ADAM, OPT_ADAMW } optim_kind;

static const char *const kind_names[] = {"sgd", "momentum", "nesterov", "adam", "adamw"};
#define KNOWN "sgd, momentum, nesterov, adam, adamw"

/* State tensors per parameter, and the prefixes of their names. */
static const int state_per_param[] = {0, 1, 1, 2, 2};
static const char *const state_prefix[][2] = {
    {NULL, NULL}, {"momentum.", NULL}, {"momentum.", NULL}, {"adam.m.", "adam.v."}, {"adam.m.", "adam.v."}};

/* Each state tensor starts 64-byte aligned, as parameters do. */
#define SALIGN 16

struct cf_optim {
    cf_model *m;
    cf_optim_opts o;        /* o.name is one of kind_names */
    optim_kind kind;
    long t;                 /* steps taken */
    int nper;               /* state tensors per trainable parameter: 0, 1 or 2 */
    int nstate;             /* nper * trainable parameters */
    int *slot;              /* [nparams]: the parameter's first state tensor, or -1 */
    int *sparam;            /* [nstate]: the parameter a state tensor belongs to */
    float **sdata;          /* [nstate]: views into block */
    char **sname;           /* [nstate] */
    float *block;           /* all state, zeroed at the start */
};

static int find_kind(const char *name)
{
    for (int k = 0; name && k < (int)(sizeof kind_names / sizeof *kind_names); k++)
        if (strcmp(name, kind_names[k]) == 0) return k;
    return -1;
}

cf_optim_opts cf_optim_defaults(const char *name)
{
    cf_optim_opts o = {0};
    int k = find_kind(name);
    if (k < 0) return o;
    o.name = kind_names[k];
    o.lr = k >= OPT_ADAM ? 0.001f : 0.1f;
    o.momentum = 0.9f;
    o.beta1 = 0.9f;
    o.beta2 = 0.999f;
    o.eps = 1e-8f;
    o.weight_decay = k == OPT_ADAMW ? 0.01f : 0.0f;
    o.clip_norm = 0;
    return o;
}

/* ---- checks ---- */

static int check_opts(optim_kind k, const cf_optim_opts *o)
{
    const char *n = kind_names[k];
    if (!(o->lr > 0) || !isfinite(o->lr))
        return cf_seterr("error: optimizer %s: lr must be a number > 0, not %g", n, o->lr);
    if (k == OPT_MOMENTUM && !(o->momentum >= 0 && o->momentum < 1))
        return cf_seterr("error: optimizer %s: momentum must be in [0, 1), not %g", n, o->momentum);
    if (k == OPT_NESTEROV && !(o->momentum > 0 && o->momentum < 1))
        return cf_seterr("error: optimizer %s: momentum must be in (0, 1), not %g", n, o->momentum);
    if (k >= OPT_ADAM) {
        if (!(o->beta1 >= 0 && o->beta1 < 1))
            return cf_seterr("error: optimizer %s: beta1 must be in [0, 1), not %g", n, o->beta1);
        if (!(o->beta2 >= 0 && o->beta2 < 1))
            return cf_seterr("error: optimizer %s: beta2 must be in [0, 1), not %g", n, o->beta2);
        /* PyTorch takes eps = 0, but then a gradient that has been 0 so far gives 0/0 */
        if (!(o->eps > 0) || !isfinite(o->eps))
            return cf_seterr("error: optimizer %s: eps must be a number > 0, not %g", n, o->eps);
    }
    if (!(o->weight_decay >= 0) || !isfinite(o->weight_decay))
        return cf_seterr("error: optimizer %s: weight_decay must be a number >= 0, not %g", n, o->weight_decay);
    if (!(o->clip_norm >= 0) || !isfinite(o->clip_norm))
        return cf_seterr("error: optimizer %s: clip_norm must be a number >= 0 (0: no clipping), not %g", n,
                         o->clip_norm);
    return 0;
}

/* ---- making one ---- */

size_t cf_optim_state_bytes(const cf_model *m, const char *name)
{
    int k = find_kind(name);
    size_t floats = 0;
    for (int i = 0; m && k >= 0 && i < m->nparams; i++)
        if (m->params[i]->req != CF_GRAD_NONE)
            floats += (size_t)state_per_param[k] * ((cf_shape_count(m->params[i]->shape) + SALIGN - 1) / SALIGN * SALIGN);
    return floats * sizeof(float);
}

cf_optim *cf_optim_new(cf_model *m, const cf_optim_opts *opts)
{
    if (!m) return cf_seterr("error: cf_optim_new: no model"), NULL;
    if (!opts) return cf_seterr("error: cf_optim_new: no options"), NULL;
    if (!opts->name) return cf_seterr("error: cf_optim_new: no optimizer name (" KNOWN ")"), NULL;
    int k = find_kind(opts->name);
    if (k < 0) return cf_seterr("error: unknown optimizer '%s' (" KNOWN ")", opts->name), NULL;
    if (check_opts(k, opts)) return NULL;
    if (!m->sealed)
        return cf_seterr("error: cf_optim_new: the model's parameters do not exist yet "
                         "(call cf_model_init_params or cf_bind first)"), NULL;

    int np = m->nparams, nper = state_per_param[k], ntrain = 0;
    for (int i = 0; i < np; i++) ntrain += m->params[i]->req != CF_GRAD_NONE;
    int ns = nper * ntrain;

    /* the handle, its tables and the state names in one allocation */
    size_t names = 0, floats = cf_optim_state_bytes(m, opts->name) / sizeof(float);
    for (int i = 0; i < np; i++) {
        if (m->params[i]->req == CF_GRAD_NONE) continue;
        for (int s = 0; s < nper; s++) names += strlen(state_prefix[k][s]) + strlen(m->params[i]->name) + 1;
    }
    size_t bytes = sizeof(cf_optim) + (size_t)np * sizeof(int) + (size_t)ns * (sizeof(int) + sizeof(float *) +
                                                                               sizeof(char *));
    bytes = (bytes + sizeof(void *) - 1) / sizeof(void *) * sizeof(void *);
    cf_optim *o = calloc(1, bytes + names);
    if (!o) return cf_oom(bytes + names), NULL;
    o->sdata = (float **)(o + 1);
    o->sname = (char **)(o->sdata + ns);
    o->slot = (int *)(o->sname + ns);
    o->sparam = o->slot + np;
    char *text = (char *)o + bytes;

    o->block = floats ? cf_mem_alloc(floats * sizeof(float), "the optimizer state") : NULL;
    if (floats && !o->block) {
        free(o);
        return NULL;
    }
    if (floats) memset(o->block, 0, floats * sizeof(float));

    o->m = m;
    o->o = *opts;
    o->o.name = kind_names[k];
    o->kind = k;
    o->nper = nper;
    o->nstate = ns;
    size_t off = 0;
    for (int i = 0, j = 0; i < np; i++) {
        o->slot[i] = -1;
        if (m->params[i]->req == CF_GRAD_NONE) continue;
        o->slot[i] = j;
        size_t n = cf_shape_count(m->params[i]->shape);
        for (int s = 0; s < nper; s++, j++) {
            o->sparam[j] = i;
            o->sdata[j] = o->block + off;
            off += (n + SALIGN - 1) / SALIGN * SALIGN;
            o->sname[j] = text;
            text += sprintf(text, "%s%s", state_prefix[k][s], m->params[i]->name) + 1;
        }
    }
    return o;
}

void cf_optim_free(cf_optim *o)
{
    if (!o) return;
    cf_mem_free(o->block);
    free(o);
}

/* ---- state ---- */

int cf_optim_state_count(const cf_optim *o) { return o ? o->nstate : 0; }

const char *cf_optim_state_name(const cf_optim *o, int i)
{
    return o && i >= 0 && i < o->nstate ? o->sname[i] : NULL;
}

int cf_optim_state_nonneg(const cf_optim *o, int i)
{
    return o && i >= 0 && i < o->nstate && (o->kind == OPT_ADAM || o->kind == OPT_ADAMW) && i % o->nper == 1;
}

float *cf_optim_state_data(cf_optim *o, int i, size_t *count)
{
    if (!o || i < 0 || i >= o->nstate) {
        if (count) *count = 0;
        return NULL;
    }
    if (count) *count = cf_shape_count(o->m->params[o->sparam[i]]->shape);
    return o->sdata[i];
}

long cf_optim_get_steps(const cf_optim *o) { return o ? o->t : 0; }

void cf_optim_set_steps(cf_optim *o, long t)
{
    if (o) o->t = t > 0 ? t : 0;
}

/* ---- the step ---- */

/* Sum of squares in double over fixed chunks, so the result does not depend on the
 * number of threads. A non-finite element makes it non-finite. */
#define SQ_CHUNK 16384
#define SQ_TASKS 64

typedef struct {
    const float *g;
    size_t n, chunk;
    double part[SQ_TASKS];
} sumsq_job;

static void sumsq_task(void *ctx, int t)
{
    sumsq_job *j = ctx;
    size_t b = (size_t)t * j->chunk, e = b + j->chunk < j->n ? b + j->chunk : j->n;
    double s = 0;
    for (size_t i = b; i < e; i++) s += (double)j->g[i] * j->g[i];
    j->part[t] = s;
}

static double sumsq(const float *g, size_t n)
{
    sumsq_job j = {.g = g, .n = n, .chunk = SQ_CHUNK};
    if (n > (size_t)SQ_CHUNK * SQ_TASKS) j.chunk = (n + SQ_TASKS - 1) / SQ_TASKS;
    int tasks = (int)((n + j.chunk - 1) / j.chunk);
    if (tasks <= 1) {
        sumsq_task(&j, 0);
        return j.part[0];
    }
    cf_parallel_for(tasks, sumsq_task, &j);
    double s = 0;
    for (int t = 0; t < tasks; t++) s += j.part[t];
    return s;
}

/* One parameter's update. Scalars are float where PyTorch's tensor ops round them to
 * the tensor's type. */
typedef struct {
    optim_kind kind;
    float *p, *g, *s0, *s1;
    float scale;            /* gradient clipping factor, 1: none */
    float lr, wd, mu;
    float b1, b2, c1, c2;   /* c1 = 1 - b1, c2 = 1 - b2 */
    float step_size;        /* adam: -lr / (1 - b1^t) */
    float bc2_sqrt, eps;    /* adam: sqrt(1 - b2^t) */
    float decay;            /* adamw: 1 - lr wd */
} update_job;

static void update_range(void *ctx, size_t b, size_t e)
{
    const update_job *j = ctx;
    float *restrict p = j->p, *restrict g = j->g, *restrict s0 = j->s0, *restrict s1 = j->s1;
    const float scale = j->scale, wd = j->wd, lr = j->lr;
    switch (j->kind) {
    case OPT_SGD:
        for (size_t i = b; i < e; i++) {
            float d = g[i] * scale;
            if (wd != 0) d = d + wd * p[i];
            p[i] = p[i] + (-lr) * d;
            g[i] = 0;
        }
        break;
    case OPT_MOMENTUM:
    case OPT_NESTEROV: {
        const float mu = j->mu;
        const int nesterov = j->kind == OPT_NESTEROV;
        for (size_t i = b; i < e; i++) {
            float d = g[i] * scale;
            if (wd != 0) d = d + wd * p[i];
            float buf = s0[i] * mu + d;
            s0[i] = buf;
            if (nesterov) d = d + mu * buf;
            else d = buf;
            p[i] = p[i] + (-lr) * d;
            g[i] = 0;
        }
        break;
    }
    case OPT_ADAM:
    case OPT_ADAMW: {
        const float b1 = j->b1, b2 = j->b2, c1 = j->c1, c2 = j->c2, ss = j->step_size;
        const float bc2 = j->bc2_sqrt, eps = j->eps, decay = j->decay;
        const int adamw = j->kind == OPT_ADAMW;
        for (size_t i = b; i < e; i++) {
            float d = g[i] * scale;
            if (adamw) p[i] = p[i] * decay;
            else if (wd != 0) d = d + wd * p[i];
            float mm = s0[i] * b1 + c1 * d;
            float vv = s1[i] * b2 + (c2 * d) * d;
            s0[i] = mm;
            s1[i] = vv;
            float denom = sqrtf(vv) / bc2 + eps;
            p[i] = p[i] + (ss * mm) / denom;
            g[i] = 0;
        }
        break;
    }
    }
}

/* Report the first non-finite gradient element, for the error message. */
static int nonfinite(const cf_model *m, int i, const float *g)
{
    size_t n = cf_shape_count(m->params[i]->shape), k = 0;
    while (k < n && isfinite(g[k])) k++;
    return cf_seterr("error: cf_optim_step: the gradient of '%s' is not finite (element %zu is %g); "
                     "nothing was changed", m->params[i]->name, k, k < n ? g[k] : 0.0f);
}

int cf_optim_step(cf_optim *o, float lr)
{
    if (!o) return cf_seterr("error: cf_optim_step: no optimizer");
    if (!(lr >= 0) || !isfinite(lr))
        return cf_seterr("error: cf_optim_step: lr must be a number >= 0, not %g", lr);
    cf_model *m = o->m;

    /* check everything before changing anything */
    double ss = 0;
    for (int i = 0; i < m->nparams; i++) {
        if (m->params[i]->req == CF_GRAD_NONE) continue;
        if (o->nper && o->slot[i] < 0)
            return cf_seterr("error: cf_optim_step: parameter '%s' was frozen (CF_GRAD_NONE) when the "
                             "optimizer was made, so it has no optimizer state; make the optimizer after "
                             "setting gradient requests", m->params[i]->name);
        if (!m->pgrad)
            return cf_seterr("error: cf_optim_step: the model has no gradients (bind it with CF_TRAIN)");
        const float *g = m->pgrad + m->poff[i];
        double s = sumsq(g, cf_shape_count(m->params[i]->shape));
        if (!isfinite(s)) return nonfinite(m, i, g);
        ss += s;
    }

    update_job j = {.kind = o->kind, .scale = 1, .lr = lr, .wd = o->o.weight_decay, .mu = o->o.momentum};
    if (o->o.clip_norm > 0) {
        /* torch.nn.utils.clip_grad_norm_: scale by max_norm / (norm + 1e-6) when below 1 */
        float coef = o->o.clip_norm / ((float)sqrt(ss) + 1e-6f);
        if (coef < 1) j.scale = coef;
    }
    long t = o->t + 1;
    if (o->kind >= OPT_ADAM) {
        double b1 = o->o.beta1, b2 = o->o.beta2;
        j.b1 = o->o.beta1;
        j.b2 = o->o.beta2;
        j.c1 = (float)(1.0 - b1);
        j.c2 = (float)(1.0 - b2);
        j.step_size = (float)(-(double)lr / (1.0 - pow(b1, (double)t)));
        j.bc2_sqrt = (float)sqrt(1.0 - pow(b2, (double)t));
        j.eps = o->o.eps;
        j.decay = (float)(1.0 - (double)lr * o->o.weight_decay);
    }
    for (int i = 0; i < m->nparams; i++) {
        if (m->params[i]->req == CF_GRAD_NONE) continue;
        j.p = m->pdata + m->poff[i];
        j.g = m->pgrad + m->poff[i];
        j.s0 = o->nper ? o->sdata[o->slot[i]] : NULL;
        j.s1 = o->nper > 1 ? o->sdata[o->slot[i] + 1] : NULL;
        cf_parallel_range(cf_shape_count(m->params[i]->shape), 8, update_range, &j);
    }
    o->t = t;
    cf_model_quant_free(m);   /* trained: float32 again (core/quant.h) */
    return 0;
}
