/* test_train.c - training end to end on data made here: losses, fit, evaluate,
 * predict, checkpoints that are repeatable and resume exactly, and clear errors. */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "cflux.h"
#include "spirals.h"
#include "test.h"
#include "tmpdir.h"

TEST(fit_learns_and_evaluates)
{
    cf_dataset *train = spirals(601, 1), *test = spirals(300, 2);   /* 601: a last batch of 25 */
    cf_model *m = cf_model_parse(classifier, "spirals.flux");
    cf_fit_opts o = opts(40);
    cf_trainer *t = cf_trainer_new(m, train, &o);
    CHECK(t != NULL);
    if (!t) {
        fprintf(stderr, "%s\n", cf_last_error());
        return;
    }
    CHECK(cf_model_has_loss(m) == CF_LOSS_XENT);
    double before_loss, before_acc;
    CHECK(cf_evaluate(m, test, 50, &before_loss, &before_acc) == 0);
    CHECK(cf_fit(t, train, test) == 0);
    CHECK(cf_trainer_epoch(t) == 40);
    double loss, acc;
    CHECK(cf_evaluate(m, test, 64, &loss, &acc) == 0);
    CHECK(acc > 0.9 && loss < before_loss * 0.5);
    printf("spirals: test accuracy %.3f -> %.3f, loss %.3f -> %.3f\n", before_acc, acc, before_loss, loss);
    /* predict agrees with evaluate's accuracy */
    float *p = malloc(300 * 3 * sizeof *p);
    CHECK(cf_predict(m, test, 7, p) == 0);
    int hits = 0;
    for (int i = 0; i < 300; i++) {
        int best = 0;
        for (int c = 1; c < 3; c++)
            if (p[i * 3 + c] > p[i * 3 + best]) best = c;
        hits += best == (int)cf_dataset_y(test)[i];
    }
    CHECK_NEAR(hits / 300.0, acc, 1e-9);
    free(p);
    cf_trainer_free(t);
    cf_model_free(m);
    cf_dataset_free(train);
    cf_dataset_free(test);
}

TEST(regression_uses_mean_squared_error)
{
    /* y = 2 x0 - x1 + 0.5 */
    int n = 256;
    float *x = malloc((size_t)n * 2 * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    srand(3);
    for (int i = 0; i < n; i++) {
        x[2 * i] = (float)rand() / (float)RAND_MAX;
        x[2 * i + 1] = (float)rand() / (float)RAND_MAX;
        y[i] = 2 * x[2 * i] - x[2 * i + 1] + 0.5f;
    }
    cf_dataset *d = cf_dataset_from_arrays(x, CF_SHAPE(2), y, 1, (size_t)n);
    CHECK(cf_dataset_classes(d) == 0);
    cf_model *m = cf_model_parse("model = Chain(Input(2), Affine(1))", "lin.flux");
    cf_fit_opts o = opts(60);
    o.optim = cf_optim_defaults("momentum");
    o.optim.lr = 0.05f;
    cf_trainer *t = cf_trainer_new(m, d, &o);
    CHECK(t && cf_model_has_loss(m) == CF_LOSS_MSE);
    CHECK(t && cf_fit(t, d, NULL) == 0);
    double loss, acc;
    CHECK(cf_evaluate(m, d, 32, &loss, &acc) == 0);
    CHECK(loss < 1e-3 && isnan(acc));
    const float *W = cf_model_param_data(m, cf_model_param_index(m, "1.W"));
    CHECK_NEAR(W[0], 2.0, 0.05);
    CHECK_NEAR(W[1], -1.0, 0.05);
    cf_trainer_free(t);
    cf_model_free(m);
    cf_dataset_free(d);
    free(x);
    free(y);
}

TEST(classifier_must_end_with_softmax)
{
    cf_dataset *d = spirals(30, 1);
    cf_model *m = cf_model_parse("model = Chain(Input(2), Affine(3), relu)\n", "nosoftmax.flux");
    cf_fit_opts o = opts(1);
    /* by default a model without softmax trains by mean squared error: labels do not fit it */
    CHECK(cf_trainer_new(m, d, &o) == NULL);
    CHECK_HAS(cf_last_error(), "each sample has one label but the model's output has 3 numbers; a classifier ends "
                               "with softmax, and this model ends with relu at nosoftmax.flux:1:36");
    o.loss = CF_LOSS_XENT;
    CHECK(cf_trainer_new(m, d, &o) == NULL);
    CHECK_HAS(cf_last_error(), "classifier models must end with softmax, but this one ends with relu at "
                               "nosoftmax.flux:1:36");
    cf_model_free(m);
    cf_dataset_free(d);
}

TEST(data_that_does_not_fit_is_refused)
{
    cf_dataset *d = spirals(30, 1);
    cf_model *m = cf_model_parse("model = Chain(Input(3), Affine(3), softmax)\n", "three.flux");
    cf_fit_opts o = opts(1);
    CHECK(cf_trainer_new(m, d, &o) == NULL);
    CHECK_HAS(cf_last_error(), "the samples are (2) (2 numbers) but the model's input 'x' takes (B, 3)");
    cf_model_free(m);
    /* labels beyond the model's classes */
    m = cf_model_parse("model = Chain(Input(2), Affine(2), softmax)\n", "two.flux");
    CHECK(cf_trainer_new(m, d, &o) == NULL);
    CHECK_HAS(cf_last_error(), "label 2 of sample 2 is out of range for the model's 2 classes");
    cf_model_free(m);
    cf_dataset_free(d);
}

/* ---- seeds, ties and short batches --------------------------------------------- */

/* All parameters of a model, copied (malloc'd); *count receives how many floats. */
/* The parameters after one epoch of plain SGD, batches of 16 over 96 samples, from
 * the same initial parameters (model seed 11) whatever the shuffling seed. */
static float *train_with_seed(uint64_t seed, size_t *count)
{
    cf_set_threads(1);
    cf_dataset *d = spirals(96, 4);
    cf_model *m = cf_model_parse(classifier, "spirals.flux");
    cf_model_set_seed(m, 11);
    cf_fit_opts o = opts(1);
    o.batch = 16;
    o.optim = cf_optim_defaults("sgd");
    o.seed = seed;
    cf_trainer *t = cf_trainer_new(m, d, &o);
    float *p = NULL;
    if (t && cf_fit(t, d, NULL) == 0) p = params_copy(m, count);
    else fprintf(stderr, "%s\n", cf_last_error());
    cf_trainer_free(t);
    cf_model_free(m);
    cf_dataset_free(d);
    cf_set_threads(0);
    return p;
}

/* The seed of cf_fit_opts orders the samples: another seed, other batches, other
 * parameters; the same seed, the same bits. (With no validation split and the
 * model's own seed fixed, the shuffle is the only thing this seed drives.) */
TEST(shuffling_follows_the_seed)
{
    size_t n1 = 0, n1b = 0, n2 = 0;
    float *a = train_with_seed(1, &n1), *b = train_with_seed(1, &n1b), *c = train_with_seed(2, &n2);
    CHECK(a && b && c && n1 == n1b && n1 == n2 && n1 > 0);
    if (a && b && c) {
        CHECK(memcmp(a, b, n1 * sizeof *a) == 0);
        CHECK(memcmp(a, c, n1 * sizeof *a) != 0);
    }
    free(a);
    free(b);
    free(c);
}

static int keep_stats(const cf_epoch_stats *s, void *user)
{
    *(cf_epoch_stats *)user = *s;
    return 0;
}

/* Accuracy takes the first of equal scores, as PyTorch's argmax does. A model that
 * scores every class the same (zero weights: softmax exactly 1/3 each) is right on
 * the samples of class 0 only; with classes 1 and 2 tied above class 0, on those of
 * class 1 only. n = 10 in batches of 4, so a short last batch counts too. */
TEST(accuracy_ties_go_to_the_first_class)
{
    static const float labels[10] = {1, 2, 0, 2, 1, 2, 0, 2, 0, 2};   /* classes 0, 1, 2: 3, 2, 5 */
    float x[20];
    for (int i = 0; i < 20; i++) x[i] = (float)(i % 7) * 0.3f - 1;
    cf_dataset *d = cf_dataset_from_arrays(x, CF_SHAPE(2), labels, 1, 10);
    const char *src = "net Flat(in, out) {\n"
                      "  W = param(in, out, init = zeros)\n"
                      "  b = param(1, out, init = zeros)\n"
                      "  x -> x * W + b\n"
                      "}\n"
                      "model = Chain(Input(2), Flat(3), softmax)\n";

    /* all three tied */
    cf_model *m = cf_model_parse(src, "flat.flux");
    double loss = 0, acc = 0;
    CHECK(m && cf_evaluate(m, d, 4, &loss, &acc) == 0);
    CHECK_NEAR(acc, 0.3, 1e-12);
    CHECK_NEAR(loss, log(3.0), 1e-6);
    /* training sees the same: one batch of all 10, scored before its update */
    cf_fit_opts o = opts(1);
    o.batch = 10;
    o.optim = cf_optim_defaults("sgd");
    cf_epoch_stats st = {0};
    o.on_epoch = keep_stats;
    o.user = &st;
    cf_trainer *t = cf_trainer_new(m, d, &o);
    CHECK(t && cf_fit(t, d, NULL) == 0);
    CHECK_NEAR(st.train_accuracy, 0.3, 1e-12);
    cf_trainer_free(t);
    cf_model_free(m);

    /* classes 1 and 2 tied, class 0 below them */
    m = cf_model_parse(src, "flat.flux");
    CHECK(m && cf_model_add_loss(m, CF_LOSS_XENT) == 0 && cf_model_init_params(m) == 0);
    float *b = m ? cf_model_param_data(m, cf_model_param_index(m, "1.b")) : NULL;
    CHECK(b != NULL);
    if (b) {
        b[0] = -1;
        b[1] = b[2] = 0.5f;
    }
    CHECK(m && cf_evaluate(m, d, 4, &loss, &acc) == 0);
    CHECK_NEAR(acc, 0.2, 1e-12);
    /* and the loss is the mean over samples: -log p[label] */
    double z = exp(-1.0) + 2 * exp(0.5), want = 0;
    for (int i = 0; i < 10; i++) want += -log(exp(labels[i] == 0 ? -1.0 : 0.5) / z) / 10;
    CHECK_NEAR(loss, want, 1e-5);
    cf_model_free(m);
    cf_dataset_free(d);
}

/* cf_evaluate's loss is the mean over samples, the short last batch weighted by its
 * size: n = 4 * 2 + 3, and a model that predicts 0, so that sample i's squared error
 * is y_i^2, growing with i (the last batch holds the largest). */
TEST(evaluate_means_over_samples_not_batches)
{
    float x[11], y[11];
    double want = 0;
    for (int i = 0; i < 11; i++) {
        x[i] = (float)i;
        y[i] = 0.5f * (float)i + 0.25f;   /* not whole numbers: a regression */
        want += (double)y[i] * y[i] / 11;
    }
    cf_dataset *d = cf_dataset_from_arrays(x, CF_SHAPE(1), y, 1, 11);
    cf_model *m = cf_model_parse("net Zero(in, out) {\n"
                                 "  W = param(in, out, init = zeros)\n"
                                 "  x -> x * W\n"
                                 "}\n"
                                 "model = Chain(Input(1), Zero(1))\n",
                                 "zero.flux");
    CHECK(m != NULL);
    double loss = 0, acc = 0;
    for (int batch = 1; batch <= 12 && m; batch++) {   /* 4: batches 4, 4 and 3 */
        CHECK(cf_evaluate(m, d, batch, &loss, &acc) == 0);
        CHECK_NEAR(loss, want, want * 1e-6);
        CHECK(isnan(acc));
    }
    CHECK(m && cf_model_has_loss(m) == CF_LOSS_MSE);
    cf_model_free(m);
    cf_dataset_free(d);
}

static int stop_at(const cf_epoch_stats *s, void *user) { return s->epoch == *(int *)user; }

/* A run of 4 epochs from scratch, or resumed from `from`, that stops after epoch
 * `stop` (as if interrupted); saves to `to`. */
static int run(int stop, const char *from, const char *to, int threads)
{
    int epochs = 4;
    cf_set_threads(threads);
    cf_dataset *d = spirals(200, 9);
    cf_model *m = cf_model_parse(classifier, "spirals.flux");
    cf_model_set_seed(m, 11);
    cf_fit_opts o = opts(epochs);
    o.schedule = "cosine+warmup:5";
    o.val_fraction = 0.1;
    o.on_epoch = stop_at;
    o.user = &stop;
    cf_trainer *t = cf_trainer_new(m, d, &o);
    int rc = !t || (from && cf_trainer_load(t, from)) || cf_fit(t, d, NULL) || cf_trainer_save(t, to);
    if (rc) fprintf(stderr, "%s\n", cf_last_error());
    cf_trainer_free(t);
    cf_model_free(m);
    cf_dataset_free(d);
    cf_set_threads(0);
    return rc ? -1 : 0;
}

static int same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    while (same) {
        int ca = fgetc(fa), cb = fgetc(fb);
        if (ca != cb) same = 0;
        if (ca == EOF || cb == EOF) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

TEST(checkpoints_repeat_and_resume_exactly)
{
    CHECK(run(4, NULL, tmp("a.ckpt"), 2) == 0);
    CHECK(run(4, NULL, tmp("b.ckpt"), 2) == 0);
    CHECK(same_file(tmp("a.ckpt"), tmp("b.ckpt")));
    /* 2 epochs, then resume to 4 */
    CHECK(run(2, NULL, tmp("half.ckpt"), 2) == 0);
    CHECK(!same_file(tmp("a.ckpt"), tmp("half.ckpt")));
    CHECK(run(4, tmp("half.ckpt"), tmp("c.ckpt"), 2) == 0);
    CHECK(same_file(tmp("a.ckpt"), tmp("c.ckpt")));
}

TEST(bad_checkpoints_are_refused)
{
    CHECK(run(1, NULL, tmp("ok.ckpt"), 1) == 0);
    cf_dataset *d = spirals(30, 1);
    cf_fit_opts o = opts(2);
    cf_model *m = cf_model_parse(classifier, "spirals.flux");
    cf_trainer *t = cf_trainer_new(m, d, &o);
    /* truncated */
    FILE *f = fopen(tmp("ok.ckpt"), "rb"), *g = fopen(tmp("cut.ckpt"), "wb");
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fwrite(buf, 1, n / 2, g);
    fclose(f);
    fclose(g);
    CHECK(cf_trainer_load(t, tmp("cut.ckpt")) != 0);
    CHECK_HAS(cf_last_error(), "cut.ckpt");
    /* corrupt header */
    g = fopen(tmp("junk.ckpt"), "wb");
    fwrite("\x10\0\0\0\0\0\0\0{not json at all", 1, 24, g);
    fclose(g);
    CHECK(cf_trainer_load(t, tmp("junk.ckpt")) != 0);
    CHECK_HAS(cf_last_error(), "junk.ckpt");
    /* another model's checkpoint */
    cf_model *other = cf_model_parse("model = Chain(Input(2), Affine(7), tanh, Affine(3), softmax)\n", "o.flux");
    cf_trainer *to = cf_trainer_new(other, d, &o);
    CHECK(cf_trainer_load(to, tmp("ok.ckpt")) != 0);
    CHECK_HAS(cf_last_error(), "ok.ckpt: parameter '1.W' is (2, 7) in the model but (2, 32) in the file");
    /* another optimizer */
    cf_fit_opts o2 = o;
    o2.optim = cf_optim_defaults("sgd");
    cf_trainer *t2 = cf_trainer_new(m, d, &o2);
    CHECK(cf_trainer_load(t2, tmp("ok.ckpt")) != 0);
    CHECK_HAS(cf_last_error(), "the checkpoint's optimizer is adam but this run uses sgd");
    /* a plain parameter file is not a checkpoint */
    CHECK(cf_model_save_params(m, tmp("params.st")) == 0);
    CHECK(cf_trainer_load(t, tmp("params.st")) != 0);
    CHECK_HAS(cf_last_error(), "not a cflux checkpoint");
    /* but a checkpoint serves as parameters */
    CHECK(cf_model_load_params(m, tmp("ok.ckpt")) == 0);
    cf_trainer_free(t);
    cf_trainer_free(t2);
    cf_trainer_free(to);
    cf_model_free(m);
    cf_model_free(other);
    cf_dataset_free(d);
}

int main(void)
{
    if (tmpdir_make("train")) return 1;
    RUN(fit_learns_and_evaluates);
    RUN(regression_uses_mean_squared_error);
    RUN(classifier_must_end_with_softmax);
    RUN(data_that_does_not_fit_is_refused);
    RUN(shuffling_follows_the_seed);
    RUN(accuracy_ties_go_to_the_first_class);
    RUN(evaluate_means_over_samples_not_batches);
    RUN(checkpoints_repeat_and_resume_exactly);
    RUN(bad_checkpoints_are_refused);
    tmpdir_remove();
    return test_summary("train");
}
