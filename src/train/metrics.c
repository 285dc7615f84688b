/* metrics.c - what evaluation says beyond loss and accuracy (cf_metrics in cflux.h):
 * for classification the confusion matrix, per-class precision, recall and F1, and
 * top-k accuracy; for regression MSE, MAE and R².
 *
 * Precision of a class that was never predicted is 0, and so is F1 when precision
 * and recall are both 0 (scikit-learn's zero_division=0); the macro averages are
 * over the classes that occur in the data. Ties in the top-k go to the lower class,
 * as argmax does. R² is 1 - SS_res / SS_tot over every target number, SS_tot about
 * each target column's mean (NaN when the targets do not vary). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"
#include "train/trainer.h"

void cf_metrics_free(cf_metrics *r)
{
    if (!r) return;
    free(r->confusion);
    free(r->precision);
    free(r->recall);
    free(r->f1);
    free(r->support);
    memset(r, 0, sizeof *r);
}

/* The rank of class c among the k outputs p (0: the most probable; ties: the lower
 * class first). */
static int rank_of(const float *p, int k, int c)
{
    int r = 0;
    for (int j = 0; j < k; j++) r += p[j] > p[c] || (p[j] == p[c] && j < c);
    return r;
}

static int classification(const float *out, int k, const float *y, size_t n, int top_k, cf_metrics *r)
{
    size_t kk = (size_t)k * (size_t)k;
    r->confusion = calloc(kk, sizeof *r->confusion);
    r->support = calloc((size_t)k, sizeof *r->support);
    r->precision = calloc((size_t)k, sizeof *r->precision);
    r->recall = calloc((size_t)k, sizeof *r->recall);
    r->f1 = calloc((size_t)k, sizeof *r->f1);
    if (!r->confusion || !r->support || !r->precision || !r->recall || !r->f1) {
        cf_metrics_free(r);
        return cf_oom(kk * sizeof *r->confusion);
    }
    size_t hits = 0, top = 0;
    for (size_t i = 0; i < n; i++) {
        const float *p = out + i * (size_t)k;
        float t = y[i];
        if (!(t >= 0 && t < (float)k) || t != floorf(t)) {
            cf_metrics_free(r);
            return cf_seterr("error: label %zu is %g, not a class in 0..%d", i, (double)t, k - 1);
        }
        int c = (int)t, best = 0;
        for (int j = 1; j < k; j++)
            if (p[j] > p[best]) best = j;
        r->confusion[(size_t)c * k + best]++;
        r->support[c]++;
        hits += best == c;
        if (top_k) top += rank_of(p, k, c) < top_k;
    }
    r->classes = k;
    r->count = n;
    r->accuracy = n ? (double)hits / (double)n : NAN;
    r->top_k = top_k;
    r->top_k_accuracy = top_k && n ? (double)top / (double)n : NAN;
    int present = 0;
    double sp = 0, sr = 0, sf = 0;
    for (int c = 0; c < k; c++) {
        long tp = r->confusion[(size_t)c * k + c], predicted = 0;
        for (int t = 0; t < k; t++) predicted += r->confusion[(size_t)t * k + c];
        r->precision[c] = predicted ? (double)tp / (double)predicted : 0;
        r->recall[c] = r->support[c] ? (double)tp / (double)r->support[c] : NAN;
        double pr = r->precision[c], rc = r->recall[c];
        r->f1[c] = !r->support[c] ? NAN : pr + rc > 0 ? 2 * pr * rc / (pr + rc) : 0;
        if (r->support[c]) {
            present++;
            sp += r->precision[c];
            sr += r->recall[c];
            sf += r->f1[c];
        }
    }
    r->macro_precision = present ? sp / present : NAN;
    r->macro_recall = present ? sr / present : NAN;
    r->macro_f1 = present ? sf / present : NAN;
    r->mse = r->mae = r->r2 = NAN;
    return 0;
}

static int regression(const float *out, const float *y, int width, size_t n, cf_metrics *r)
{
    double *mean = calloc((size_t)width, sizeof *mean);
    if (!mean) return cf_oom((size_t)width * sizeof *mean);
    for (size_t i = 0; i < n; i++)
        for (int j = 0; j < width; j++) mean[j] += y[i * (size_t)width + j];
    for (int j = 0; j < width; j++) mean[j] /= n ? (double)n : 1;
    double se = 0, ae = 0, tot = 0;
    for (size_t i = 0; i < n; i++)
        for (int j = 0; j < width; j++) {
            double t = y[i * (size_t)width + j], e = out[i * (size_t)width + j] - t;
            se += e * e;
            ae += fabs(e);
            tot += (t - mean[j]) * (t - mean[j]);
        }
    free(mean);
    double count = (double)n * width;
    r->count = n;
    r->mse = count ? se / count : NAN;
    r->mae = count ? ae / count : NAN;
    r->r2 = tot > 0 ? 1 - se / tot : NAN;
    r->accuracy = r->top_k_accuracy = r->macro_precision = r->macro_recall = r->macro_f1 = NAN;
    return 0;
}

int cf_metrics_compute(const float *outputs, size_t out_size, const float *targets, int target_size, size_t n,
                       int classify, int top_k, cf_metrics *r)
{
    if (!r) return cf_seterr("error: cf_metrics_compute: nowhere to put the metrics");
    memset(r, 0, sizeof *r);
    if ((!outputs || !targets) && n) return cf_seterr("error: cf_metrics_compute: no outputs or targets");
    if (target_size < 1 || out_size < (size_t)target_size || out_size % (size_t)target_size)
        return cf_seterr("error: cf_metrics_compute: %zu outputs a sample for %d targets", out_size, target_size);
    if (top_k < 0) return cf_seterr("error: cf_metrics_compute: top-k of %d", top_k);
    if (!classify) {
        if (out_size != (size_t)target_size)
            return cf_seterr("error: %zu outputs a sample for %d targets: regression scores one output a target",
                             out_size, target_size);
        return regression(outputs, targets, target_size, n, r);
    }
    /* every target position (a sequence's steps too) is one prediction over k classes */
    int k = (int)(out_size / (size_t)target_size);
    if (top_k > k) top_k = k;
    return classification(outputs, k, targets, n * (size_t)target_size, top_k, r);
}

int cf_evaluate_metrics(cf_model *m, const cf_dataset *d, int batch, int top_k, cf_metrics *r)
{
    return cf_evaluate_metrics_ex(m, d, batch, 0, top_k, r);
}

int cf_evaluate_metrics_ex(cf_model *m, const cf_dataset *d, int batch, long limit_batches, int top_k, cf_metrics *r)
{
    if (!m || !d || !r || batch < 1 || limit_batches < 0)
        return cf_seterr("error: cf_evaluate_metrics: no model, data or result, or a limit below 0");
    memset(r, 0, sizeof *r);
    if (cf_model_infer_shapes(m)) return -1;
    size_t n = cf_dataset_count(d), k = cf_shape_count(cf_model_output_shape(m, 0));
    if (limit_batches > 0 && n / (size_t)batch >= (size_t)limit_batches) n = (size_t)limit_batches * (size_t)batch;
    if (n > SIZE_MAX / sizeof(float) / (k ? k : 1)) return cf_oom(SIZE_MAX);
    float *out = malloc((n ? n : 1) * k * sizeof *out);
    if (!out) return cf_oom(n * k * sizeof *out);
    int loss = cf_model_has_loss(m);
    int classify = loss ? loss == CF_LOSS_XENT : !strcmp(cf_model_output_op(m, 0), "softmax");
    float **outs = calloc((size_t)m->noutputs + 1, sizeof *outs);   /* output 0 alone */
    int rc = outs ? 0 : cf_oom(((size_t)m->noutputs + 1) * sizeof *outs);
    if (outs) outs[0] = out;
    if (!rc) rc = cf_predict_spread(m, d, n, batch, outs);
    free(outs);
    /* the targets of the rows scored: all of them, or those spread over the data */
    size_t all = cf_dataset_count(d), ys = (size_t)cf_dataset_target_size(d);
    const float *y = cf_dataset_y(d);
    float *picked = !rc && n < all ? malloc(n * ys * sizeof *picked) : NULL;
    if (!rc && n < all && !picked) rc = cf_oom(n * ys * sizeof *picked);
    for (size_t p = 0; picked && p < n; p++) memcpy(picked + p * ys, y + cf_spread_row(p, n, all) * ys, ys * sizeof *y);
    if (!rc) rc = cf_metrics_compute(out, k, picked ? picked : y, (int)ys, n, classify, top_k, r);
    free(picked);
    free(out);
    return rc;
}
