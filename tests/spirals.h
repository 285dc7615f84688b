/* spirals.h - small classification data made here (three spirals in the plane), a
 * classifier for it, and a copy of a model's parameters, for the training tests. */
#ifndef CF_TEST_SPIRALS_H
#define CF_TEST_SPIRALS_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"

/* n points, labels 0..2, the same for the same seed. */
static __attribute__((unused)) cf_dataset *spirals(int n, unsigned seed)
{
    float *x = malloc((size_t)n * 2 * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    srand(seed);
    for (int i = 0; i < n; i++) {
        int c = i % 3;
        float r = (float)rand() / (float)RAND_MAX;
        float t = 4.0f * r + 2.0944f * (float)c + 0.1f * ((float)rand() / (float)RAND_MAX - 0.5f);
        x[2 * i] = r * sinf(t);
        x[2 * i + 1] = r * cosf(t);
        y[i] = (float)c;
    }
    cf_dataset *d = cf_dataset_from_arrays(x, CF_SHAPE(2), y, 1, (size_t)n);
    free(x);
    free(y);
    return d;
}

static const char *const classifier __attribute__((unused)) =
    "model = Chain(Input(2), Affine(32), tanh, Affine(32), tanh, Affine(3), softmax)\n";

/* Adam at lr 0.01, batch 32, seed 5. */
static __attribute__((unused)) cf_fit_opts opts(int epochs)
{
    cf_fit_opts o = cf_fit_defaults();
    o.epochs = epochs;
    o.batch = 32;
    o.optim = cf_optim_defaults("adam");
    o.optim.lr = 0.01f;
    o.seed = 5;
    return o;
}

/* All the model's parameters, in order, in one malloc'd array of *count floats. */
static __attribute__((unused)) float *params_copy(cf_model *m, size_t *count)
{
    size_t n = cf_model_weight_count(m), at = 0;
    float *p = malloc(n * sizeof *p);
    for (int i = 0; i < cf_model_param_count(m); i++) {
        size_t k = cf_shape_count(cf_model_param_shape(m, i));
        memcpy(p + at, cf_model_param_data(m, i), k * sizeof *p);
        at += k;
    }
    *count = at;
    return p;
}

/* All the model's states likewise. */
static __attribute__((unused)) float *states_copy(cf_model *m, size_t *count)
{
    size_t n = 0, at = 0;
    for (int i = 0; i < cf_model_state_count(m); i++) n += cf_shape_count(cf_model_state_shape(m, i));
    float *p = malloc((n ? n : 1) * sizeof *p);
    for (int i = 0; i < cf_model_state_count(m); i++) {
        size_t k = cf_shape_count(cf_model_state_shape(m, i));
        memcpy(p + at, cf_model_state_data(m, i), k * sizeof *p);
        at += k;
    }
    *count = at;
    return p;
}

#endif
