/* params_io.c - a model's parameters and states to and from safetensors files, by name.
 *
 * The file's metadata says what wrote it: format "cflux-params", format_version 1.
 * Files without that metadata (from PyTorch, say) load too, as long as names and
 * shapes fit; a file of a newer format version is refused with both versions named.
 * Beside the parameters, a model's input standardisation (if it has one) is stored as
 * "input.mean" and "input.std" (a regression model's target standardisation as
 * "target.mean" and "target.std"), and the PyTorch module names an import gave its
 * layers as the metadata "torch_modules" (cf_model_torch_names), and the classes'
 * names as "class_names", and the model's notes as "info.KEY". Every value loaded must be finite: a file holding
 * NaN or infinity is refused, naming the tensor. A partial load (CF_LOAD_PARTIAL, and
 * CF_LOAD_MATCHING for shapes that differ) loads what matches and keeps the model's
 * class names when anything was left out: they belong to a head that was not loaded. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"
#include "core/num.h"
#include "core/safetensors.h"
#include "core/params_io.h"
#include "core/quant.h"

#define PARAMS_FORMAT "cflux-params"
#define PARAMS_VERSION 1

#define NORM_MEAN "input.mean"
#define NORM_STD "input.std"
#define TNORM_MEAN "target.mean"
#define TNORM_STD "target.std"

int cf_model_params_tensor_count(const cf_model *m)
{
    return m->nparams + m->nstates + (m->norm_count ? 2 : 0) + (m->tnorm_count ? 2 : 0);
}

/* Parameter i, then state i - nparams: its node and its values. */
static const cf_node *held(const cf_model *m, int i, float **data)
{
    if (i < m->nparams) {
        if (data) *data = m->pdata + m->poff[i];
        return m->params[i];
    }
    i -= m->nparams;
    if (data) *data = m->sdata + m->soff[i];
    return m->states[i];
}

static int held_index(const cf_model *m, const char *name)
{
    int i = cf_model_param_index(m, name);
    if (i >= 0) return i;
    i = cf_model_state_index(m, name);
    return i < 0 ? -1 : m->nparams + i;
}

void cf_model_params_as_tensors(const cf_model *m, cf_st_tensor *t)
{
    int nheld = m->nparams + m->nstates;
    for (int i = 0; i < nheld; i++) {
        float *data;
        const cf_node *p = held(m, i, &data);
        t[i].name = p->name;
        t[i].rank = p->shape.rank;
        for (int d = 0; d < p->shape.rank; d++) t[i].shape[d] = p->shape.d[d];
        t[i].count = cf_shape_count(p->shape);
        t[i].data = data;
    }
    t += nheld;
    if (m->norm_count) {
        t[0] = (cf_st_tensor){.name = NORM_MEAN, .rank = 1, .shape = {(long long)m->norm_count},
                              .count = m->norm_count, .data = m->norm_mean};
        t[1] = t[0];
        t[1].name = NORM_STD;
        t[1].data = m->norm_std;
        t += 2;
    }
    if (m->tnorm_count) {
        t[0] = (cf_st_tensor){.name = TNORM_MEAN, .rank = 1, .shape = {(long long)m->tnorm_count},
                              .count = m->tnorm_count, .data = m->tnorm_mean};
        t[1] = t[0];
        t[1].name = TNORM_STD;
        t[1].data = m->tnorm_std;
    }
}

/* The quantized parameters' entries in t (n of them): the integers as I8 in each
 * parameter's own entry, and its scales and input range appended at t[n ...]; the
 * names and values are carved from *block (freed by the caller). The entries added. */
static int quant_as_tensors(const cf_model *m, cf_st_tensor *t, int n, void **block)
{
    size_t floats = 0, chars = 0;   /* the values first, then the names: each float aligned */
    for (int i = 0; i < m->nquant; i++) {
        const cf_node *p = m->params[m->quant[i].param];
        floats += cf_shape_count(p->shape) + 2;
        chars += 2 * (strlen(p->name) + 16);
    }
    float *f = *block = malloc(floats * sizeof *f + chars + 1);
    if (!f) return cf_oom(floats * sizeof *f + chars);
    char *names = (char *)(f + floats);
    int added = 0;
    for (int i = 0; i < m->nquant; i++) {
        const cf_qparam *qp = &m->quant[i];
        const cf_node *p = m->params[qp->param];
        size_t count = cf_shape_count(p->shape), len = strlen(p->name);
        float *q = f, *in = q + count;
        f = in + 2;
        for (size_t k = 0; k < count; k++) q[k] = qp->q[k];
        in[0] = qp->act_scale, in[1] = (float)qp->act_zero;
        char *sname = names, *iname = sname + len + 16;
        names = iname + len + 16;
        snprintf(sname, len + 16, "%s" CF_QSCALE_SUFFIX, p->name);
        snprintf(iname, len + 16, "%s" CF_QINPUT_SUFFIX, p->name);
        t[qp->param].dtype = "I8";
        t[qp->param].data = q;
        t[n + added++] = (cf_st_tensor){.name = sname, .rank = 1, .shape = {qp->channels},
                                        .count = (size_t)qp->channels, .data = qp->scale};
        if (qp->act_static)
            t[n + added++] = (cf_st_tensor){.name = iname, .rank = 1, .shape = {2}, .count = 2, .data = in};
    }
    return added;
}

int cf_model_save_params(cf_model *m, const char *path)
{
    if (!m || !path) return cf_seterr("error: cf_model_save_params: no model or no path");
    if (cf_model_init_params(m)) return -1;
    int n = cf_model_params_tensor_count(m);
    cf_st_tensor *t = calloc((size_t)n + 2 * (size_t)m->nquant + 1, sizeof *t);
    if (!t) return cf_oom((size_t)n * sizeof *t);
    cf_model_params_as_tensors(m, t);
    void *qblock = NULL;
    int nq = quant_as_tensors(m, t, n, &qblock);
    char version[16];
    snprintf(version, sizeof version, "%d", PARAMS_VERSION);
    const char *keys[80] = {"format", "format_version", "cflux_version"};
    const char *vals[80] = {PARAMS_FORMAT, version, cf_version()};
    int nmeta = 3;
    char **owned = NULL;
    int rc = nq < 0 ? -1 : cf_model_extra_meta(m, keys, vals, &nmeta, 80, &owned);
    if (rc == 0) rc = cf_st_write(path, n + nq, t, nmeta, keys, vals);
    cf_model_extra_meta_free(owned);
    free(qblock);
    free(t);
    return rc;
}

static int same_shape(cf_shape s, const cf_st_tensor *t)
{
    if (s.rank != t->rank) return 0;
    for (int i = 0; i < s.rank; i++)
        if ((long long)s.d[i] != t->shape[i]) return 0;
    return 1;
}

static void st_shape_str(const cf_st_tensor *t, char *buf, size_t size)
{
    size_t k = (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < t->rank && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%lld", i ? ", " : "", t->shape[i]);
    if (k < size) snprintf(buf + k, size - k, ")");
}

/* Append name to a ", "-separated list in buf, or "..." once it is full. */
static void list_add(char *buf, size_t size, const char *name)
{
    size_t len = strlen(buf);
    if (len + strlen(name) + 8 >= size) {
        if (len + 5 < size && (len < 4 || strcmp(buf + len - 3, "...") != 0)) strcat(buf, ", ...");
        return;
    }
    if (len) strcat(buf, ", ");
    strcat(buf, name);
}

/* Every value of a tensor finite: 0, or -1 naming the first that is not. */
static int check_finite(const cf_st_tensor *t, const char *path)
{
    for (size_t i = 0; i < t->count; i++)
        if (!isfinite(t->data[i]))
            return cf_seterr("error: %s: '%s' holds %g (element %zu), not a finite number; the run that wrote it "
                             "diverged", path, t->name, (double)t->data[i], i);
    return 0;
}

/* Standardisation in a file (the input's, or the target's): both tensors or neither,
 * sized for what the model has (want numbers), finite, std above 0. */
static int check_norm(const cf_st_tensor *mean, const cf_st_tensor *std, size_t want, const char *what,
                      const char *path)
{
    if (!mean && !std) return 0;
    const char *mname = what[0] == 'i' ? NORM_MEAN : TNORM_MEAN, *sname = what[0] == 'i' ? NORM_STD : TNORM_STD;
    if (!mean || !std)
        return cf_seterr("error: %s: the file has '%s' without '%s'", path, mean ? mname : sname, mean ? sname : mname);
    if (mean->count != want || std->count != want)
        return cf_seterr("error: %s: the %s standardisation is for %zu numbers, but the model's %s %zu", path, what,
                         mean->count, what[0] == 'i' ? "input takes" : "output has", want);
    if (check_finite(mean, path) || check_finite(std, path)) return -1;
    for (size_t i = 0; i < std->count; i++)
        if (!(std->data[i] > 0))
            return cf_seterr("error: %s: '%s' holds %g (element %zu); a standard deviation is above 0", path, sname,
                             (double)std->data[i], i);
    return 0;
}

/* The parameter that a file's tensor NAME.qscale or NAME.qinput belongs to (its
 * index, its base name's tensor in *base), or -1 when the name has neither suffix. */
static int quant_extra(const cf_model *m, const cf_st_file *f, const char *name, const cf_st_tensor **base)
{
    size_t len = strlen(name), sl = strlen(CF_QSCALE_SUFFIX);
    if (len <= sl || (strcmp(name + len - sl, CF_QSCALE_SUFFIX) && strcmp(name + len - sl, CF_QINPUT_SUFFIX)))
        return -1;
    char stem[512];
    if (len - sl >= sizeof stem) return -1;
    memcpy(stem, name, len - sl);
    stem[len - sl] = 0;
    *base = cf_st_find(f, stem);
    return cf_model_param_index(m, stem);
}

static int is_i8(const cf_st_tensor *t) { return t && t->dtype && strcmp(t->dtype, "I8") == 0; }

/* Whether parameter p is the weights (input 1) of a matrix product or a convolution
   of m: what a quantized parameter must be. */
static int product_weights(const cf_model *m, int p)
{
    for (int i = 0; i < m->nnodes; i++) {
        const cf_node *n = m->nodes[i];
        if ((n->op == CF_OP_MATMUL || n->op == CF_OP_CONV2D) && n->nin > 1 && n->in[1] == m->params[p]) return 1;
    }
    return 0;
}

/* The file's quantized parameters, checked: each I8 tensor of a parameter a matrix of
 * integers in -127..127 with NAME.qscale, a finite scale above 0 per column, and
 * perhaps NAME.qinput (a scale above 0 and a whole zero point in 0..127); every
 * NAME.qscale and NAME.qinput of such a tensor. 0 or -1 naming the tensor. */
static int check_quant(const cf_model *m, const cf_st_file *f, const char *path)
{
    for (int i = 0; i < cf_st_count(f); i++) {
        const cf_st_tensor *t = cf_st_get(f, i), *base = NULL;
        int pi = quant_extra(m, f, t->name, &base);
        if (pi < 0 && !is_i8(t)) continue;
        if (pi >= 0 && !is_i8(base))
            return cf_seterr("error: %s: '%s' is for the quantized parameter '%.*s', which the file does not hold "
                             "as int8 (I8)", path, t->name, (int)(strlen(t->name) - strlen(CF_QSCALE_SUFFIX)),
                             t->name);
        if (pi >= 0) continue;
        int p = cf_model_param_index(m, t->name);
        if (p < 0) continue;   /* not the model's: the name check lists it */
        cf_shape ts = {.rank = t->rank};
        for (int d = 0; d < t->rank && d < CF_MAX_DIMS; d++) ts.d[d] = (int)t->shape[d];
        int channels = cf_qparam_channels(ts);
        if (!channels)
            return cf_seterr("error: %s: '%s' is int8 but neither a matrix nor a convolution's kernels; cflux "
                             "quantizes the weights of products", path, t->name);
        if (!product_weights(m, p))
            return cf_seterr("error: %s: '%s' is int8, but no matrix product or convolution of the model reads it "
                             "as its weights", path, t->name);
        for (size_t k = 0; k < t->count; k++)
            if (t->data[k] < -CF_QW_MAX)
                return cf_seterr("error: %s: '%s' holds %g (element %zu); quantized weights are -127..127", path,
                                 t->name, (double)t->data[k], k);
        char name[600];
        snprintf(name, sizeof name, "%s" CF_QSCALE_SUFFIX, t->name);
        const cf_st_tensor *sc = cf_st_find(f, name);
        if (!sc) return cf_seterr("error: %s: '%s' is int8 but the file has no '%s', its scales", path, t->name, name);
        if (sc->count != (size_t)channels || sc->rank != 1)
            return cf_seterr("error: %s: '%s' holds %zu scales, but '%s' has %d output %s", path, name, sc->count,
                             t->name, channels, t->rank == 2 ? "columns" : "channels");
        for (size_t k = 0; k < sc->count; k++)
            if (!(sc->data[k] > 0) || !isfinite(sc->data[k]))
                return cf_seterr("error: %s: '%s' holds %g (element %zu); a scale is a finite number above 0", path,
                                 name, (double)sc->data[k], k);
        snprintf(name, sizeof name, "%s" CF_QINPUT_SUFFIX, t->name);
        const cf_st_tensor *in = cf_st_find(f, name);
        if (!in) continue;
        if (in->count != 2 || in->rank != 1)
            return cf_seterr("error: %s: '%s' holds %zu numbers, not 2 (the input's scale and zero point)", path,
                             name, in->count);
        if (!(in->data[0] > 0) || !isfinite(in->data[0]))
            return cf_seterr("error: %s: '%s' holds the scale %g; a scale is a finite number above 0", path, name,
                             (double)in->data[0]);
        if (!(in->data[1] >= 0 && in->data[1] <= CF_QA_MAX && in->data[1] == floorf(in->data[1])))
            return cf_seterr("error: %s: '%s' holds the zero point %g; it is a whole number in 0..%d", path, name,
                             (double)in->data[1], CF_QA_MAX);
    }
    return 0;
}

/* The model quantized as the file says (check_quant passed): its earlier quantization
 * dropped, each parameter loaded from an I8 tensor quantized again. 0 or -1. */
static int load_quant(cf_model *m, const cf_st_file *f, const unsigned char *skip)
{
    cf_model_quant_free(m);
    for (int p = 0; p < m->nparams; p++) {
        const cf_st_tensor *t = cf_st_find(f, m->params[p]->name);
        if (!is_i8(t) || skip[p]) continue;
        char name[600];
        snprintf(name, sizeof name, "%s" CF_QSCALE_SUFFIX, t->name);
        const cf_st_tensor *sc = cf_st_find(f, name);
        snprintf(name, sizeof name, "%s" CF_QINPUT_SUFFIX, t->name);
        const cf_st_tensor *in = cf_st_find(f, name);
        if (cf_qparam_set(m, p, t->data, sc->data, in != NULL, in ? in->data[0] : 1, in ? (int)in->data[1] : 0))
            return -1;
    }
    return 0;
}

/* What a file holds of a model's parameters and states: the model's that it lacks or
 * (CF_LOAD_MATCHING) has in another shape, and the tensors it has that the model does
 * not, as counts and ", "-separated lists. */
typedef struct match {
    char missing[2048], unexpected[2048];
    int nmissing, nunexpected;
} match;

/* Match the file's tensors to the model's held values by name (and shape): skip[i] set
 * for each not to be loaded. A shape that differs is an error unless CF_LOAD_MATCHING.
 * The file's standardisation (norms) and, in a checkpoint, the optimizer's and the
 * carried state are not parameters. 0 or -1. */
static int match_names(const cf_model *m, const cf_st_file *f, const char *path, unsigned flags, int ckpt,
                       const cf_st_tensor *const norms[4], unsigned char *skip, match *mt)
{
    for (int i = 0; i < m->nparams + m->nstates; i++) {
        const cf_node *p = held(m, i, NULL);
        const cf_st_tensor *t = cf_st_find(f, p->name);
        char item[400], want[96], have[96];
        if (t && !same_shape(p->shape, t)) {
            cf_shape_str(p->shape, want, sizeof want);
            st_shape_str(t, have, sizeof have);
            if (!(flags & CF_LOAD_MATCHING))
                return cf_seterr("error: %s: %s '%s' is %s in the model but %s in the file", path,
                                 p->op == CF_OP_PARAM ? "parameter" : "state", p->name, want, have);
        }
        if (!t || !same_shape(p->shape, t)) {
            skip[i] = 1;
            mt->nmissing++;
            if (t) snprintf(item, sizeof item, "%s (%s in the model, %s in the file)", p->name, want, have);
            else snprintf(item, sizeof item, "%s%s", p->name, flags & CF_LOAD_MATCHING ? " (not in the file)" : "");
            list_add(mt->missing, sizeof mt->missing, item);
            continue;
        }
        if (check_finite(t, path)) return -1;
    }
    for (int i = 0; i < cf_st_count(f); i++) {
        const cf_st_tensor *t = cf_st_get(f, i);
        if (ckpt && (strncmp(t->name, "optim.", 6) == 0 || strncmp(t->name, "carry.", 6) == 0)) continue;
        if (t == norms[0] || t == norms[1] || t == norms[2] || t == norms[3]) continue;
        const cf_st_tensor *base;
        if (quant_extra(m, f, t->name, &base) >= 0 && is_i8(base)) continue;   /* scales: check_quant's */
        if (held_index(m, t->name) < 0) {
            mt->nunexpected++;
            list_add(mt->unexpected, sizeof mt->unexpected, t->name);
        }
    }
    return 0;
}

int cf_params_want(const cf_st_file *f, const char *name, void *user)
{
    (void)user;
    const char *format = cf_st_meta(f, "format");
    int ckpt = format && strcmp(format, CF_CHECKPOINT_FORMAT) == 0;
    return !(ckpt && (strncmp(name, "optim.", 6) == 0 || strncmp(name, "carry.", 6) == 0));
}

int cf_model_load_params_ex(cf_model *m, const char *path, unsigned flags)
{
    if (!m || !path) return cf_seterr("error: cf_model_load_params: no model or no path");
    if (cf_model_init_params(m)) return -1;
    cf_st_file *f = cf_st_read_want(path, 0, cf_params_want, NULL);
    if (!f) return -1;
    int rc = cf_model_params_from(m, f, path, flags);
    cf_st_free(f);
    return rc;
}

int cf_model_params_from(cf_model *m, const cf_st_file *f, const char *path, unsigned flags)
{
    const char *format = cf_st_meta(f, "format"), *ver = cf_st_meta(f, "format_version");
    int64_t v;
    if (format && strcmp(format, PARAMS_FORMAT) == 0) {
        if (cf_parse_i64(ver, 1, INT32_MAX, &v))
            return cf_seterr("error: %s: the parameter file's format_version is \"%.40s\", not a whole number", path,
                             ver ? ver : "(none)");
        if (v > PARAMS_VERSION)
            return cf_seterr("error: %s: written by parameter format %s; this build reads 1 to %d", path, ver,
                             PARAMS_VERSION);
    }
    const cf_st_tensor *mean = cf_st_find(f, NORM_MEAN), *std = cf_st_find(f, NORM_STD);
    const cf_st_tensor *tmean = cf_st_find(f, TNORM_MEAN), *tstd = cf_st_find(f, TNORM_STD);
    if (check_norm(mean, std, m->ninputs ? cf_shape_count(m->inputs[0]->shape) : 0, "input", path) ||
        check_norm(tmean, tstd, m->noutputs ? cf_shape_count(m->outputs[0]->shape) : 0, "target", path))
        return -1;
    /* a training checkpoint also holds the optimizer's state and the carried state of
       its run: not parameters */
    int ckpt = format && strcmp(format, CF_CHECKPOINT_FORMAT) == 0;
    /* check everything before changing anything; skip[i]: held value i is not loaded */
    int nheld = m->nparams + m->nstates;
    unsigned char *skip = calloc((size_t)nheld + 1, 1);
    if (!skip) return cf_oom((size_t)nheld + 1);
    match mt = {.missing = "", .unexpected = ""};
    int rc = check_quant(m, f, path) ? -1 : match_names(m, f, path, flags, ckpt, (const cf_st_tensor *[]){mean, std, tmean, tstd}, skip, &mt);
    if (rc == 0 && !(flags & CF_LOAD_PARTIAL) && (mt.nmissing || mt.nunexpected)) {
        cf_seterr("error: %s: the parameters do not match the model:", path);
        if (mt.nmissing)
            cf_adderr(" missing from the file (%d): %s%s", mt.nmissing, mt.missing, mt.nunexpected ? ";" : "");
        if (mt.nunexpected) cf_adderr(" not in the model (%d): %s", mt.nunexpected, mt.unexpected);
        rc = -1;
    }
    /* a file of another model: say which, when it says and it is not this one's */
    const char *theirs = cf_st_meta(f, CF_MODEL_FILE_META);
    if (rc && theirs && *theirs && (!m->source_name || strcmp(theirs, m->source_name)))
        cf_adderr("; the file holds the weights of %s", theirs);
    if (rc || (flags & CF_LOAD_CHECK)) {
        free(skip);
        return rc;
    }
    /* the class names belong to the output: a load that leaves anything out (a new head,
       or the file's old one) keeps the model's */
    if (cf_model_set_input_norm(m, mean ? mean->data : NULL, std ? std->data : NULL, mean ? mean->count : 0) ||
        cf_model_set_torch_names(m, cf_st_meta(f, CF_TORCH_META)) ||
        cf_model_set_target_norm(m, tmean ? tmean->data : NULL, tstd ? tstd->data : NULL, tmean ? tmean->count : 0) ||
        (!mt.nmissing && !mt.nunexpected && cf_model_set_class_meta(m, cf_st_meta(f, CF_CLASSES_META))) ||
        cf_model_set_info_from(m, f)) {
        free(skip);
        return -1;
    }
    for (int i = 0; i < nheld; i++) {
        float *data;
        const cf_st_tensor *t = cf_st_find(f, held(m, i, &data)->name);
        if (t && !skip[i]) memcpy(data, t->data, t->count * sizeof(float));
    }
    rc = load_quant(m, f, skip);
    free(skip);
    if (rc) return -1;
    cf_clearerr();
    if (mt.nmissing || mt.nunexpected) {
        cf_seterr("note: %s: loaded %d of %d parameters%s", path, nheld - mt.nmissing, nheld,
                  m->nstates ? " and statistics" : "");
        if (mt.nmissing)
            cf_adderr("\nnote: %s: not loaded (%d, left as initialised): %s", path, mt.nmissing, mt.missing);
        if (mt.nunexpected)
            cf_adderr("\nnote: %s: in the file but not in the model (%d): %s", path, mt.nunexpected, mt.unexpected);
    }
    return 0;
}

int cf_model_load_params(cf_model *m, const char *path) { return cf_model_load_params_ex(m, path, 0); }
