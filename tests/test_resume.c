/* test_resume.c - what a run trusts: the schedule across a resume with other
 * settings, stopping mid-epoch and resuming exactly, divergence, non-finite and
 * hostile checkpoints, the model a checkpoint belongs to, input standardisation,
 * data that cannot teach a classifier. */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "cflux.h"
#include "core/safetensors.h"
#include "spirals.h"
#include "test.h"
#include "tmpdir.h"

/* What a run told on_epoch and on_warning. */
typedef struct seen {
    double lr[16], loss[16];
    int epochs;
    char warnings[4096];
    int stop_epoch;
    long stop_step;
    cf_trainer *t;
} seen;

static int keep_epoch(const cf_epoch_stats *s, void *user)
{
    seen *v = user;
    if (s->epoch < 16) v->lr[s->epoch] = s->lr, v->loss[s->epoch] = s->train_loss;
    v->epochs++;
    return 0;
}

static void keep_warning(const char *msg, void *user)
{
    seen *v = user;
    size_t n = strlen(v->warnings);
    snprintf(v->warnings + n, sizeof v->warnings - n, "%s\n", msg);
}

static void stop_in_batch(int epoch, long step, long steps, double loss, double acc, double sps, void *user)
{
    (void)steps, (void)loss, (void)acc, (void)sps;
    seen *v = user;
    if (epoch == v->stop_epoch && step == v->stop_step) cf_trainer_stop(v->t);
}

static cf_fit_opts watched(int epochs, seen *v)
{
    cf_fit_opts o = opts(epochs);
    o.on_epoch = keep_epoch;
    o.on_warning = keep_warning;
    o.user = v;
    return o;
}

/* Train the model of `src` from `from` (or scratch) with o; save to `to` when given.
 * 0 or -1. */
static int train_model(const char *src, cf_fit_opts o, const cf_dataset *d, const char *from, const char *to,
                       cf_model **keep)
{
    cf_model *m = cf_model_parse(src, "spirals.flux");
    cf_model_set_seed(m, 3);
    cf_trainer *t = cf_trainer_new(m, d, &o);
    if (t && o.user) ((seen *)o.user)->t = t;
    int rc = !t || (from && cf_trainer_load(t, from)) ? -1 : cf_fit(t, d, NULL);
    if (rc >= 0 && to && cf_trainer_save(t, to)) rc = -1;
    if (rc < 0) fprintf(stderr, "%s\n", cf_last_error());
    cf_trainer_free(t);
    if (keep) *keep = m;
    else cf_model_free(m);
    return rc;
}

static int train(cf_fit_opts o, const cf_dataset *d, const char *from, const char *to, cf_model **keep)
{
    return train_model(classifier, o, d, from, to, keep);
}

static double cosine(double base, long step, long total) { return base * (1 + cos(M_PI * (double)step / (double)total)) / 2; }

/* 2 epochs of cosine at batch 16, resumed to 4 epochs at batch 64: the schedule goes
 * on from the middle of the longer run (it did clamp to lr 0 for both new epochs). */
TEST(schedule_goes_on_by_the_share_of_the_run)
{
    cf_dataset *d = spirals(100, 4);
    seen a = {0}, b = {0};
    cf_fit_opts o = watched(2, &a);
    o.schedule = "cosine";
    o.batch = 16;
    CHECK(train(o, d, NULL, tmp("two.ckpt"), NULL) == 0);
    CHECK(a.epochs == 2);
    cf_fit_opts o2 = watched(4, &b);
    o2.schedule = "cosine";
    o2.batch = 64;
    CHECK(train(o2, d, tmp("two.ckpt"), NULL, NULL) == 0);
    CHECK(b.epochs == 2);
    /* 2 steps an epoch (100 = 64 + 36), 8 in all: epoch 3 ends at step 5, epoch 4 at 7 */
    CHECK_NEAR(b.lr[3], cosine(0.01, 5, 8), 1e-8);
    CHECK_NEAR(b.lr[4], cosine(0.01, 7, 8), 1e-8);
    CHECK(b.lr[4] > 0 && b.loss[3] != b.loss[4]);
    CHECK_HAS(b.warnings, "the run now has 4 epochs (the checkpoint's had 2): the schedule goes on from epoch 3 of 4");
    CHECK_HAS(b.warnings, "the batch size changes from 16 to 64");
    cf_dataset_free(d);
}

/* The short last batch is a step: 10 samples at batch 4 are 3 steps an epoch. */
TEST(cosine_counts_the_short_batch)
{
    float x[20], y[10];
    for (int i = 0; i < 10; i++) x[2 * i] = (float)i / 10, x[2 * i + 1] = 1 - (float)i / 10, y[i] = (float)(i % 3);
    cf_dataset *d = cf_dataset_from_arrays(x, CF_SHAPE(2), y, 1, 10);
    seen a = {0};
    cf_fit_opts o = watched(2, &a);
    o.schedule = "cosine";
    o.batch = 4;
    CHECK(train(o, d, NULL, NULL, NULL) == 0);
    CHECK_NEAR(a.lr[1], cosine(0.01, 2, 6), 1e-8);
    CHECK_NEAR(a.lr[2], cosine(0.01, 5, 6), 1e-8);
    cf_dataset_free(d);
}

/* Stopped in the middle of epoch 2, saved, resumed: the same bits as a run that was
 * never stopped, and the whole history. */
TEST(a_stop_mid_epoch_resumes_exactly)
{
    cf_dataset *d = spirals(200, 6);
    cf_model *ma, *mb;
    seen a = {0}, s = {0}, b = {0};
    cf_fit_opts o = watched(3, &a);
    o.schedule = "cosine+warmup:3";
    CHECK(train(o, d, NULL, NULL, &ma) == 0);
    cf_fit_opts os = watched(3, &s);
    os.schedule = o.schedule;
    os.on_batch = stop_in_batch;
    s.stop_epoch = 2;
    s.stop_step = 3;
    CHECK(train(os, d, NULL, tmp("mid.ckpt"), NULL) == CF_STOPPED);
    CHECK(s.epochs == 1);
    cf_fit_opts ob = watched(3, &b);
    ob.schedule = o.schedule;
    CHECK(train(ob, d, tmp("mid.ckpt"), NULL, &mb) == 0);
    size_t na, nb;
    float *pa = params_copy(ma, &na), *pb = params_copy(mb, &nb);
    CHECK(na == nb && memcmp(pa, pb, na * sizeof *pa) == 0);
    CHECK(b.lr[3] == a.lr[3] && b.loss[3] == a.loss[3]);
    CHECK(b.loss[2] == a.loss[2]);   /* the resumed epoch reports the whole epoch */
    free(pa);
    free(pb);
    cf_model_free(ma);
    cf_model_free(mb);
    cf_dataset_free(d);
}

/* The same with state and randomness: batch normalisation's running statistics and
 * dropout's masks go on across the stop as if there had been none (the masks follow
 * the run's step, not the executor's), and the short last batch runs on its own
 * executor. Evaluation reads the running statistics and leaves them alone. */
TEST(state_and_dropout_resume_exactly)
{
    static const char *const bn =
        "model = Chain(Input(2), Affine(16), BatchNorm(), tanh, Dropout(0.2), Affine(3), softmax)\n";
    cf_dataset *d = spirals(210, 6);   /* 7 steps an epoch, the last of 18 */
    cf_model *ma, *mb;
    seen a = {0}, s = {0}, b = {0};
    CHECK(train_model(bn, watched(3, &a), d, NULL, NULL, &ma) == 0);
    cf_fit_opts os = watched(3, &s);
    os.on_batch = stop_in_batch;
    s.stop_epoch = 2;
    s.stop_step = 3;
    CHECK(train_model(bn, os, d, NULL, tmp("bn.ckpt"), NULL) == CF_STOPPED);
    CHECK(train_model(bn, watched(3, &b), d, tmp("bn.ckpt"), NULL, &mb) == 0);
    size_t na, nb, sa, sb;
    float *pa = params_copy(ma, &na), *pb = params_copy(mb, &nb);
    float *ra = states_copy(ma, &sa), *rb = states_copy(mb, &sb);
    CHECK(na == nb && memcmp(pa, pb, na * sizeof *pa) == 0);
    CHECK(sa == 32 && sa == sb && memcmp(ra, rb, sa * sizeof *ra) == 0);
    CHECK(b.loss[3] == a.loss[3]);
    /* the running statistics moved away from their start (mean 0, var 1) */
    int moved = 0;
    for (size_t i = 0; i < 16; i++) moved += ra[i] != 0 && ra[16 + i] != 1;
    CHECK(moved == 16);

    /* evaluation uses them and changes nothing: twice the same loss, same state */
    double l1, l2, l3, acc;
    CHECK(cf_evaluate(ma, d, 50, &l1, &acc) == 0 && cf_evaluate(ma, d, 50, &l2, &acc) == 0);
    CHECK(l1 == l2);
    float *rc = states_copy(ma, &sa);
    CHECK(memcmp(ra, rc, sa * sizeof *ra) == 0);
    free(rc);

    /* a checkpoint round trip keeps them: loaded into a fresh model, the same bits */
    CHECK(cf_model_save_params(ma, tmp("bn.params")) == 0);
    cf_model *mc = cf_model_parse(bn, "spirals.flux");
    CHECK(mc && cf_model_load_params(mc, tmp("bn.params")) == 0);
    rc = states_copy(mc, &sa);
    CHECK(memcmp(ra, rc, sa * sizeof *ra) == 0);
    CHECK(cf_evaluate(mc, d, 50, &l3, &acc) == 0 && l3 == l1);
    free(rc);
    cf_model_free(mc);
    free(pa);
    free(pb);
    free(ra);
    free(rb);
    cf_model_free(ma);
    cf_model_free(mb);
    cf_dataset_free(d);
}

/* A stateful recurrent model on text: the state it carries from batch to batch is
 * saved with the run, so a run stopped mid-epoch and resumed ends as one never
 * stopped. */
TEST(carried_state_resumes_exactly)
{
    static const char *const rnn =
        "model = unroll(Chain(Input(), Embedding(28, 6), GRU(8), Affine(28), softmax), 6)\n";
    FILE *f = fopen(tmp("fox.txt"), "w");
    for (int i = 0; i < 12; i++) fputs("the quick brown fox jumps over the lazy dog\n", f);
    fclose(f);
    cf_dataset *d, *te;
    CHECK(cf_dataset_load_text(tmp("fox.txt"), 6, 0, &d, &te) == 0);
    if (!d) return;
    cf_model *ma, *mb;
    seen a = {0}, s = {0}, b = {0};
    cf_fit_opts o = watched(3, &a);
    o.batch = 8;   /* 88 sequences: 8 streams of 11 */
    CHECK(train_model(rnn, o, d, NULL, NULL, &ma) == 0);
    cf_fit_opts os = watched(3, &s);
    os.batch = 8;
    os.on_batch = stop_in_batch;
    s.stop_epoch = 2;
    s.stop_step = 5;
    CHECK(train_model(rnn, os, d, NULL, tmp("rnn.ckpt"), NULL) == CF_STOPPED);
    cf_fit_opts ob = watched(3, &b);
    ob.batch = 8;
    CHECK(train_model(rnn, ob, d, tmp("rnn.ckpt"), NULL, &mb) == 0);
    size_t na, nb;
    float *pa = params_copy(ma, &na), *pb = params_copy(mb, &nb);
    CHECK(na == nb && memcmp(pa, pb, na * sizeof *pa) == 0);
    CHECK(b.loss[3] == a.loss[3] && b.loss[2] == a.loss[2]);
    CHECK(strstr(b.warnings, "carried state") == NULL);
    free(pa);
    free(pb);
    cf_model_free(ma);
    cf_model_free(mb);
    cf_dataset_free(d);
    cf_dataset_free(te);
}

TEST(stop_position_and_history_are_kept)
{
    cf_dataset *d = spirals(200, 6);
    seen s = {0};
    cf_fit_opts os = watched(3, &s);
    os.on_batch = stop_in_batch;
    s.stop_epoch = 2;
    s.stop_step = 3;
    CHECK(train(os, d, NULL, tmp("mid2.ckpt"), NULL) == CF_STOPPED);
    cf_model *m = cf_model_parse(classifier, "spirals.flux");
    cf_fit_opts o = opts(3);
    cf_trainer *t = cf_trainer_new(m, d, &o);
    CHECK(t && cf_trainer_load(t, tmp("mid2.ckpt")) == 0);
    CHECK(cf_trainer_epoch(t) == 1 && cf_trainer_epoch_samples(t) == 3 * 32);
    const cf_epoch_stats *h;
    CHECK(cf_trainer_history(t, &h) == 1 && h[0].epoch == 1);
    CHECK_NEAR(h[0].train_loss, s.loss[1], 1e-7 * s.loss[1]);
    cf_trainer_free(t);
    cf_model_free(m);
    cf_dataset_free(d);
}

/* Adam at lr 10^6 explodes: stopped with a message, before the update that would
 * leave the parameters unusable. */
TEST(divergence_is_stopped)
{
    cf_dataset *d = spirals(300, 2);
    cf_model *m;
    seen v = {0};
    cf_fit_opts o = watched(5, &v);
    o.optim.lr = 1e6f;
    CHECK(train(o, d, NULL, NULL, &m) == -1);
    CHECK_HAS(cf_last_error(), "training diverged; try a smaller learning rate");
    CHECK(v.epochs == 0);
    size_t n;
    float *p = params_copy(m, &n);
    int finite = 1;
    for (size_t i = 0; i < n; i++) finite &= isfinite(p[i]);
    CHECK(finite);
    free(p);
    cf_model_free(m);
    cf_dataset_free(d);
}

TEST(non_finite_parameters_are_refused)
{
    cf_model *m = cf_model_parse(classifier, "spirals.flux");
    CHECK(cf_model_init_params(m) == 0);
    cf_model_param_data(m, 2)[5] = NAN;
    CHECK(cf_model_save_params(m, tmp("nan.st")) == 0);
    cf_model *n = cf_model_parse(classifier, "spirals.flux");
    CHECK(cf_model_load_params(n, tmp("nan.st")) == -1);
    CHECK_HAS(cf_last_error(), "nan.st: '3.W' holds nan (element 5), not a finite number");
    cf_model_param_data(m, 2)[5] = INFINITY;
    CHECK(cf_model_save_params(m, tmp("inf.st")) == 0);
    CHECK(cf_model_load_params(n, tmp("inf.st")) == -1);
    CHECK_HAS(cf_last_error(), "'3.W' holds inf (element 5)");
    cf_model_free(m);
    cf_model_free(n);
}

/* Rewrite a checkpoint with one metadata value changed (NULL: removed). */
static const char *const meta_keys[] = {
    "format", "format_version", "cflux_version", "epoch", "epoch_samples", "epoch_loss_sum", "epoch_hits", "epochs", "optimizer_steps", "seed",
    "batch", "lr", "optimizer", "optimizer_settings", "schedule", "loss", "val_fraction", "train_samples",
    "initial_loss", "graph_hash", "history", "model_file", "model_source", "label_smoothing"};
#define NKEYS ((int)(sizeof meta_keys / sizeof *meta_keys))

/* Rewrite a checkpoint with metadata `key` set to value (NULL: removed) and element k
 * of tensor `name` set to v (key or name NULL: nothing of that kind changes); -1 when
 * the tensor named has no element k. */
static int rewrite_ex(const char *from, const char *to, const char *key, const char *value, const char *name,
                      size_t k, float v)
{
    cf_st_file *f = cf_st_read(from);
    if (!f) return -1;
    int n = cf_st_count(f), nm = 0, rc = -1;
    cf_st_tensor *t = malloc((size_t)n * sizeof *t);
    float *data = NULL;
    for (int i = 0; i < n; i++) {
        t[i] = *cf_st_get(f, i);
        if (!name || strcmp(t[i].name, name) || k >= t[i].count) continue;
        data = malloc(t[i].count * sizeof *data);
        memcpy(data, t[i].data, t[i].count * sizeof *data);
        data[k] = v;
        t[i].data = data;
    }
    const char *keys[NKEYS], *vals[NKEYS];
    for (int i = 0; i < NKEYS; i++) {
        const char *x = key && !strcmp(meta_keys[i], key) ? value : cf_st_meta(f, meta_keys[i]);
        if (x) keys[nm] = meta_keys[i], vals[nm++] = x;
    }
    if (!name || data) rc = cf_st_write(to, n, t, nm, keys, vals);
    free(data);
    free(t);
    cf_st_free(f);
    return rc;
}

static int rewrite(const char *from, const char *to, const char *key, const char *value)
{
    return rewrite_ex(from, to, key, value, NULL, 0, 0);
}

/* Metadata that overflows, is negative, is not a number, or disagrees with itself is
 * refused, and nothing changes. */
TEST(hostile_metadata_is_refused)
{
    cf_dataset *d = spirals(120, 3);
    cf_fit_opts o = opts(3);
    CHECK(train(o, d, NULL, tmp("ok.ckpt"), NULL) == 0);
    static const struct { const char *key, *value, *want; } cases[] = {
        {"epoch", "2147483647", "the checkpoint's 'epoch' is \"2147483647\", not a whole number from 0 to 1000000"},
        {"epoch", "-5", "'epoch' is \"-5\", not a whole number from 0 to"},
        {"epoch", "abc", "'epoch' is \"abc\", not a whole number"},
        {"epoch", " 3", "'epoch' is \" 3\", not a whole number"},
        {"epoch", NULL, "the checkpoint has no 'epoch'"},
        {"epoch", "4", "the checkpoint says 4 epochs are done of the 3 planned"},
        {"optimizer_steps", "2", "the checkpoint says 3 epochs are done in 2 optimizer steps; that takes at least 3"},
        {"optimizer_steps", "1e3", "'optimizer_steps' is \"1e3\", not a whole number"},
        {"format_version", "99", "written by checkpoint format 99; this build reads 1 to 2"},
        {"format_version", "2x", "'format_version' is \"2x\", not a whole number"},
        {"epoch_samples", "120", "'epoch_samples' is \"120\", not a whole number from 0 to 119"},
        {"seed", "-1", "'seed' is \"-1\", not a whole number from 0 to 2^64-1"},
        {"batch", "0", "'batch' is \"0\", not a whole number from 1 to"},
        {"lr", "nan", "'lr' is \"nan\", not a number from"},
        {"graph_hash", "xyz", "'graph_hash' is \"xyz\", not 16 hexadecimal digits"},
        {"history", "[[1, 2]]", "the checkpoint's history is malformed (entry 1)"},
        {"history", "[[2, 3, 1, 1, null, null, null, null, 0.01]]", "history is malformed (entry 1)"},
        {"history", "{", "history is malformed"},
    };
    cf_model *m = cf_model_parse(classifier, "spirals.flux");
    cf_trainer *t = cf_trainer_new(m, d, &o);
    size_t n0;
    float *before = params_copy(m, &n0);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        CHECK(rewrite(tmp("ok.ckpt"), tmp("bad.ckpt"), cases[i].key, cases[i].value) == 0);
        int rc = cf_trainer_load(t, tmp("bad.ckpt"));
        CHECK(rc == -1);
        CHECK_HAS(cf_last_error(), cases[i].want);
        CHECK(cf_trainer_epoch(t) == 0);
    }
    size_t n1;
    float *after = params_copy(m, &n1);
    CHECK(n0 == n1 && memcmp(before, after, n0 * sizeof *before) == 0);
    CHECK(rewrite(tmp("ok.ckpt"), tmp("same.ckpt"), "nothing", NULL) == 0);   /* the rewriting itself is sound */
    CHECK(cf_trainer_load(t, tmp("same.ckpt")) == 0 && cf_trainer_epoch(t) == 3);
    free(before);
    free(after);
    cf_trainer_free(t);
    cf_model_free(m);
    cf_dataset_free(d);
}

/* Rewrite a checkpoint with element k of tensor `name` set to v (its metadata kept). */
static int rewrite_element(const char *from, const char *to, const char *name, size_t k, float v)
{
    return rewrite_ex(from, to, NULL, NULL, name, k, v);
}

/* Adam's second moment below 0 (or not finite) is refused at load, naming the file and
 * the tensor (it once loaded, and the first step's NaN was blamed on the learning rate);
 * its first moment may be negative. */
TEST(damaged_optimizer_state_is_refused)
{
    cf_dataset *d = spirals(120, 3);
    cf_fit_opts o = opts(1);
    CHECK(train(o, d, NULL, tmp("adam.ckpt"), NULL) == 0);
    cf_model *m = cf_model_parse(classifier, "spirals.flux");
    o.epochs = 2;
    cf_trainer *t = cf_trainer_new(m, d, &o);
    CHECK(rewrite_element(tmp("adam.ckpt"), tmp("negv.ckpt"), "optim.adam.v.3.W", 7, -0.5f) == 0);
    CHECK(t && cf_trainer_load(t, tmp("negv.ckpt")) == -1);
    CHECK_HAS(cf_last_error(), "negv.ckpt: the optimizer state 'optim.adam.v.3.W' holds -0.5 (element 7), but "
                               "Adam's second moment is a mean of squares, never below 0");
    CHECK(cf_trainer_epoch(t) == 0);
    CHECK(rewrite_element(tmp("adam.ckpt"), tmp("infv.ckpt"), "optim.adam.v.1.b", 0, INFINITY) == 0);
    CHECK(t && cf_trainer_load(t, tmp("infv.ckpt")) == -1);
    CHECK_HAS(cf_last_error(), "infv.ckpt: the optimizer state 'optim.adam.v.1.b' holds inf (element 0), not a finite");
    CHECK(rewrite_element(tmp("adam.ckpt"), tmp("negm.ckpt"), "optim.adam.m.3.W", 7, -0.5f) == 0);
    CHECK(t && cf_trainer_load(t, tmp("negm.ckpt")) == 0 && cf_trainer_epoch(t) == 1);
    CHECK(cf_fit(t, d, NULL) == 0);
    cf_trainer_free(t);
    cf_model_free(m);
    cf_dataset_free(d);
}

/* Another model with the same parameters (relu for tanh) is not the checkpoint's. */
TEST(a_checkpoint_belongs_to_its_model)
{
    cf_dataset *d = spirals(60, 3);
    cf_fit_opts o = opts(1);
    CHECK(train(o, d, NULL, tmp("m.ckpt"), NULL) == 0);
    cf_model *m = cf_model_parse("model = Chain(Input(2), Affine(32), relu, Affine(32), tanh, Affine(3), softmax)\n",
                                 "relu.flux");
    cf_trainer *t = cf_trainer_new(m, d, &o);
    CHECK(t && cf_trainer_load(t, tmp("m.ckpt")) == -1);
    CHECK_HAS(cf_last_error(), "m.ckpt: the checkpoint was trained with another model (spirals.flux), whose graph "
                               "differs from relu.flux's");
    /* as weights for a new run, it serves */
    CHECK(cf_model_load_params(m, tmp("m.ckpt")) == 0);
    /* the same model from another file (comments, layout) is the same model */
    cf_model *same = cf_model_parse("# spirals\nmodel = Chain(Input(2),\n  Affine(32), tanh,\n  Affine(32), tanh,\n"
                                    "  Affine(3), softmax)\n", "other.flux");
    cf_trainer *ts = cf_trainer_new(same, d, &o);
    CHECK(ts && cf_trainer_load(ts, tmp("m.ckpt")) == 0);
    cf_trainer_free(ts);
    cf_model_free(same);
    cf_trainer_free(t);
    cf_model_free(m);
    cf_dataset_free(d);
}

TEST(changed_settings_are_told)
{
    cf_dataset *d = spirals(90, 3);
    seen a = {0};
    cf_fit_opts o = watched(2, &a);
    o.schedule = "cosine";
    o.val_fraction = 0.1;
    CHECK(train(o, d, NULL, tmp("s.ckpt"), NULL) == 0);
    CHECK(a.warnings[0] == 0);
    seen b = {0};
    cf_fit_opts o2 = watched(3, &b);
    o2.seed = 9;
    o2.optim.lr = 0.02f;
    o2.schedule = "const";
    o2.val_fraction = 0.2;
    cf_dataset *more = spirals(99, 3);
    CHECK(train(o2, more, tmp("s.ckpt"), NULL, NULL) == 0);
    CHECK_HAS(b.warnings, "s.ckpt: the checkpoint's run used seed 5 and this one 9");
    CHECK_HAS(b.warnings, "the base learning rate changes from 0.01 to 0.02");
    CHECK_HAS(b.warnings, "the schedule changes from 'cosine' to 'const'");
    CHECK_HAS(b.warnings, "the validation fraction changes from 0.1 to 0.2");
    CHECK_HAS(b.warnings, "the training data has 99 samples, the checkpoint's run had 90");
    cf_dataset_free(more);
    cf_dataset_free(d);
}

/* Label smoothing is part of what a run trains: the checkpoint keeps it, a resume
 * with another is refused (before the graph's hash, which it changes), and the train
 * loss it gives is higher than without. A regression and a value out of [0, 1) are
 * refused. */
TEST(label_smoothing_is_part_of_the_run)
{
    cf_dataset *d = spirals(90, 3);
    seen plain = {0}, smooth = {0};
    cf_fit_opts o = watched(1, &plain);
    CHECK(train(o, d, NULL, tmp("p.ckpt"), NULL) == 0);
    o = watched(1, &smooth);
    o.label_smoothing = 0.2;
    CHECK(train(o, d, NULL, tmp("ls.ckpt"), NULL) == 0);
    CHECK(smooth.loss[1] > plain.loss[1]);
    o.epochs = 2;
    CHECK(train(o, d, tmp("ls.ckpt"), NULL, NULL) == 0);
    o.label_smoothing = 0.1;
    CHECK(train(o, d, tmp("ls.ckpt"), NULL, NULL) == -1);
    CHECK_HAS(cf_last_error(), "ls.ckpt: the checkpoint was trained with label smoothing 0.2 but this run uses 0.1");
    CHECK(train(o, d, tmp("p.ckpt"), NULL, NULL) == -1);
    CHECK_HAS(cf_last_error(), "p.ckpt: the checkpoint was trained with label smoothing 0 but this run uses 0.1");
    CHECK(rewrite(tmp("ls.ckpt"), tmp("bad.ckpt"), "label_smoothing", "1.5") == 0);
    o.label_smoothing = 0.2;
    CHECK(train(o, d, tmp("bad.ckpt"), NULL, NULL) == -1);
    CHECK_HAS(cf_last_error(), "bad.ckpt: the checkpoint's 'label_smoothing' is \"1.5\", not a number from 0 to 0.999999");
    o.label_smoothing = 1;
    CHECK(train(o, d, NULL, NULL, NULL) == -1);
    CHECK_HAS(cf_last_error(), "the label smoothing must be in [0, 1), not 1");
    o.label_smoothing = 0.1;
    cf_model *m = cf_model_parse("model = Chain(Input(2), Affine(8), relu, Affine(1))\n", "price.flux");
    CHECK(cf_trainer_new(m, d, &o) == NULL);
    CHECK_HAS(cf_last_error(), "label smoothing is for cross-entropy, and this model trains with mean squared error");
    cf_model_free(m);
    cf_dataset_free(d);
}

/* Batches an epoch, as on_batch saw them. */
typedef struct counted {
    seen v;
    int batches[8];
    long steps;
} counted;

static void count_batch(int epoch, long step, long steps, double loss, double acc, double sps, void *user)
{
    counted *c = user;
    if (epoch < 8) c->batches[epoch]++;
    c->steps = steps;
    stop_in_batch(epoch, step, steps, loss, acc, sps, &c->v);
}

static int count_epoch(const cf_epoch_stats *s, void *user) { return keep_epoch(s, &((counted *)user)->v); }

static cf_fit_opts limited(int epochs, long limit, counted *c)
{
    cf_fit_opts o = opts(epochs);
    o.batch = 16;
    o.limit_batches = limit;
    o.schedule = "cosine";
    o.on_batch = count_batch;
    o.on_epoch = count_epoch;
    o.on_warning = keep_warning;
    o.user = c;
    return o;
}

/* --limit-batches: 200 samples at batch 16 are 13 batches an epoch, 5 with the limit;
 * the test set is scored on its first 5 batches (80 of 150 samples), as
 * cf_evaluate_ex scores it and as cf_evaluate scores those 80 alone. A run stopped in
 * epoch 2 resumes exactly; resumed with another limit it is told. */
TEST(limit_batches)
{
    cf_dataset *d = spirals(200, 6), *test = spirals(150, 8);
    counted c = {0};
    cf_model *m = cf_model_parse(classifier, "spirals.flux");
    cf_model_set_seed(m, 3);
    cf_fit_opts o = limited(2, 5, &c);
    cf_trainer *t = cf_trainer_new(m, d, &o);
    CHECK(t && cf_fit(t, d, test) == 0);
    CHECK(c.batches[1] == 5 && c.batches[2] == 5 && c.steps == 5);
    const cf_epoch_stats *h;
    CHECK(t && cf_trainer_history(t, &h) == 2);
    double l5, a5, l80, a80, lall, aall;
    /* the 80 samples scored: spread evenly over the 150, sample p * 150 / 80 */
    float sx[160], sy[80];
    for (int p = 0; p < 80; p++) {
        int r = p * 150 / 80;
        sx[2 * p] = cf_dataset_x(test)[2 * r], sx[2 * p + 1] = cf_dataset_x(test)[2 * r + 1], sy[p] = cf_dataset_y(test)[r];
    }
    cf_dataset *first = cf_dataset_from_arrays(sx, CF_SHAPE(2), sy, 1, 80);
    CHECK(cf_evaluate_ex(m, test, 16, 5, &l5, &a5) == 0 && cf_evaluate(m, first, 16, &l80, &a80) == 0 &&
          cf_evaluate(m, test, 16, &lall, &aall) == 0);
    CHECK(t && h[1].test_loss == l5 && h[1].test_accuracy == a5);
    CHECK(l5 == l80 && a5 == a80 && l5 != lall);
    cf_metrics mt, m80;
    CHECK(cf_evaluate_metrics_ex(m, test, 16, 5, 0, &mt) == 0 && cf_evaluate_metrics(m, first, 16, 0, &m80) == 0);
    CHECK(mt.count == 80 && mt.accuracy == m80.accuracy && fabs(mt.accuracy - a5) < 1e-12);
    cf_metrics_free(&mt);
    cf_metrics_free(&m80);
    /* data in class order is scored on every class, not on its first */
    float ox[300], oy[150];
    int k = 0;
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < 150; i++)
            if ((int)cf_dataset_y(test)[i] == c)
                ox[2 * k] = cf_dataset_x(test)[2 * i], ox[2 * k + 1] = cf_dataset_x(test)[2 * i + 1], oy[k++] = (float)c;
    cf_dataset *sorted = cf_dataset_from_arrays(ox, CF_SHAPE(2), oy, 1, 150);
    CHECK(k == 150 && cf_evaluate_metrics_ex(m, sorted, 16, 2, 0, &mt) == 0 && mt.count == 32);
    CHECK(mt.classes == 3 && mt.support[0] > 5 && mt.support[1] > 5 && mt.support[2] > 5);
    cf_metrics_free(&mt);
    cf_dataset_free(sorted);
    /* a limit past the data's batches is no limit */
    CHECK(cf_evaluate_ex(m, test, 16, 10, &l80, &a80) == 0 && l80 == lall);
    CHECK(cf_evaluate_ex(m, test, 16, -1, &l80, &a80) == -1);
    cf_dataset_free(first);
    cf_trainer_free(t);
    cf_model_free(m);

    /* stopped in epoch 2 at step 3 of 5, saved, resumed: the same bits as c's run */
    counted s = {0}, b = {0};
    s.v.stop_epoch = 2;
    s.v.stop_step = 3;
    cf_model *ma, *mb;
    CHECK(train(limited(3, 5, &c), d, NULL, NULL, &ma) == 0);
    cf_fit_opts os = limited(3, 5, &s);
    CHECK(train(os, d, NULL, tmp("limit.ckpt"), NULL) == CF_STOPPED);
    CHECK(s.batches[2] == 3);
    CHECK(train(limited(3, 5, &b), d, tmp("limit.ckpt"), NULL, &mb) == 0);
    CHECK(b.batches[2] == 2 && b.batches[3] == 5 && b.v.warnings[0] == 0);
    size_t na, nb;
    float *pa = params_copy(ma, &na), *pb = params_copy(mb, &nb);
    CHECK(na == nb && memcmp(pa, pb, na * sizeof *pa) == 0);
    free(pa);
    free(pb);
    cf_model_free(ma);
    cf_model_free(mb);
    /* resumed with a limit of 2: the place (3 batches in) is past the epoch's end, so
       its last batch trains; and without a limit */
    counted b2 = {0}, b3 = {0};
    CHECK(train(limited(3, 2, &b2), d, tmp("limit.ckpt"), NULL, NULL) == 0);
    CHECK(b2.batches[2] == 1 && b2.batches[3] == 2);
    CHECK_HAS(b2.v.warnings, "limit.ckpt: the limit of batches an epoch changes from 5 to 2");
    CHECK(train(limited(3, 0, &b3), d, tmp("limit.ckpt"), NULL, NULL) == 0);
    CHECK(b3.batches[2] == 10 && b3.batches[3] == 13);
    CHECK_HAS(b3.v.warnings, "the limit of batches an epoch changes from 5 to none");
    cf_dataset_free(d);
    cf_dataset_free(test);
}

/* Features far from 0 and 1: standardised with the training split's statistics,
 * which the checkpoint carries to a fresh model. */
TEST(inputs_are_standardised)
{
    cf_dataset *s = spirals(300, 8);
    float *x = malloc(600 * sizeof *x);
    memcpy(x, cf_dataset_x(s), 600 * sizeof *x);
    for (int i = 0; i < 300; i++) x[2 * i] = 1000 + 50 * x[2 * i], x[2 * i + 1] = -20 + 0.01f * x[2 * i + 1];
    cf_dataset *d = cf_dataset_from_arrays(x, CF_SHAPE(2), cf_dataset_y(s), 1, 300);
    double mean0 = 0;
    for (int i = 0; i < 300; i++) mean0 += x[2 * i];
    mean0 /= 300;
    cf_fit_opts o = opts(30);
    o.normalize = 1;
    cf_model *m;
    CHECK(train(o, d, NULL, tmp("n.ckpt"), &m) == 0);
    const float *mean, *std;
    CHECK(cf_model_input_norm(m, &mean, &std) == 2);
    CHECK_NEAR(mean[0], mean0, 1e-2);
    CHECK(std[1] > 0.001f && std[1] < 0.01f);
    double loss, acc;
    CHECK(cf_evaluate(m, d, 64, &loss, &acc) == 0);
    CHECK(acc > 0.8);
    cf_model *fresh = cf_model_parse(classifier, "spirals.flux");
    CHECK(cf_model_load_params(fresh, tmp("n.ckpt")) == 0);
    CHECK(cf_model_input_norm(fresh, NULL, NULL) == 2);
    float p1[300 * 3], p2[300 * 3];
    CHECK(cf_predict(m, d, 64, p1) == 0 && cf_predict(fresh, d, 64, p2) == 0);
    CHECK(memcmp(p1, p2, sizeof p1) == 0);
    double l2, a2;
    CHECK(cf_evaluate(fresh, d, 64, &l2, &a2) == 0 && a2 == acc);
    /* without standardisation the same run learns little */
    o.normalize = 0;
    cf_model *raw;
    CHECK(train(o, d, NULL, NULL, &raw) == 0);
    CHECK(cf_evaluate(raw, d, 64, &loss, &acc) == 0 && acc < a2);
    cf_model_free(raw);
    cf_model_free(fresh);
    cf_model_free(m);
    cf_dataset_free(d);
    cf_dataset_free(s);
    free(x);
}

/* Labels that are all one class teach nothing; whole-number targets on a model
 * without softmax are regression. */
TEST(data_that_cannot_teach_is_refused)
{
    float x[40], y[20];
    for (int i = 0; i < 20; i++) x[2 * i] = (float)i, x[2 * i + 1] = 1, y[i] = 2;
    cf_dataset *d = cf_dataset_from_arrays(x, CF_SHAPE(2), y, 1, 20);
    cf_fit_opts o = opts(1);
    CHECK(train(o, d, NULL, NULL, NULL) == -1);
    CHECK_HAS(cf_last_error(), "arrays: every label is 2: there is nothing to learn");
    for (int i = 0; i < 20; i++) y[i] = 100000 + 1000 * (float)i;   /* prices */
    cf_dataset *p = cf_dataset_from_arrays(x, CF_SHAPE(2), y, 1, 20);
    cf_model *m = cf_model_parse("model = Chain(Input(2), Affine(8), relu, Affine(1))\n", "price.flux");
    cf_trainer *t = cf_trainer_new(m, p, &o);
    CHECK(t && cf_trainer_loss(t) == CF_LOSS_MSE);
    cf_trainer_free(t);
    cf_model_free(m);
    m = cf_model_parse("model = Chain(Input(2), Affine(8), relu, Affine(1))\n", "price.flux");
    o.loss = CF_LOSS_XENT;
    CHECK(cf_trainer_new(m, p, &o) == NULL);
    CHECK_HAS(cf_last_error(), "classifier models must end with softmax, but this one ends with Affine at "
                               "price.flux:1:42");
    cf_model_free(m);
    cf_dataset_free(p);
    cf_dataset_free(d);
}

int main(void)
{
    if (tmpdir_make("resume")) return 1;
    RUN(schedule_goes_on_by_the_share_of_the_run);
    RUN(cosine_counts_the_short_batch);
    RUN(a_stop_mid_epoch_resumes_exactly);
    RUN(state_and_dropout_resume_exactly);
    RUN(carried_state_resumes_exactly);
    RUN(stop_position_and_history_are_kept);
    RUN(divergence_is_stopped);
    RUN(non_finite_parameters_are_refused);
    RUN(hostile_metadata_is_refused);
    RUN(damaged_optimizer_state_is_refused);
    RUN(a_checkpoint_belongs_to_its_model);
    RUN(changed_settings_are_told);
    RUN(label_smoothing_is_part_of_the_run);
    RUN(limit_batches);
    RUN(inputs_are_standardised);
    RUN(data_that_cannot_teach_is_refused);
    tmpdir_remove();
    return test_summary("resume");
}
