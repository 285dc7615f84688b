/* test_lrfind.c - the learning-rate range test (cf_lrfind) on the spirals: the rates,
 * the smoothing, the stop at divergence, the suggestion (and that training at it
 * works), bitwise repeatability, every batch of a pass used, text data, and the
 * errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spirals.h"
#include "test.h"
#include "tmpdir.h"

/* cf_lrfind on a fresh spirals classifier (init seed 1) with these options. */
static int find(const cf_dataset *d, const cf_lrfind_opts *o, cf_lrfind_result *r, cf_model **keep)
{
    cf_model *m = cf_model_parse(classifier, "spirals.flux");
    cf_model_set_seed(m, 1);
    int rc = cf_lrfind(m, d, o, r);
    if (rc) fprintf(stderr, "  (cf_lrfind: %s)\n", cf_last_error());
    if (keep) *keep = m;
    else cf_model_free(m);
    return rc;
}

static cf_lrfind_opts sgd_opts(double start, double end, int steps)
{
    cf_lrfind_opts o = cf_lrfind_defaults();
    o.start = start;
    o.end = end;
    o.steps = steps;
    o.batch = 32;
    o.optim = cf_optim_defaults("sgd");
    o.seed = 5;
    return o;
}

TEST(defaults)
{
    cf_lrfind_opts o = cf_lrfind_defaults();
    CHECK(o.start == 1e-7 && o.end == 10 && o.steps == 100 && o.batch == 64);
    CHECK(o.optim.name && !strcmp(o.optim.name, "adam"));
}

/* Exponentially spaced from start to end, all steps run when nothing blows up, and
 * the smoothing is fastai's (bias-corrected, beta 0.98). */
TEST(rates_and_smoothing)
{
    cf_dataset *d = spirals(300, 1);
    cf_lrfind_opts o = sgd_opts(1e-3, 0.3, 30);
    cf_lrfind_result r;
    CHECK(find(d, &o, &r, NULL) == 0);
    CHECK(r.n == 30 && !r.diverged);
    if (r.n == 30) {
        CHECK_NEAR(r.lr[0], 1e-3, 1e-18);
        CHECK_NEAR(r.lr[29], 0.3, 1e-15);
        double q = pow(300, 1.0 / 29);
        for (int i = 1; i < r.n; i++) CHECK_NEAR(r.lr[i] / r.lr[i - 1], q, 1e-12);
        double avg = 0;
        for (int i = 0; i < r.n; i++) {
            CHECK(isfinite(r.loss[i]));
            avg = 0.98 * avg + 0.02 * r.loss[i];
            CHECK_NEAR(r.smooth[i], avg / (1 - pow(0.98, i + 1)), 1e-12);
        }
        CHECK(r.smooth[0] == r.loss[0]);
        /* still falling fastest at the end: the last five points are left out all the same */
        double last = r.smooth[29] - r.smooth[28];
        for (int j = 3; j < 28; j++) CHECK(r.smooth[j + 1] - r.smooth[j] > last);
        CHECK(r.min_at == 29 && r.suggested_at >= 3 && r.suggested_at + 1 < 30 - 5);
    }
    cf_lrfind_result_free(&r);
    CHECK(r.n == 0 && !r.lr && !r.loss && !r.smooth && r.suggested_at == -1 && isnan(r.suggested));
    cf_dataset_free(d);
}

/* With SGD up to lr 100 the loss first falls, then blows up: the run stops before the
 * end, at a smoothed loss over 4x its lowest, with the parameters still finite (the
 * step that blew up was not applied). */
TEST(stops_at_divergence)
{
    cf_dataset *d = spirals(300, 1);
    cf_lrfind_opts o = sgd_opts(1e-3, 100, 100);
    cf_lrfind_result r;
    cf_model *m = NULL;
    CHECK(find(d, &o, &r, &m) == 0);
    CHECK(r.diverged && r.n > 10 && r.n < 100);
    if (r.n > 10) {
        CHECK(r.lr[r.n - 1] < 100);
        double low = INFINITY;
        for (int i = 0; i < r.n - 1; i++) low = fmin(low, r.smooth[i]);
        CHECK(low < 0.9 * r.smooth[0]);   /* it fell */
        CHECK(!(r.smooth[r.n - 1] <= 4 * low));   /* then passed 4x the lowest (or is not finite) */
        for (int i = 0; i < r.n - 1; i++) CHECK(!(r.smooth[i] > 4 * low));   /* and not before */
        CHECK(r.min_at >= 0 && r.smooth[r.min_at] == low && r.min_loss_lr == r.lr[r.min_at]);
    }
    for (int i = 0; m && i < cf_model_param_count(m); i++) {
        const float *p = cf_model_param_data(m, i);
        size_t k = cf_shape_count(cf_model_param_shape(m, i));
        for (size_t j = 0; j < k; j++)
            if (!isfinite(p[j])) {
                CHECK(isfinite(p[j]));
                break;
            }
    }
    cf_lrfind_result_free(&r);
    cf_model_free(m);
    cf_dataset_free(d);
}

/* Mean loss on d after `epochs` of Adam at lr from the same fresh weights. */
static double loss_after(const cf_dataset *d, double lr, int epochs)
{
    cf_model *m = cf_model_parse(classifier, "spirals.flux");
    cf_model_set_seed(m, 1);
    cf_fit_opts f = opts(epochs);
    f.optim.lr = (float)lr;
    cf_trainer *t = cf_trainer_new(m, d, &f);
    double loss = NAN;
    if (t && cf_fit(t, d, NULL) == 0) cf_evaluate(m, d, 64, &loss, NULL);
    cf_trainer_free(t);
    cf_model_free(m);
    return loss;
}

/* The suggestion lies where the smoothed loss falls, at its steepest segment between
 * the first tenth and the last five points, before the lowest loss; and training at
 * it works better than at the range's start or at the blow-up. */
TEST(suggestion)
{
    cf_dataset *d = spirals(300, 1);
    cf_lrfind_opts o = cf_lrfind_defaults();   /* adam from 1e-7 to 10 */
    o.batch = 32;
    o.seed = 5;
    cf_lrfind_result r;
    CHECK(find(d, &o, &r, NULL) == 0);
    int s = r.suggested_at;
    CHECK(s >= 10 && s + 1 < r.n - 5);
    if (s >= 10 && s + 1 < r.n - 5) {
        CHECK(r.suggested == r.lr[s] && r.suggested > 1e-7 && r.suggested < 10);
        double fall = r.smooth[s + 1] - r.smooth[s];
        CHECK(fall < 0);
        for (int j = 10; j + 1 < r.n - 5; j++) CHECK(r.smooth[j + 1] - r.smooth[j] >= fall);
        CHECK(s < r.min_at);
        double at = loss_after(d, r.suggested, 10), low = loss_after(d, 1e-5, 10),
               high = loss_after(d, r.lr[r.n - 1], 10);
        printf("spirals: suggested lr %.3g (lowest smoothed loss at %.3g, blow-up at %.3g); loss after 10 epochs "
               "%.3f there, %.3f at 1e-5, %.3f at the blow-up\n", r.suggested, r.min_loss_lr, r.lr[r.n - 1], at, low,
               high);
        CHECK(at < low && !(at >= high));
    }
    cf_lrfind_result_free(&r);
    cf_dataset_free(d);
}

/* A range that starts where the loss already falls fast: the suggestion leaves out the
 * first tenth of the points (the smoothing's start-up), and the last five. */
TEST(suggestion_skips_the_ends)
{
    cf_dataset *d = spirals(300, 1);
    cf_lrfind_opts o = cf_lrfind_defaults();
    o.start = 0.01, o.end = 10, o.steps = 50, o.batch = 32;
    cf_lrfind_result r;
    CHECK(find(d, &o, &r, NULL) == 0);
    CHECK(r.suggested_at >= 5 && r.suggested_at + 1 < r.n - 5);
    cf_lrfind_result_free(&r);
    cf_dataset_free(d);
}

/* Rates too small to move the loss: its dips are noise, and there is no suggestion. */
TEST(no_suggestion_when_the_loss_never_falls)
{
    cf_dataset *d = spirals(300, 1);
    cf_lrfind_opts o = sgd_opts(1e-4, 1e-2, 30);
    cf_lrfind_result r;
    CHECK(find(d, &o, &r, NULL) == 0);
    CHECK(r.n == 30 && r.min_at == 0 && r.min_loss_lr == 1e-4);
    CHECK(r.suggested_at == -1 && isnan(r.suggested));
    cf_lrfind_result_free(&r);
    cf_dataset_free(d);
}

/* Same seed, same bits; another seed, another order of the batches. */
TEST(repeatable)
{
    cf_dataset *d = spirals(300, 1);
    cf_lrfind_opts o = sgd_opts(1e-3, 100, 60);
    cf_lrfind_result a, b, c;
    CHECK(find(d, &o, &a, NULL) == 0);
    CHECK(find(d, &o, &b, NULL) == 0);
    o.seed = 6;
    CHECK(find(d, &o, &c, NULL) == 0);
    CHECK(a.n == b.n && a.diverged == b.diverged && a.suggested_at == b.suggested_at && a.min_at == b.min_at);
    if (a.n == b.n && a.n > 0) {
        size_t k = (size_t)a.n * sizeof(double);
        CHECK(!memcmp(a.lr, b.lr, k) && !memcmp(a.loss, b.loss, k) && !memcmp(a.smooth, b.smooth, k));
        CHECK(!memcmp(&a.suggested, &b.suggested, sizeof a.suggested));
    }
    CHECK(c.n > 1 && a.n > 1 && c.loss[1] != a.loss[1]);
    cf_lrfind_result_free(&a);
    cf_lrfind_result_free(&b);
    cf_lrfind_result_free(&c);
    cf_dataset_free(d);
}

/* Fewer samples than the batch: batches of all of them, drawn again and again. */
TEST(small_data)
{
    cf_dataset *d = spirals(20, 1);
    cf_lrfind_opts o = sgd_opts(1e-3, 1, 20);
    cf_lrfind_result r;
    CHECK(find(d, &o, &r, NULL) == 0);
    CHECK(r.n == 20);
    cf_lrfind_result_free(&r);
    cf_dataset_free(d);
}

/* Every batch of a pass is used before the next shuffle: batches of one sample, at
 * rates too small to move the weights, so that each step's loss is its sample's; each
 * run of n steps must then be the n samples' losses (cf_evaluate's, one at a time), each
 * once. A shuffle one batch early would never use a pass's last sample. */
TEST(every_batch_of_a_pass)
{
    enum { N = 7, PASSES = 3 };
    float x[2 * N], y[N];
    for (int i = 0; i < N; i++) {
        x[2 * i] = 0.3f * (float)i - 1;
        x[2 * i + 1] = 0.5f - 0.2f * (float)(i * i % 5);
        y[i] = (float)(i % 3);
    }
    cf_dataset *d = cf_dataset_from_arrays(x, CF_SHAPE(2), y, 1, N);
    cf_lrfind_opts o = sgd_opts(1e-30, 1e-29, N * PASSES);
    o.batch = 1;
    cf_lrfind_result r;
    cf_model *m = NULL;
    CHECK(d && find(d, &o, &r, &m) == 0);
    CHECK(r.n == N * PASSES && !r.diverged);
    double own[N];   /* each sample's loss on the weights as they are */
    for (int i = 0; i < N; i++) {
        cf_dataset *one = cf_dataset_from_arrays(x + 2 * i, CF_SHAPE(2), y + i, 1, 1);
        own[i] = NAN;
        CHECK(one && m && cf_evaluate(m, one, 1, &own[i], NULL) == 0);
        cf_dataset_free(one);
    }
    double gap = INFINITY;   /* the samples' losses tell them apart */
    for (int i = 0; i < N; i++)
        for (int j = 0; j < i; j++) gap = fmin(gap, fabs(own[i] - own[j]));
    CHECK(gap > 1e-4);
    for (int p = 0; p < PASSES && r.n == N * PASSES; p++) {
        int seen[N] = {0}, unmatched = 0;
        for (int s = p * N; s < (p + 1) * N; s++) {
            int k = -1;
            for (int i = 0; i < N && k < 0; i++)
                if (!seen[i] && fabs(r.loss[s] - own[i]) <= 1e-6 * fmax(1, own[i])) k = i;
            if (k >= 0) seen[k] = 1;
            else unmatched++;
        }
        if (unmatched) {
            fprintf(stderr, "  pass %d: samples not used:", p + 1);
            for (int i = 0; i < N; i++)
                if (!seen[i]) fprintf(stderr, " %d", i);
            fprintf(stderr, "\n");
        }
        CHECK(unmatched == 0);
    }
    cf_lrfind_result_free(&r);
    cf_model_free(m);
    cf_dataset_free(d);
}

/* Text: read as streams, as cf_fit reads it. */
TEST(text)
{
    if (tmpdir_make("lrfind")) {
        CHECK(0);
        return;
    }
    FILE *f = fopen(tmp("words.txt"), "w");
    for (int i = 0; i < 40; i++) fputs("the quick brown fox jumps over the lazy dog\n", f);
    fclose(f);
    cf_dataset *train = NULL, *test = NULL;
    CHECK(cf_dataset_load_text(tmp("words.txt"), 8, 0, &train, &test) == 0);
    cf_model *m = cf_model_parse("model = Chain(Input(8), x -> reshape(x, 8, 1), Affine(30), softmax)\n", "char.flux");
    cf_lrfind_opts o = cf_lrfind_defaults();
    o.batch = 16;
    o.steps = 40;
    o.start = 1e-5;
    o.end = 1;
    cf_lrfind_result r;
    CHECK(train && m && cf_lrfind(m, train, &o, &r) == 0);
    CHECK(r.n >= 20 && r.suggested_at >= 0);
    if (r.n >= 20) CHECK(r.smooth[r.n - 1] < r.smooth[0] || r.diverged);
    cf_lrfind_result_free(&r);
    o.batch = 1000;   /* more streams than sequences */
    CHECK(cf_lrfind(m, train, &o, &r) == -1);
    CHECK_HAS(cf_last_error(), "fewer than the batch size 1000");
    cf_model_free(m);
    cf_dataset_free(train);
    cf_dataset_free(test);
    tmpdir_remove();
}

/* One bad thing each: -1, a message, and an empty result. */
static void refused(const cf_dataset *d, const cf_lrfind_opts *o, cf_model *m, const char *want)
{
    cf_lrfind_result r;
    r.n = 7;
    r.lr = (double *)1;   /* overwritten, not freed */
    CHECK(cf_lrfind(m, d, o, &r) == -1);
    CHECK_HAS(cf_last_error(), want);
    CHECK(r.n == 0 && !r.lr && !r.loss && !r.smooth && r.suggested_at == -1 && r.min_at == -1);
}

TEST(errors)
{
    cf_dataset *d = spirals(100, 1);
    cf_model *m = cf_model_parse(classifier, "spirals.flux");
    cf_lrfind_opts o = sgd_opts(1e-3, 1, 20);
    o.start = 1, o.end = 1;
    refused(d, &o, m, "the learning rates must rise: start 1 is not below end 1");
    o.start = 1, o.end = 0.1;
    refused(d, &o, m, "start 1 is not below end 0.1");
    o.start = 0;
    refused(d, &o, m, "must be finite and above 0");
    o.start = 1e-3, o.end = INFINITY;
    refused(d, &o, m, "must be finite and above 0");
    o.end = 1, o.steps = 4;
    refused(d, &o, m, "at least 5 steps are needed to see the loss fall (got 4)");
    o.steps = 20, o.batch = 0;
    refused(d, &o, m, "the batch must be at least 1");
    o.batch = 32, o.optim.name = "rmsprop";
    refused(d, &o, m, "unknown optimizer 'rmsprop'");
    o.optim = cf_optim_defaults("sgd");
    cf_lrfind_result r;
    CHECK(cf_lrfind(NULL, d, &o, &r) == -1 && cf_lrfind(m, NULL, &o, &r) == -1 && cf_lrfind(m, d, NULL, &r) == -1);
    CHECK(cf_lrfind(m, d, &o, NULL) == -1);
    cf_lrfind_result_free(NULL);

    /* data that does not fit the model */
    cf_dataset *d3 = cf_dataset_from_arrays((float[9]){0}, CF_SHAPE(3), (float[3]){0, 1, 2}, 1, 3);
    refused(d3, &o, m, "the samples are (3) (3 numbers) but the model's input 'x' takes");
    cf_dataset_free(d3);
    cf_model_free(m);

    /* nothing to train: no parameters; an output without the batch dimension */
    m = cf_model_parse("model = Chain(Input(2), x -> x * 2, softmax)\n", "none.flux");
    cf_dataset *d2 = cf_dataset_from_arrays((float[4]){0, 1, 1, 0}, CF_SHAPE(2), (float[2]){0, 1}, 1, 2);
    refused(d2, &o, m, "the model has no parameters to train (it has none)");
    cf_dataset_free(d2);
    cf_model_free(m);
    m = cf_model_new();
    cf_input(m, "x", CF_SHAPE(2));
    cf_output(m, cf_param(m, "W", CF_SHAPE(3), CF_GLOROT));
    refused(d, &o, m, "a loss needs an output with the batch dimension, but output 0 is a single value");
    cf_model_free(m);
    m = cf_model_parse(classifier, "spirals.flux");
    cf_model_set_grad_req(m, NULL, CF_GRAD_NONE);
    refused(d, &o, m, "the model has no parameters to train (all are frozen)");
    cf_model_free(m);
    cf_dataset_free(d);
}

int main(void)
{
    cf_set_threads(2);
    RUN(defaults);
    RUN(rates_and_smoothing);
    RUN(stops_at_divergence);
    RUN(suggestion);
    RUN(suggestion_skips_the_ends);
    RUN(no_suggestion_when_the_loss_never_falls);
    RUN(repeatable);
    RUN(small_data);
    RUN(every_batch_of_a_pass);
    RUN(text);
    RUN(errors);
    return test_summary("lrfind");
}
