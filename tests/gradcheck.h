/* gradcheck.h - numerical gradient checking by central differences.
 *
 * For a model bound with CF_INPUT_GRADS, the scalar L = sum over outputs o and
 * elements j of r_oj * out_oj (r random, fixed) is differentiated two ways: by
 * cf_backward with head gradients r, and by (L(x + h) - L(x - h)) / 2h for every
 * element x of every parameter and every differentiable input, forwarding in
 * evaluation mode unless opts->train. A mismatch beyond
 * atol + rtol * max(|analytic|, |numeric|) is reported and counted. */
#ifndef CF_TEST_GRADCHECK_H
#define CF_TEST_GRADCHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cflux.h"

typedef struct gc_opts {
    double h, rtol, atol;
    int verbose;
    int train;      /* forward in training mode (batch statistics); 0: evaluation */
} gc_opts;

static int gc_train;   /* the mode of the check running now */

static double gc_loss(cf_exec *e, double *const *r)
{
    if (cf_forward(e, gc_train)) {
        fprintf(stderr, "gradcheck: forward failed: %s\n", cf_last_error());
        return NAN;
    }
    double L = 0;
    for (int o = 0; o < cf_exec_output_count(e); o++) {
        size_t n;
        const float *y = cf_exec_output(e, o, &n);
        for (size_t j = 0; j < n; j++) L += r[o][j] * y[j];
    }
    return L;
}

/* Compare one buffer x (count n) whose analytic gradient is g. */
static int gc_compare(cf_exec *e, double *const *r, float *x, const float *g, size_t n,
                      const char *what, const gc_opts *o)
{
    int bad = 0;
    for (size_t j = 0; j < n; j++) {
        float keep = x[j];
        x[j] = keep + (float)o->h;
        double lp = gc_loss(e, r);
        x[j] = keep - (float)o->h;
        double lm = gc_loss(e, r);
        x[j] = keep;
        double hh = ((double)(keep + (float)o->h) - (double)(keep - (float)o->h));
        double num = (lp - lm) / hh, ana = g[j];
        double tol = o->atol + o->rtol * fmax(fabs(num), fabs(ana));
        if (!(fabs(num - ana) <= tol)) {
            if (bad < 5 || o->verbose)
                fprintf(stderr, "gradcheck: %s[%zu]: analytic %.6g, numeric %.6g\n", what, j, ana, num);
            bad++;
        }
    }
    return bad;
}

/* Checks every gradient of e; inputs must already hold their values. Returns the
 * number of mismatching elements (0: all good), or -1 when something failed. */
static int gradcheck_exec(cf_exec *e, cf_model *m, unsigned seed, const gc_opts *opts)
{
    gc_opts o = opts ? *opts : (gc_opts){1e-2, 2e-2, 2e-3, 0, 0};
    gc_train = o.train;
    int no = cf_exec_output_count(e), bad = 0;
    double *r[16];
    if (no > 16) return -1;
    srand(seed);
    for (int k = 0; k < no; k++) {
        size_t n;
        float *hd = cf_exec_output_grad(e, k, &n);
        r[k] = malloc((n ? n : 1) * sizeof **r);
        for (size_t j = 0; j < n; j++) hd[j] = (float)(r[k][j] = (double)rand() / RAND_MAX * 2 - 1);
    }
    cf_model_zero_grad(m);
    if (cf_forward(e, gc_train) || cf_backward(e)) {
        fprintf(stderr, "gradcheck: %s\n", cf_last_error());
        bad = -1;
        goto done;
    }
    /* copy the analytic gradients: the numerical passes run forward only, but keep
     * them apart from anything a later backward might touch */
    for (int p = 0; p < cf_model_param_count(m); p++) {
        size_t n = cf_shape_count(cf_model_param_shape(m, p));
        float *g = cf_model_param_grad(m, p);
        if (!g) continue;
        float *copy = malloc(n * sizeof *copy);
        for (size_t j = 0; j < n; j++) copy[j] = g[j];
        bad += gc_compare(e, r, cf_model_param_data(m, p), copy, n, cf_model_param_name(m, p), &o);
        free(copy);
    }
    for (int i = 0; i < cf_exec_input_count(e); i++) {
        size_t n;
        const float *g = cf_exec_input_grad(e, i, &n);
        if (!g) continue;
        float *copy = malloc(n * sizeof *copy);
        for (size_t j = 0; j < n; j++) copy[j] = g[j];
        char what[32];
        snprintf(what, sizeof what, "input %d", i);
        bad += gc_compare(e, r, cf_exec_input(e, i, NULL), copy, n, what, &o);
        free(copy);
    }
done:
    for (int k = 0; k < no; k++) free(r[k]);
    return bad;
}

#endif
