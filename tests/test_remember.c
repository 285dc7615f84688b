/* test_remember.c - what a model keeps with its weights for the data it was trained
 * on: notes (cf_model_set_info), target standardisation for regression, and its own
 * source (cf_model_load_trained). */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "cflux.h"
#include "core/safetensors.h"
#include "test.h"
#include "tmpdir.h"

static const char *regressor = "model = Chain(Input(2), Affine(1))\n";

/* y = 3000 x0 - 2000 x1 + 50000: targets far from the outputs' first scale */
static cf_dataset *prices(size_t n, uint32_t seed)
{
    float *x = malloc(n * 2 * sizeof *x), *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[2 * i] = (float)(seed >> 8) / 16777216.0f * 4 - 2;
        seed = seed * 1664525u + 1013904223u;
        x[2 * i + 1] = (float)(seed >> 8) / 16777216.0f * 4 - 2;
        y[i] = 3000 * x[2 * i] - 2000 * x[2 * i + 1] + 50000;
    }
    cf_dataset *d = cf_dataset_from_arrays(x, CF_SHAPE(2), y, 1, n);
    free(x);
    free(y);
    return d;
}

TEST(notes_set_get_remove_in_key_order)
{
    cf_model *m = cf_model_parse(regressor, "r.flux");
    CHECK(cf_model_set_info(m, "label", "price") == 0);
    CHECK(cf_model_set_info(m, "data", "csv:a.csv") == 0);
    CHECK(cf_model_info_count(m) == 2 && strcmp(cf_model_info_key(m, 0), "data") == 0);
    CHECK(strcmp(cf_model_info(m, "label"), "price") == 0);
    CHECK(cf_model_set_info(m, "label", "3") == 0 && strcmp(cf_model_info(m, "label"), "3") == 0);
    CHECK(cf_model_set_info(m, "label", NULL) == 0 && cf_model_info(m, "label") == NULL);
    CHECK(cf_model_info_count(m) == 1);
    CHECK(cf_model_set_info(m, "Bad Key", "x") != 0);
    CHECK_HAS(cf_last_error(), "is not 1 to 64 of a-z");
    CHECK(cf_model_set_info(m, "", "x") != 0 && cf_model_info(NULL, "data") == NULL);
    cf_model_free(m);
}

TEST(notes_and_target_norm_round_trip_through_files)
{
    cf_model *m = cf_model_parse(regressor, "r.flux");
    float mean = 50000, std = 3600;
    CHECK(cf_model_set_info(m, "data", "csv:houses.csv") == 0);
    CHECK(cf_model_set_target_norm(m, &mean, &std, 1) == 0);
    CHECK(cf_model_save_params(m, tmp("r.safetensors")) == 0);
    cf_st_file *f = cf_st_read(tmp("r.safetensors"));
    CHECK(f && strcmp(cf_st_meta(f, "info.data"), "csv:houses.csv") == 0);
    CHECK(f && cf_st_find(f, "target.mean") && cf_st_find(f, "target.std")->data[0] == 3600);
    CHECK(f && strcmp(cf_st_meta(f, "model_source"), regressor) == 0);
    cf_st_free(f);
    /* loaded into a fresh model, and as a model of its own */
    cf_model *b = cf_model_parse(regressor, "r.flux");
    CHECK(cf_model_load_params(b, tmp("r.safetensors")) == 0);
    const float *mu, *sd;
    CHECK(cf_model_target_norm(b, &mu, &sd) == 1 && mu[0] == 50000 && sd[0] == 3600);
    CHECK(cf_model_info(b, "data") && strcmp(cf_model_info(b, "data"), "csv:houses.csv") == 0);
    cf_model *c = cf_model_load_trained(tmp("r.safetensors"));
    CHECK(c && cf_model_target_norm(c, NULL, NULL) == 1 && cf_model_info(c, "data"));
    CHECK(c && memcmp(cf_model_param_data(c, 0), cf_model_param_data(m, 0), 2 * sizeof(float)) == 0);
    cf_model_free(b);
    cf_model_free(c);
    cf_model_free(m);
}

/* cf_model_note_data keeps the training inputs' least and greatest values (the tool's
 * predict compares new inputs with them); none for indices, whose scale is no question */
TEST(note_data_keeps_the_inputs_range)
{
    float x[6] = {0.25f, -1.5f, 3, NAN, 0.125f, 2.75f}, y[3] = {1, 2, 3};
    cf_dataset *d = cf_dataset_from_arrays(x, CF_SHAPE(2), y, 1, 3);
    cf_model *m = cf_model_parse(regressor, "r.flux");
    CHECK(cf_model_note_data(m, "csv:x.csv", d, NULL, NULL) == 0);
    CHECK(cf_model_info(m, "input_range") && strcmp(cf_model_info(m, "input_range"), "-1.5 3") == 0);
    cf_model_free(m);
    m = cf_model_parse("model = Chain(Input(2), Embedding(4, 3), flatten, Affine(1))\n", "e.flux");
    CHECK(cf_model_set_info(m, "input_range", "0 9") == 0);   /* a file's note, dropped */
    CHECK(cf_model_note_data(m, "csv:x.csv", d, NULL, NULL) == 0 && cf_model_info(m, "input_range") == NULL);
    cf_model_free(m);
    cf_dataset_free(d);
}

TEST(target_norm_refused_where_it_does_not_fit)
{
    cf_model *m = cf_model_parse("model = Chain(Input(2), Affine(3), softmax)\n", "c.flux");
    float mean[3] = {0, 0, 0}, std[3] = {1, 1, 1};
    CHECK(cf_model_set_target_norm(m, mean, std, 3) != 0);
    CHECK_HAS(cf_last_error(), "ends with softmax");
    cf_model_free(m);
    m = cf_model_parse(regressor, "r.flux");
    CHECK(cf_model_set_target_norm(m, mean, std, 3) != 0);
    CHECK_HAS(cf_last_error(), "target standardisation for 3 numbers, but the model's output 0 has 1");
    std[0] = 0;
    CHECK(cf_model_set_target_norm(m, mean, std, 1) != 0);
    cf_model_free(m);
}

TEST(a_file_without_source_cannot_stand_alone)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(2));
    cf_output(m, cf_matmul(m, x, cf_param(m, "W", CF_SHAPE(2, 1), CF_GLOROT)));
    CHECK(cf_model_save_params(m, tmp("c.safetensors")) == 0);
    CHECK(cf_model_load_trained(tmp("c.safetensors")) == NULL);
    CHECK_HAS(cf_last_error(), "holds weights but not the model's source");
    CHECK(cf_model_load_trained(tmp("none.safetensors")) == NULL);
    CHECK_HAS(cf_last_error(), "none.safetensors");
    cf_model_free(m);
}

/* --normalize on regression: the targets standardised by the training split's
 * statistics, the predictions and metrics in the targets' own units */
TEST(normalize_fits_targets_and_predict_undoes_it)
{
    cf_dataset *train = prices(512, 1), *test = prices(128, 2);
    cf_model *m = cf_model_parse(regressor, "r.flux");
    cf_fit_opts o = cf_fit_defaults();
    o.epochs = 40;
    o.batch = 32;
    o.optim.lr = 0.05f;
    o.normalize = 1;
    cf_trainer *t = cf_trainer_new(m, train, &o);
    CHECK(t && cf_fit(t, train, test) == 0);
    const float *mu, *sd, *y = cf_dataset_y(train);
    double sum = 0, sq = 0;
    for (size_t i = 0; i < 512; i++) sum += y[i];
    for (size_t i = 0; i < 512; i++) sq += (y[i] - sum / 512) * (y[i] - sum / 512);
    CHECK(cf_model_target_norm(m, &mu, &sd) == 1);
    CHECK_NEAR(mu[0], sum / 512, 1e-5 * fabs(sum / 512));
    CHECK_NEAR(sd[0], sqrt(sq / 512), 1e-3 * sqrt(sq / 512));
    float out[128];
    CHECK(cf_predict(m, test, 64, out) == 0);
    double err = 0;
    for (int i = 0; i < 128; i++) err += fabs(out[i] - cf_dataset_y(test)[i]);
    CHECK(err / 128 < 100);   /* targets around 50000 +- 10000 */
    cf_metrics r = {0};
    CHECK(cf_evaluate_metrics(m, test, 64, 0, &r) == 0 && r.r2 > 0.999 && r.mae < 100);
    cf_metrics_free(&r);
    cf_trainer_free(t);
    cf_model_free(m);
    cf_dataset_free(train);
    cf_dataset_free(test);
}

static void keep_warning(const char *msg, void *user)
{
    size_t n = strlen(user);
    snprintf((char *)user + n, 4096 - n, "%s\n", msg);
}

/* the same data without standardisation, with Adam's default step (the tool's), does
 * not move, and the run says why */
TEST(large_targets_that_do_not_move_get_a_note)
{
    cf_dataset *train = prices(512, 1);
    char warnings[4096] = "";
    for (int norm = 0; norm < 2; norm++) {
        cf_model *m = cf_model_parse(regressor, "r.flux");
        cf_fit_opts o = cf_fit_defaults();
        o.epochs = 4;
        o.batch = 32;
        o.optim = cf_optim_defaults("adam");
        o.normalize = norm;
        o.on_warning = keep_warning;
        o.user = warnings;
        warnings[0] = 0;
        cf_trainer *t = cf_trainer_new(m, train, &o);
        CHECK(t && cf_fit(t, train, NULL) == 0);
        if (norm) CHECK(!strstr(warnings, "still that of outputs of 0"));
        else CHECK_HAS(warnings, "after 50 steps the loss");
        cf_trainer_free(t);
        cf_model_free(m);
    }
    cf_dataset_free(train);
}

int main(void)
{
    if (tmpdir_make("remember")) return 1;
    RUN(notes_set_get_remove_in_key_order);
    RUN(notes_and_target_norm_round_trip_through_files);
    RUN(note_data_keeps_the_inputs_range);
    RUN(target_norm_refused_where_it_does_not_fit);
    RUN(a_file_without_source_cannot_stand_alone);
    RUN(normalize_fits_targets_and_predict_undoes_it);
    RUN(large_targets_that_do_not_move_get_a_note);
    tmpdir_remove();
    return test_summary("remember");
}
