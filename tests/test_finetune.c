/* test_finetune.c - fine-tuning: frozen parameters (CF_GRAD_NONE) stay bitwise as they
 * were through training with momentum, weight decay and Adam, while the others move;
 * a batchnorm whose scale and shift are frozen normalises with its running statistics
 * in training and leaves them unchanged; a partial load (CF_LOAD_PARTIAL |
 * CF_LOAD_MATCHING) loads exactly what matches in name and shape and names the rest;
 * checkpoints keep the frozen set; a dataset keeps some of its classes. */
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "spirals.h"
#include "test.h"
#include "tmpdir.h"
#include "train/trainer.h"

/* spirals through a body (an affine layer and a batchnorm) and a head. */
static const char *const net = "model = Chain(Input(2), Affine(16), BatchNorm(), relu, Affine(3), softmax)\n";

static cf_model *make(const char *src, uint64_t seed)
{
    cf_model *m = cf_model_parse(src, "finetune.flux");
    if (m) cf_model_set_seed(m, seed);
    return m;
}

/* A copy of parameter (state, when state) name's values. */
static float *copy_of(cf_model *m, const char *name, int state, size_t *count)
{
    int i = state ? cf_model_state_index(m, name) : cf_model_param_index(m, name);
    cf_shape s = state ? cf_model_state_shape(m, i) : cf_model_param_shape(m, i);
    const float *p = state ? cf_model_state_data(m, i) : cf_model_param_data(m, i);
    size_t n = 1;
    for (int d = 0; d < s.rank; d++) n *= (size_t)s.d[d];
    float *c = malloc(n * sizeof *c);
    memcpy(c, p, n * sizeof *c);
    *count = n;
    return c;
}

static int same_as(cf_model *m, const char *name, int state, const float *before)
{
    size_t n;
    float *now = copy_of(m, name, state, &n);
    int same = memcmp(now, before, n * sizeof *now) == 0;
    free(now);
    return same;
}

/* Train `net` 3 epochs on spirals with the optimizer given, the parameters matching
 * the names in frozen[] frozen; check which moved. */
static void train_frozen(const char *optim, float wd, const char *const *frozen, int nfrozen, int bn_frozen)
{
    cf_model *m = make(net, 11);
    cf_dataset *d = spirals(300, 4);
    for (int i = 0; i < nfrozen; i++) CHECK(cf_model_set_grad_req(m, frozen[i], CF_GRAD_NONE) == 0);
    CHECK(cf_model_init_params(m) == 0);
    const char *names[] = {"1.W", "1.b", "2.γ", "2.β", "4.W", "4.b"};
    float *before[6];
    size_t n;
    for (int i = 0; i < 6; i++) before[i] = copy_of(m, names[i], 0, &n);
    float *mean0 = copy_of(m, "2.mean", 1, &n), *var0 = copy_of(m, "2.var", 1, &n);
    cf_fit_opts o = opts(3);
    o.optim = cf_optim_defaults(optim);
    o.optim.weight_decay = wd;
    cf_trainer *t = cf_trainer_new(m, d, &o);
    CHECK(t != NULL);
    CHECK(t && cf_fit(t, d, NULL) == 0);
    for (int i = 0; i < 6; i++) {
        int is_frozen = 0;
        for (int k = 0; k < nfrozen; k++) is_frozen |= !strcmp(frozen[k], names[i]);
        if (is_frozen != same_as(m, names[i], 0, before[i]))
            fprintf(stderr, "%s: %s %s\n", optim, names[i], is_frozen ? "moved although frozen" : "did not move");
        CHECK(is_frozen == same_as(m, names[i], 0, before[i]));
        free(before[i]);
    }
    /* the optimizer keeps no state for frozen parameters */
    for (int i = 0; t && i < cf_optim_state_count(t->opt); i++)
        for (int k = 0; k < nfrozen; k++) {
            const char *sn = cf_optim_state_name(t->opt, i), *dot = strchr(sn, '.');
            CHECK(strcmp(dot ? dot + 1 : sn, frozen[k]) != 0 && !strstr(sn, frozen[k]));
        }
    /* a frozen batchnorm's running statistics stay; a trained one's move */
    CHECK(same_as(m, "2.mean", 1, mean0) == bn_frozen);
    CHECK(same_as(m, "2.var", 1, var0) == bn_frozen);
    free(mean0);
    free(var0);
    cf_trainer_free(t);
    cf_dataset_free(d);
    cf_model_free(m);
}

TEST(frozen_parameters_stay_bitwise)
{
    const char *body[] = {"1.W", "1.b", "2.γ", "2.β"};
    train_frozen("adamw", 0.1f, body, 4, 1);
    train_frozen("momentum", 0.01f, body, 4, 1);
    train_frozen("adam", 0.01f, body, 4, 1);
    /* the affine layer alone: the batchnorm trains and updates its statistics */
    train_frozen("momentum", 0.01f, body, 2, 0);
    /* the scale frozen, the shift trained: not a frozen batchnorm */
    const char *scale[] = {"2.γ"};
    train_frozen("adamw", 0.1f, scale, 1, 0);
}

/* A trainer refuses a model with nothing to train, as PyTorch's optimizers refuse an
 * empty parameter list. */
TEST(every_parameter_frozen_is_refused)
{
    cf_dataset *d = spirals(60, 3);
    cf_model *m = make(net, 4);
    const char *names[] = {"1.W", "1.b", "2.γ", "2.β", "4.W", "4.b"};
    for (int i = 0; i < 6; i++) CHECK(cf_model_set_grad_req(m, names[i], CF_GRAD_NONE) == 0);
    cf_fit_opts o = opts(1);
    CHECK(cf_trainer_new(m, d, &o) == NULL);
    CHECK_HAS(cf_last_error(), "error: the model has no parameters to train (all are frozen)");
    /* one left to train is enough */
    CHECK(cf_model_set_grad_req(m, "4.b", CF_GRAD_WRITE) == 0);
    cf_trainer *t = cf_trainer_new(m, d, &o);
    CHECK(t != NULL);
    cf_trainer_free(t);
    cf_model_free(m);
    cf_dataset_free(d);
}

/* A frozen batchnorm computes in training what it computes in evaluation: the
 * running statistics, not the batch's. */
TEST(frozen_batchnorm_uses_running_statistics)
{
    for (int frozen = 0; frozen < 2; frozen++) {
        cf_model *m = make("model = Chain(Input(3), BatchNorm(), Affine(2), softmax)\n", 2);
        if (frozen) {
            CHECK(cf_model_set_grad_req(m, "1.γ", CF_GRAD_NONE) == 0);
            CHECK(cf_model_set_grad_req(m, "1.β", CF_GRAD_NONE) == 0);
        }
        CHECK(cf_model_init_params(m) == 0);
        float *mean = cf_model_state_data(m, cf_model_state_index(m, "1.mean"));
        float *var = cf_model_state_data(m, cf_model_state_index(m, "1.var"));
        float *g = cf_model_param_data(m, cf_model_param_index(m, "1.γ"));
        for (int c = 0; c < 3; c++) mean[c] = 0.5f * (float)c, var[c] = 2.0f + (float)c, g[c] = 1.5f;
        cf_exec *e = cf_bind(m, 4, CF_TRAIN);
        size_t nx, ny;
        float *x = cf_exec_input(e, 0, &nx);
        for (size_t i = 0; i < nx; i++) x[i] = (float)(i % 7) - 2.5f;
        float y_eval[8], y_train[8];
        CHECK(cf_forward(e, 0) == 0);
        memcpy(y_eval, cf_exec_output(e, 0, &ny), sizeof y_eval);
        CHECK(cf_forward(e, 1) == 0);
        memcpy(y_train, cf_exec_output(e, 0, &ny), sizeof y_train);
        CHECK((memcmp(y_eval, y_train, sizeof y_eval) == 0) == frozen);
        CHECK((mean[1] == 0.5f && var[2] == 4.0f) == frozen);   /* updated in training unless frozen */
        cf_exec_free(e);
        cf_model_free(m);
    }
}

/* A model's held values, checked after a partial load: every loaded one equal to
 * the file's, every other as it was. */
TEST(partial_load_takes_what_matches)
{
    CHECK(tmpdir_make("finetune") == 0);
    cf_model *a = make(net, 1);
    CHECK(cf_model_init_params(a) == 0);
    float *mean = cf_model_state_data(a, cf_model_state_index(a, "2.mean"));
    mean[3] = 7;   /* a statistic that differs from a fresh model's */
    const char *names[] = {"x", "y", "z"};
    CHECK(cf_model_set_class_names(a, names, 3) == 0);
    CHECK(cf_model_save_params(a, tmp("a.safetensors")) == 0);
    /* the same body, a head of 5 classes, and a layer the file lacks */
    cf_model *b = make("model = Chain(Input(2), Affine(16), BatchNorm(), relu, Affine(5), Affine(5, 4), softmax)\n", 2);
    CHECK(cf_model_init_params(b) == 0);
    cf_model *fresh = make("model = Chain(Input(2), Affine(16), BatchNorm(), relu, Affine(5), Affine(5, 4), softmax)\n", 2);
    CHECK(cf_model_init_params(fresh) == 0);
    /* without CF_LOAD_MATCHING a shape that differs is an error, and nothing changes */
    CHECK(cf_model_load_params_ex(b, tmp("a.safetensors"), CF_LOAD_PARTIAL) != 0);
    CHECK_HAS(cf_last_error(), "parameter '4.W' is (16, 5) in the model but (16, 3) in the file");
    CHECK(cf_model_load_params_ex(b, tmp("a.safetensors"), CF_LOAD_PARTIAL | CF_LOAD_MATCHING) == 0);
    const char *e = cf_last_error();
    CHECK_HAS(e, "note: ");
    CHECK_HAS(e, "loaded 6 of 10 parameters and statistics");
    CHECK_HAS(e, "not loaded (4, left as initialised): 4.W ((16, 5) in the model, (16, 3) in the file), 4.b ((1, 5) in "
                 "the model, (1, 3) in the file), 5.W (not in the file), 5.b (not in the file)");
    CHECK(strstr(e, "in the file but not in the model") == NULL);   /* the file has nothing else */
    for (int i = 0; i < cf_model_param_count(b) + cf_model_state_count(b); i++) {
        int st = i >= cf_model_param_count(b), k = st ? i - cf_model_param_count(b) : i;
        const char *name = st ? cf_model_state_name(b, k) : cf_model_param_name(b, k);
        int loaded = name[0] == '1' || name[0] == '2';
        size_t n;
        float *want = copy_of(loaded ? a : fresh, name, st, &n);
        if (!same_as(b, name, st, want)) fprintf(stderr, "%s is not %s\n", name, loaded ? "the file's" : "as it was");
        CHECK(same_as(b, name, st, want));
        free(want);
    }
    /* the head was left out: the file's class names are not the model's */
    CHECK(cf_model_class_names(b, NULL) == 0);
    /* the file's tensors the model lacks are named */
    cf_model *c = make("model = Chain(Input(2), Affine(16), BatchNorm(), relu, softmax)\n", 3);
    CHECK(cf_model_init_params(c) == 0);
    CHECK(cf_model_load_params_ex(c, tmp("a.safetensors"), CF_LOAD_PARTIAL | CF_LOAD_MATCHING) == 0);
    CHECK_HAS(cf_last_error(), "loaded 6 of 6 parameters and statistics");
    CHECK_HAS(cf_last_error(), "in the file but not in the model (2): 4.W, 4.b");
    CHECK(cf_model_class_names(c, NULL) == 0);   /* nor here: the file's head is left out */
    cf_model_free(a);
    cf_model_free(b);
    cf_model_free(c);
    cf_model_free(fresh);
}

/* Checkpoints keep the frozen set: cf_checkpoint_freeze gives it back, and a trainer
 * that freezes another set refuses the checkpoint. */
TEST(checkpoints_keep_the_frozen_set)
{
    cf_dataset *d = spirals(120, 3);
    cf_model *m = make(net, 4);
    CHECK(cf_model_set_grad_req(m, "1.W", CF_GRAD_NONE) == 0);
    CHECK(cf_model_set_grad_req(m, "2.β", CF_GRAD_NONE) == 0);
    cf_fit_opts o = opts(1);
    cf_trainer *t = cf_trainer_new(m, d, &o);
    CHECK(t && cf_fit(t, d, NULL) == 0);
    CHECK(t && cf_trainer_save(t, tmp("f.ckpt")) == 0);
    o.epochs = 2;
    /* the same set, from the checkpoint */
    cf_model *same = make(net, 4);
    CHECK(cf_checkpoint_freeze(tmp("f.ckpt"), same) == 2);
    cf_trainer *ts = cf_trainer_new(same, d, &o);
    CHECK(ts && cf_trainer_load(ts, tmp("f.ckpt")) == 0);
    /* another set */
    cf_model *other = make(net, 4);
    CHECK(cf_model_set_grad_req(other, "1.W", CF_GRAD_NONE) == 0);
    cf_trainer *to = cf_trainer_new(other, d, &o);
    CHECK(to && cf_trainer_load(to, tmp("f.ckpt")) != 0);
    CHECK_HAS(cf_last_error(), "f.ckpt: the checkpoint's run kept 2 parameters frozen and this one 1:");
    /* none frozen here, and none in a parameter file */
    cf_model *none = make(net, 4);
    cf_trainer *tn = cf_trainer_new(none, d, &o);
    CHECK(tn && cf_trainer_load(tn, tmp("f.ckpt")) != 0);
    CHECK_HAS(cf_last_error(), "kept 2 parameters frozen and this one 0:");
    CHECK(cf_model_save_params(m, tmp("p.safetensors")) == 0);
    CHECK(cf_checkpoint_freeze(tmp("p.safetensors"), none) == 0);
    cf_trainer_free(t);
    cf_trainer_free(ts);
    cf_trainer_free(to);
    cf_trainer_free(tn);
    cf_model_free(m);
    cf_model_free(same);
    cf_model_free(other);
    cf_model_free(none);
    cf_dataset_free(d);
}

TEST(keep_classes)
{
    float x[20], y[10];
    for (int i = 0; i < 10; i++) x[2 * i] = (float)i, x[2 * i + 1] = -(float)i, y[i] = (float)(i % 5);
    cf_dataset *d = cf_dataset_from_arrays(x, CF_SHAPE(2), y, 1, 10);
    int keep[] = {3, 1};
    cf_dataset *k = cf_dataset_keep_classes(d, keep, 2);
    CHECK(k && cf_dataset_count(k) == 4 && cf_dataset_classes(k) == 2);
    /* samples 1, 3, 6, 8 in their order (classes 1, 3, 1, 3), relabelled 1, 0, 1, 0 */
    const float want_x[] = {1, -1, 3, -3, 6, -6, 8, -8}, want_y[] = {1, 0, 1, 0};
    CHECK(k && memcmp(cf_dataset_x(k), want_x, sizeof want_x) == 0);
    CHECK(k && memcmp(cf_dataset_y(k), want_y, sizeof want_y) == 0);
    cf_dataset_free(k);
    int bad[] = {1, 5}, twice[] = {2, 2};
    CHECK(cf_dataset_keep_classes(d, bad, 2) == NULL);
    CHECK_HAS(cf_last_error(), "there is no class 5 to keep; the labels are 0 to 4");
    CHECK(cf_dataset_keep_classes(d, twice, 2) == NULL);
    CHECK_HAS(cf_last_error(), "class 2 is given twice");
    float r[10] = {0.5f};
    cf_dataset *reg = cf_dataset_from_arrays(x, CF_SHAPE(2), r, 1, 10);
    CHECK(cf_dataset_keep_classes(reg, keep, 1) == NULL);
    CHECK_HAS(cf_last_error(), "the targets are not class labels");
    cf_dataset_free(reg);
    cf_dataset_free(d);
}

int main(void)
{
    RUN(frozen_parameters_stay_bitwise);
    RUN(frozen_batchnorm_uses_running_statistics);
    RUN(every_parameter_frozen_is_refused);
    RUN(partial_load_takes_what_matches);
    RUN(checkpoints_keep_the_frozen_set);
    RUN(keep_classes);
    tmpdir_remove();
    return test_summary("finetune");
}
