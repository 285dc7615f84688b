/* lrfind.c - the learning-rate range test (Leslie Smith, 2015; fastai's lr_find):
 * one training step at each of a run of exponentially rising learning rates, the loss
 * recorded and smoothed, stopped when it blows up; the suggestion is the rate where
 * the smoothed loss falls fastest on its way down (fastai's "steep" rule).
 *
 * The model is prepared as cf_fit prepares it (cf_trainer_new: the data checked, the
 * loss added, the parameters made, the optimizer), so that the test trains exactly
 * what `cflux train` would. Batches come in the order of a Fisher-Yates shuffle of
 * the data seeded by (seed, pass), whole batches only, a new shuffle when one is used
 * up; sequential data (text) is read as cf_fit reads it, as B streams, the carried
 * state starting from zeros at each pass. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"
#include "core/rng.h"
#include "data/data.h"
#include "train/trainer.h"

#define BETA 0.98          /* fastai's smoothing of the loss */
#define DIVERGED 4.0       /* stop when the smoothed loss passes this times its lowest */
#define SKIP_END 5         /* the suggestion leaves out the last points (the blow-up) */

cf_lrfind_opts cf_lrfind_defaults(void)
{
    cf_lrfind_opts o = {0};
    o.start = 1e-7;
    o.end = 10;
    o.steps = 100;
    o.batch = 64;
    o.optim = cf_optim_defaults("adam");
    return o;
}

void cf_lrfind_result_free(cf_lrfind_result *r)
{
    if (!r) return;
    free(r->lr);
    free(r->loss);
    free(r->smooth);
    memset(r, 0, sizeof *r);
    r->suggested_at = r->min_at = -1;
    r->suggested = r->min_loss_lr = NAN;
}

static int check_opts(const cf_lrfind_opts *o)
{
    if (!(o->start > 0) || !isfinite(o->start) || !isfinite(o->end))
        return cf_seterr("error: lr-find: the learning rates must be finite and above 0 (got start %g, end %g)",
                         o->start, o->end);
    if (!(o->start < o->end))
        return cf_seterr("error: lr-find: the learning rates must rise: start %g is not below end %g", o->start,
                         o->end);
    if (o->steps < 5)
        return cf_seterr("error: lr-find: at least 5 steps are needed to see the loss fall (got %d)", o->steps);
    if (o->batch < 1) return cf_seterr("error: lr-find: the batch must be at least 1 (got %d)", o->batch);
    return 0;
}

/* The lowest smoothed loss, and the suggestion: the left end of the steepest falling
 * segment of the smoothed loss against log lr among points [steps/10, n - SKIP_END)
 * that lead down to the lowest (a fall after it is noise in the blow-up). */
static void suggest(cf_lrfind_result *r, int steps)
{
    for (int j = 0; j < r->n; j++)
        if (isfinite(r->smooth[j]) && (r->min_at < 0 || r->smooth[j] < r->smooth[r->min_at])) r->min_at = j;
    if (r->min_at < 0) return;
    r->min_loss_lr = r->lr[r->min_at];
    int lo = steps / 10, hi = r->n - SKIP_END;   /* points [lo, hi) */
    if (hi > r->min_at + 1) hi = r->min_at + 1;
    double steepest = 0;
    for (int j = lo; j + 1 < hi; j++) {
        double slope = (r->smooth[j + 1] - r->smooth[j]) / (log(r->lr[j + 1]) - log(r->lr[j]));
        if (isfinite(slope) && slope < steepest) steepest = slope, r->suggested_at = j;
    }
    if (r->suggested_at >= 0) r->suggested = r->lr[r->suggested_at];
}

/* The steps themselves, on a bound executor: fills r. 0 or -1. */
static int run(cf_trainer *t, cf_exec *e, const cf_dataset *d, size_t n, size_t B, int seq, size_t *perm,
               const cf_lrfind_opts *o, cf_lrfind_result *r)
{
    double avg = 0, best = INFINITY, ratio = o->end / o->start;
    size_t at = n;   /* past the end: the first step shuffles */
    int pass = -1;
    for (int i = 0; i < o->steps; i++) {
        double lr = o->start * pow(ratio, (double)i / (o->steps - 1));
        if (at + B > n) {
            cf_sample_order(perm, n, B, seq, o->seed, ++pass);
            if (cf_dataset_plan(d, perm, n / B * B, B)) return -1;   /* a streamed dataset reads ahead */
            if (seq) cf_exec_reset_state(e);   /* the streams start again */
            at = 0;
        }
        if (cf_trainer_load_batch(t, e, d, perm + at, B)) return -1;
        at += B;
        cf_exec_set_step(e, i + 1);   /* dropout's masks follow the steps */
        if (cf_forward(e, 1)) return -1;
        double loss = (double)cf_exec_loss(e);
        avg = BETA * avg + (1 - BETA) * loss;
        double smooth = avg / (1 - pow(BETA, i + 1));
        r->lr[i] = lr;
        r->loss[i] = loss;
        r->smooth[i] = smooth;
        r->n = i + 1;
        if (!isfinite(smooth) || smooth > DIVERGED * best) {
            r->diverged = 1;   /* before the update: the parameters stay as they were */
            break;
        }
        if (smooth < best) best = smooth;
        if (cf_backward(e)) return -1;
        if (cf_optim_step(t->opt, (float)lr)) {   /* a gradient is not finite: as good as diverged */
            r->diverged = 1;
            break;
        }
    }
    cf_model_zero_grad(t->m);
    return 0;
}

int cf_lrfind(cf_model *m, const cf_dataset *train, const cf_lrfind_opts *o, cf_lrfind_result *r)
{
    if (r) {
        memset(r, 0, sizeof *r);
        cf_lrfind_result_free(r);   /* the empty result: no steps, no suggestion */
    }
    if (!m || !train || !o || !r) return cf_seterr("error: cf_lrfind: no model, data, options or result");
    if (check_opts(o)) return -1;
    cf_fit_opts fo = cf_fit_defaults();
    fo.epochs = 1;
    fo.batch = o->batch;
    fo.optim = o->optim;
    fo.seed = o->seed;
    fo.loss = o->loss;
    fo.normalize = o->normalize;
    cf_trainer *t = cf_trainer_new(m, train, &fo);   /* checks the data; adds the loss; parameters, optimizer */
    if (!t) return -1;
    cf_exec *e = NULL;
    size_t *perm = NULL;
    int rc = -1;   /* cf_trainer_new refused a model with nothing to train */
    size_t n = cf_dataset_count(train), B = (size_t)o->batch;
    int seq = cf_dataset_sequential(train);
    if (n == 0) {
        cf_seterr("error: %s: no samples to train on", cf_dataset_name(train));
        goto out;
    }
    if (seq && n < B) {
        cf_seterr("error: %s: the text makes %zu sequences, fewer than the batch size %zu; sequential data trains in "
                  "whole batches: use a smaller batch or a longer text", cf_dataset_name(train), n, B);
        goto out;
    }
    if (n < B) B = n;
    if (seq) n = n / B * B;
    if (o->normalize && !m->norm_count && cf_norm_fit(m, train)) goto out;
    if (o->normalize && cf_trainer_loss(t) == CF_LOSS_MSE && !m->tnorm_count && m->outputs[0]->op != CF_OP_SOFTMAX &&
        cf_norm_fit_targets(m, train))
        goto out;
    if (!(e = cf_bind(m, (int)B, CF_TRAIN))) goto out;
    size_t s = (size_t)o->steps;
    if (!(perm = malloc(n * sizeof *perm)) || !(r->lr = malloc(s * sizeof *r->lr)) ||
        !(r->loss = malloc(s * sizeof *r->loss)) || !(r->smooth = malloc(s * sizeof *r->smooth))) {
        cf_oom(n * sizeof *perm + 3 * s * sizeof(double));
        goto out;
    }
    if (run(t, e, train, n, B, seq, perm, o, r)) goto out;
    suggest(r, o->steps);
    rc = 0;
out:
    if (rc) cf_lrfind_result_free(r);
    if (train) cf_dataset_plan(train, NULL, 0, 0);
    free(perm);
    cf_exec_free(e);
    cf_trainer_free(t);
    return rc;
}
