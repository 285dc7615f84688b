/* normalize.c - input standardisation: per element of a sample, x' = (x - mean) / std
 * with mean and std fitted on the training split (population std, as scikit-learn's
 * StandardScaler; a constant element gets std 1). The statistics belong to the
 * model: they are saved with its parameters and applied by cf_fit, cf_evaluate and
 * cf_predict as samples are copied in, so a checkpoint carries its own scaling. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"
#include "train/trainer.h"

int cf_model_set_input_norm(cf_model *m, const float *mean, const float *std, size_t count)
{
    if (!m) return cf_seterr("error: cf_model_set_input_norm: no model");
    if (!mean || !std) {
        free(m->norm_mean);
        free(m->norm_std);
        m->norm_mean = m->norm_std = NULL;
        m->norm_count = 0;
        return 0;
    }
    if (cf_model_infer_shapes(m)) return -1;
    size_t want = m->ninputs ? cf_shape_count(m->inputs[0]->shape) : 0;
    if (count != want)
        return cf_seterr("error: input standardisation for %zu numbers, but the model's input takes %zu", count,
                         want);
    for (size_t i = 0; i < count; i++)
        if (!isfinite(mean[i]) || !(std[i] > 0) || !isfinite(std[i]))
            return cf_seterr("error: input standardisation: element %zu has mean %g and std %g; the mean must be "
                             "finite and the std finite and above 0", i, (double)mean[i], (double)std[i]);
    float *a = malloc(count * sizeof *a), *b = malloc(count * sizeof *b);
    if (!a || !b) {
        free(a);
        free(b);
        return cf_oom(2 * count * sizeof *a);
    }
    memcpy(a, mean, count * sizeof *a);
    memcpy(b, std, count * sizeof *b);
    free(m->norm_mean);
    free(m->norm_std);
    m->norm_mean = a;
    m->norm_std = b;
    m->norm_count = count;
    return 0;
}

size_t cf_model_input_norm(const cf_model *m, const float **mean, const float **std)
{
    if (mean) *mean = m ? m->norm_mean : NULL;
    if (std) *std = m ? m->norm_std : NULL;
    return m ? m->norm_count : 0;
}

void cf_norm_apply(const cf_model *m, float *x, size_t nsamples)
{
    size_t k = m->norm_count;
    if (!k) return;
    const float *mu = m->norm_mean, *sd = m->norm_std;
    for (size_t s = 0; s < nsamples; s++, x += k)
        for (size_t i = 0; i < k; i++) x[i] = (x[i] - mu[i]) / sd[i];
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

int cf_norm_fit(cf_model *m, const cf_dataset *d)
{
    size_t k = cf_shape_count(cf_dataset_sample_shape(d)), n = cf_dataset_count(d);
    double *sum = calloc(2 * k, sizeof *sum);
    float *mean = malloc(k * sizeof *mean), *std = malloc(k * sizeof *std);
    if (!sum || !mean || !std) {
        free(sum);
        free(mean);
        free(std);
        return cf_oom(k * (2 * sizeof *sum + 2 * sizeof *mean));
    }
    double *sq = sum + k;
    const float *x = cf_dataset_x(d);
    for (size_t s = 0; s < n; s++, x += k)
        for (size_t i = 0; i < k; i++) sum[i] += x[i];
    for (size_t i = 0; i < k; i++) sum[i] /= (double)n;
    x = cf_dataset_x(d);
    for (size_t s = 0; s < n; s++, x += k)   /* two passes: no cancellation */
        for (size_t i = 0; i < k; i++) sq[i] += ((double)x[i] - sum[i]) * ((double)x[i] - sum[i]);
    for (size_t i = 0; i < k; i++) {
        double sdv = sqrt(sq[i] / (double)n);
        mean[i] = (float)sum[i];
        std[i] = sdv > 1e-12 * (1 + fabs(sum[i])) && (float)sdv > 0 ? (float)sdv : 1.0f;
    }
    int rc = cf_model_set_input_norm(m, mean, std, k);
    free(sum);
    free(mean);
    free(std);
    return rc;
}
