/* normalize.c - standardisation: per element of a sample, x' = (x - mean) / std
 * with mean and std fitted on the training split (population std, as scikit-learn's
 * StandardScaler; a constant element gets std 1), for the inputs and, for regression,
 * the targets. The statistics belong to the model (core/norm.c keeps them): they are
 * saved with its parameters and applied by cf_fit, cf_evaluate and cf_predict as
 * samples are copied in (and undone on the predictions), so a checkpoint carries its
 * own scaling.
 *
 * An image folder (a streamed dataset) is standardised per channel instead: one mean
 * and std for each of its C planes, over every pixel of every image, written into
 * each element of that plane (the statistics keep their per-element form), fitted in
 * one pass as the images are decoded. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"
#include "core/mem.h"
#include "data/data.h"
#include "data/stream.h"
#include "train/trainer.h"

void cf_norm_apply_targets(const cf_model *m, float *y, size_t nsamples)
{
    size_t k = m->tnorm_count;
    if (!k) return;
    const float *mu = m->tnorm_mean, *sd = m->tnorm_std;
    for (size_t s = 0; s < nsamples; s++, y += k)
        for (size_t i = 0; i < k; i++) y[i] = (y[i] - mu[i]) / sd[i];
}

void cf_norm_undo_targets(const cf_model *m, float *out, size_t nsamples)
{
    size_t k = m->tnorm_count;
    if (!k) return;
    const float *mu = m->tnorm_mean, *sd = m->tnorm_std;
    for (size_t s = 0; s < nsamples; s++, out += k)
        for (size_t i = 0; i < k; i++) out[i] = out[i] * sd[i] + mu[i];
}

void cf_norm_apply(const cf_model *m, float *x, size_t nsamples)
{
    size_t k = m->norm_count;
    if (!k) return;
    const float *mu = m->norm_mean, *sd = m->norm_std;
    for (size_t s = 0; s < nsamples; s++, x += k)
        for (size_t i = 0; i < k; i++) x[i] = (x[i] - mu[i]) / sd[i];
}

void cf_model_norm_inputs(const cf_model *m, float *x, size_t n)
{
    if (m && x) cf_norm_apply(m, x, n);
}

void cf_model_denorm_outputs(const cf_model *m, float *out, size_t n)
{
    if (m && out) cf_norm_undo_targets(m, out, n);
}

int cf_norm_check(const cf_model *m, const cf_dataset *d)
{
    if (cf_dataset_sequential(d))
        return cf_seterr("error: %s: --normalize standardises input features, but text data's inputs are character "
                         "indices; train text without it", cf_dataset_name(d));
    int v = cf_model_input_classes(m, 0);
    if (v)
        return cf_seterr("error: --normalize standardises input features, but the model's input '%s' holds indices "
                         "that an embedding of %d rows reads; train it without --normalize",
                         cf_model_input_name(m, 0), v);
    return 0;
}

/* Images read in this many at a time by the streamed pass. */
#define NORM_CHUNK 64

/* d's per-channel mean and population std, over its c planes of `plane` values, in
 * one streamed pass: each image's plane gives its own mean and sum of squared
 * deviations (two passes over the plane, in memory), merged into the running ones by
 * Chan, Golub and LeVeque's formula. 0 or -1 (an image that cannot be read). */
static int channel_stats(const cf_dataset *d, int c, size_t plane, double *mean, double *m2)
{
    size_t n = cf_dataset_count(d), k = (size_t)c * plane, count = 0;
    float *buf = cf_mem_alloc(NORM_CHUNK * k * sizeof *buf, "the images standardised");
    if (!buf) return -1;
    if (cf_dataset_plan_range(d, 0, n, NORM_CHUNK)) {
        cf_mem_free(buf);
        return -1;
    }
    for (int ch = 0; ch < c; ch++) mean[ch] = m2[ch] = 0;
    for (size_t at = 0; at < n; at += NORM_CHUNK) {
        size_t b = n - at < NORM_CHUNK ? n - at : NORM_CHUNK;
        if (cf_dataset_read(d, at, b, buf)) {
            cf_dataset_plan(d, NULL, 0, 0);
            cf_mem_free(buf);
            return -1;
        }
        for (size_t s = 0; s < b; s++, count++)
            for (int ch = 0; ch < c; ch++) {
                const float *x = buf + s * k + (size_t)ch * plane;
                double mu = 0, q = 0;
                for (size_t i = 0; i < plane; i++) mu += x[i];
                mu /= (double)plane;
                for (size_t i = 0; i < plane; i++) q += ((double)x[i] - mu) * ((double)x[i] - mu);
                double na = (double)count * (double)plane, nb = (double)plane, delta = mu - mean[ch];
                mean[ch] += delta * nb / (na + nb);
                m2[ch] += q + delta * delta * na * nb / (na + nb);
            }
    }
    cf_dataset_plan(d, NULL, 0, 0);
    cf_mem_free(buf);
    for (int ch = 0; ch < c; ch++) m2[ch] /= (double)n * (double)plane;   /* the variance */
    return 0;
}

/* Mean and population std of each of the k numbers of n rows of v (two passes, in
 * double: no cancellation); a constant number gets std 1. 0 or -1 (out of memory). */
static int fit_stats(const float *v, size_t n, size_t k, float **mean_out, float **std_out)
{
    double *sum = calloc(2 * k, sizeof *sum);
    float *mean = malloc(k * sizeof *mean), *std = malloc(k * sizeof *std);
    if (!sum || !mean || !std) {
        free(sum);
        free(mean);
        free(std);
        return cf_oom(k * (2 * sizeof *sum + 2 * sizeof *mean));
    }
    double *sq = sum + k;
    const float *x = v;
    for (size_t s = 0; s < n; s++, x += k)
        for (size_t i = 0; i < k; i++) sum[i] += x[i];
    for (size_t i = 0; i < k; i++) sum[i] /= (double)n;
    x = v;
    for (size_t s = 0; s < n; s++, x += k)
        for (size_t i = 0; i < k; i++) sq[i] += ((double)x[i] - sum[i]) * ((double)x[i] - sum[i]);
    for (size_t i = 0; i < k; i++) {
        double sdv = sqrt(sq[i] / (double)n);
        mean[i] = (float)sum[i];
        std[i] = sdv > 1e-12 * (1 + fabs(sum[i])) && (float)sdv > 0 ? (float)sdv : 1.0f;
    }
    free(sum);
    *mean_out = mean;
    *std_out = std;
    return 0;
}

int cf_norm_fit(cf_model *m, const cf_dataset *d)
{
    if (cf_dataset_streamed(d)) {
        size_t k = cf_shape_count(cf_dataset_sample_shape(d));
        int c = d->src->c;
        size_t plane = k / (size_t)c;
        double mu[3], var[3];
        float *mean = malloc(k * sizeof *mean), *std = malloc(k * sizeof *std);
        if (!mean || !std) {
            free(mean);
            free(std);
            return cf_oom(2 * k * sizeof *mean);
        }
        int rc = channel_stats(d, c, plane, mu, var);
        for (int ch = 0; !rc && ch < c; ch++) {
            double sdv = sqrt(var[ch]);
            float sd = sdv > 1e-12 * (1 + fabs(mu[ch])) && (float)sdv > 0 ? (float)sdv : 1.0f;
            for (size_t i = 0; i < plane; i++) {
                mean[(size_t)ch * plane + i] = (float)mu[ch];
                std[(size_t)ch * plane + i] = sd;
            }
        }
        if (!rc) rc = cf_model_set_input_norm(m, mean, std, k);
        free(mean);
        free(std);
        return rc;
    }
    size_t k = cf_shape_count(cf_dataset_sample_shape(d));
    float *mean, *std;
    if (fit_stats(cf_dataset_x(d), cf_dataset_count(d), k, &mean, &std)) return -1;
    int rc = cf_model_set_input_norm(m, mean, std, k);
    free(mean);
    free(std);
    return rc;
}

int cf_norm_fit_targets(cf_model *m, const cf_dataset *d)
{
    size_t k = (size_t)cf_dataset_target_size(d);
    float *mean, *std;
    if (fit_stats(cf_dataset_y(d), cf_dataset_count(d), k, &mean, &std)) return -1;
    int rc = cf_model_set_target_norm(m, mean, std, k);
    free(mean);
    free(std);
    return rc;
}
