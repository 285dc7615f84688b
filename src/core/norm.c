/* norm.c - a model's standardisation statistics (graph.h: norm_*, tnorm_*): per element
 * of a sample, a mean and a std for the inputs and, for regression, the targets. They
 * belong to the model, so they are set and read here, beside it, by the parameter files
 * that load them (params_io.c) and by training that fits and applies them
 * (train/normalize.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"

/* Set or remove (mean NULL) one pair of statistics: count numbers, want of them. */
static int set_stats(float **pm, float **ps, size_t *pc, const float *mean, const float *std, size_t count,
                     size_t want, const char *what, const char *whose)
{
    if (!mean || !std) {
        free(*pm);
        free(*ps);
        *pm = *ps = NULL;
        *pc = 0;
        return 0;
    }
    if (count != want)
        return cf_seterr("error: %s standardisation for %zu numbers, but the model's %s %zu", what, count, whose, want);
    for (size_t i = 0; i < count; i++)
        if (!isfinite(mean[i]) || !(std[i] > 0) || !isfinite(std[i]))
            return cf_seterr("error: %s standardisation: element %zu has mean %g and std %g; the mean must be "
                             "finite and the std finite and above 0", what, i, (double)mean[i], (double)std[i]);
    float *a = malloc(count * sizeof *a), *b = malloc(count * sizeof *b);
    if (!a || !b) {
        free(a);
        free(b);
        return cf_oom(2 * count * sizeof *a);
    }
    memcpy(a, mean, count * sizeof *a);
    memcpy(b, std, count * sizeof *b);
    free(*pm);
    free(*ps);
    *pm = a;
    *ps = b;
    *pc = count;
    return 0;
}

int cf_model_set_input_norm(cf_model *m, const float *mean, const float *std, size_t count)
{
    if (!m) return cf_seterr("error: cf_model_set_input_norm: no model");
    if (mean && std && cf_model_infer_shapes(m)) return -1;
    size_t want = mean && std && m->ninputs ? cf_shape_count(m->inputs[0]->shape) : 0;
    return set_stats(&m->norm_mean, &m->norm_std, &m->norm_count, mean, std, count, want, "input", "input takes");
}

int cf_model_set_target_norm(cf_model *m, const float *mean, const float *std, size_t count)
{
    if (!m) return cf_seterr("error: cf_model_set_target_norm: no model");
    if (mean && std && cf_model_infer_shapes(m)) return -1;
    size_t want = mean && std && m->noutputs ? cf_shape_count(m->outputs[0]->shape) : 0;
    if (mean && std && m->noutputs && m->outputs[0]->op == CF_OP_SOFTMAX)
        return cf_seterr("error: target standardisation is for regression, but the model's output ends with softmax "
                         "(a classifier's targets are class indices)");
    return set_stats(&m->tnorm_mean, &m->tnorm_std, &m->tnorm_count, mean, std, count, want, "target",
                     "output 0 has");
}

size_t cf_model_target_norm(const cf_model *m, const float **mean, const float **std)
{
    if (mean) *mean = m ? m->tnorm_mean : NULL;
    if (std) *std = m ? m->tnorm_std : NULL;
    return m ? m->tnorm_count : 0;
}

size_t cf_model_input_norm(const cf_model *m, const float **mean, const float **std)
{
    if (mean) *mean = m ? m->norm_mean : NULL;
    if (std) *std = m ? m->norm_std : NULL;
    return m ? m->norm_count : 0;
}
