/* quantize.c - post-training quantization of a model's products (cf_model_quantize):
 * the weights of each affine product and convolution to int8 per output channel,
 * symmetric, and its input to 7 bits as it runs (per row of an affine product, per
 * sample of a convolution: dynamic) or with a scale and zero point fixed from the
 * ranges seen on calibration data (static).
 *
 * The products are found as an executor runs them: the affine nodes (x W + b, what
 * the fuse_affine pass makes of a layer) whose W is a parameter matrix, and the
 * conv2d nodes of one group whose kernels are a parameter. Calibration
 * binds the model for training, so that each product's input is still there after an
 * evaluation-mode forward, and takes the least and greatest value of each over the
 * batches (spread evenly over the data, standardised as cf_predict does). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/quant.h"
#include "data/data.h"
#include "exec/exec.h"
#include "rt/qgemm.h"
#include "train/trainer.h"

typedef struct product {
    int param, node;
    float lo, hi;
} product;

/* The affine products of e's graph whose W is a parameter matrix, into p (at most
   m->nparams); their count. */
static int products(const cf_exec *e, product *p)
{
    int n = 0;
    for (int i = 0; i < e->g->nn; i++) {
        const cf_node *x = e->g->node[i];
        if (!x || !e->an.live[i] || !cf_qproduct(x)) continue;
        const cf_node *W = x->in[1];
        int seen = 0;
        for (int k = 0; k < n; k++) seen |= p[k].param == W->index;
        if (!seen) p[n++] = (product){.param = W->index, .node = i};
    }
    return n;
}

/* The least and greatest input of each product over `batches` batches of d. */
static int calibrate(cf_model *m, const cf_dataset *d, int batch, int batches, product *p, int np)
{
    cf_exec *e = cf_bind(m, batch, CF_TRAIN);
    if (!e) return -1;
    size_t all = cf_dataset_count(d), n = (size_t)batch * (size_t)batches;
    if (n > all) n = all / (size_t)batch * (size_t)batch;
    size_t *idx = malloc((size_t)batch * sizeof *idx);
    int rc = idx ? 0 : cf_oom((size_t)batch * sizeof *idx);
    for (int i = 1; i < cf_exec_input_count(e); i++) {   /* a loss's labels: class 0, read by nothing kept */
        size_t count;
        float *v = cf_exec_input(e, i, &count);
        memset(v, 0, count * sizeof *v);
    }
    for (size_t at = 0; rc == 0 && at < n; at += (size_t)batch) {
        float *x = cf_exec_input(e, 0, NULL);
        for (int i = 0; i < batch; i++) idx[i] = cf_spread_row(at + (size_t)i, n, all);
        if (cf_dataset_fetch(d, idx, (size_t)batch, x)) rc = -1;
        else {
            cf_norm_apply(m, x, (size_t)batch);
            rc = cf_forward(e, 0);
        }
        for (int k = 0; rc == 0 && k < np; k++) {
            const cf_node *node = e->g->node[p[k].node];
            int in = node->in[0]->id;
            size_t count = cf_shape_count(e->shape[in]);
            const float *v = e->val[in];
            for (size_t j = 0; j < count; j++) {
                p[k].lo = v[j] < p[k].lo ? v[j] : p[k].lo;
                p[k].hi = v[j] > p[k].hi ? v[j] : p[k].hi;
            }
        }
    }
    free(idx);
    cf_exec_free(e);
    return rc;
}

/* Weights w of shape s to integers q (as floats) and a scale per output channel
   (cf_qparam_channels: a matrix's column, a convolution's kernel): max |w| / 127. */
static void quantize_weights(const float *w, cf_shape s, float *q, float *scale)
{
    int N = cf_qparam_channels(s);
    size_t count = cf_shape_count(s), per = count / (size_t)N;
    /* element k of channel j */
#define AT(j, k) (s.rank == 2 ? (k) * (size_t)N + (size_t)(j) : (size_t)(j) * per + (k))
    for (int j = 0; j < N; j++) {
        float mx = 0;
        for (size_t k = 0; k < per; k++) mx = fabsf(w[AT(j, k)]) > mx ? fabsf(w[AT(j, k)]) : mx;
        scale[j] = mx > 0 ? mx / CF_QW_MAX : 1;
        for (size_t k = 0; k < per; k++) {
            float v = nearbyintf(w[AT(j, k)] / scale[j]);
            q[AT(j, k)] = v > CF_QW_MAX ? CF_QW_MAX : v < -CF_QW_MAX ? -CF_QW_MAX : v;
        }
    }
#undef AT
}

int cf_model_quantize(cf_model *m, const cf_dataset *calib, const cf_quantize_options *o)
{
    cf_quantize_options opt = o ? *o : (cf_quantize_options){0};
    if (!m) return cf_seterr("error: cf_model_quantize: no model");
    if (opt.batch <= 0) opt.batch = 100;
    if (opt.batches <= 0) opt.batches = 10;
    if (opt.activations < CF_QUANT_AUTO || opt.activations > CF_QUANT_STATIC)
        return cf_seterr("error: cf_model_quantize: activations is %d, not CF_QUANT_AUTO, _DYNAMIC or _STATIC",
                         opt.activations);
    /* auto: a fixed range where there is data to measure it on (as fast as the products
       get: no pass over each row to find its range), else each row's */
    int want_static = opt.activations == CF_QUANT_STATIC || (opt.activations == CF_QUANT_AUTO && calib);
    if (want_static && !calib)
        return cf_seterr("error: static quantization fixes each input's range on calibration data: give the data");
    if (cf_model_infer_shapes(m) || cf_model_init_params(m)) return -1;
    cf_exec *e = cf_bind(m, 1, 0);
    if (!e) return -1;
    product *p = calloc((size_t)m->nparams + 1, sizeof *p);
    if (!p) {
        cf_exec_free(e);
        return cf_oom((size_t)m->nparams * sizeof *p);
    }
    int np = products(e, p);
    cf_exec_free(e);
    int rc = 0;
    if (np == 0)
        rc = cf_seterr("error: the model has no products to quantize (cflux quantizes Affine and Conv2D layers)");
    if (rc == 0 && want_static) {
        if (cf_dataset_count(calib) < (size_t)opt.batch) opt.batch = (int)cf_dataset_count(calib);
        if (cf_shape_count(cf_dataset_sample_shape(calib)) != cf_shape_count(m->inputs[0]->shape))
            rc = cf_seterr("error: the calibration data's samples do not fit the model's input");
        int mode = m->quant_off;
        m->quant_off = 1;   /* calibrate on the float32 products */
        if (rc == 0) rc = calibrate(m, calib, opt.batch, opt.batches, p, np);
        m->quant_off = mode;
    }
    for (int k = 0; rc == 0 && k < np; k++) {
        const cf_node *W = m->params[p[k].param];
        size_t count = cf_shape_count(W->shape);
        float *q = malloc(count * sizeof *q), *scale = malloc((size_t)cf_qparam_channels(W->shape) * sizeof *scale);
        if (!q || !scale) rc = cf_oom(count * sizeof *q);
        float as = 1;
        int az = 0;
        if (want_static) cf_qact_range(p[k].lo, p[k].hi, &as, &az);
        if (rc == 0) {
            quantize_weights(m->pdata + m->poff[p[k].param], W->shape, q, scale);
            rc = cf_qparam_set(m, p[k].param, q, scale, want_static, as, az);
        }
        free(q);
        free(scale);
    }
    free(p);
    return rc < 0 ? -1 : np;
}
