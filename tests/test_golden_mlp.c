/* test_golden_mlp.c - an MLP 784-128-64-10 built with the C API against PyTorch:
 * probabilities, loss, every gradient, and the parameters after three SGD steps.
 * Fixtures: tests/golden/mlp_golden.safetensors, made by tests/golden/gen_mlp.py
 * (same data generator as golden_gen below). Runs with each matrix-product engine
 * this build and CPU have (builtin-portable, -avx2, -avx512, openblas), forced one
 * at a time, and with 1 and 2 threads. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "cflux.h"
#include "core/safetensors.h"
#include "mlp.h"
#include "golden.h"
#include "test.h"

#define BATCH 64
#define GOLDEN "tests/golden/mlp_golden.safetensors"


static const char *names[3] = {"1", "3", "5"};
#define sizes mlp_sizes

/* |got - want| <= 1e-4 |want| + 1e-6 for every element; returns the mismatches. */
static int compare(const char *what, const float *got, const cf_st_tensor *want, size_t n)
{
    return golden_compare(what, got, want, n, 1e-4, 1e-6);
}

static void run_golden(const char *engine, int threads)
{
    cf_st_file *gold = golden_begin(GOLDEN, engine, threads);
    CHECK(gold != NULL);
    if (!gold) return;
    cf_model *m = mlp_classifier();
    CHECK(cf_model_init_params(m) == 0);
    CHECK(cf_model_param_count(m) == 6);

    /* parameters from the shared generator, in the script's order */
    golden_state = 20261129;
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "%s.W", names[i]);
        float *W = cf_model_param_data(m, cf_model_param_index(m, name));
        float a = (float)sqrt(6.0 / (sizes[i] + sizes[i + 1]));
        for (int j = 0; j < sizes[i] * sizes[i + 1]; j++) W[j] = golden_sym() * a;
        snprintf(name, sizeof name, "%s.b", names[i]);
        float *b = cf_model_param_data(m, cf_model_param_index(m, name));
        for (int j = 0; j < sizes[i + 1]; j++) b[j] = golden_sym() * 0.1f;
    }

    cf_exec *e = cf_bind(m, BATCH, CF_TRAIN);
    CHECK(e != NULL);
    if (!e) {
        fprintf(stderr, "%s\n", cf_last_error());
        goto out;
    }
    const cf_st_tensor *losses = cf_st_find(gold, "loss");
    CHECK(losses && losses->count == 3);
    for (int step = 0; step < 3; step++) {
        float *x = cf_exec_input(e, 0, NULL), *y = cf_exec_input(e, 1, NULL);
        for (int j = 0; j < BATCH * 784; j++) x[j] = golden_uniform();
        for (int j = 0; j < BATCH; j++) y[j] = (float)(golden_next() % 10);
        CHECK(cf_forward(e, 1) == 0);
        size_t np, nl;
        const float *probs = cf_exec_output(e, 0, &np), *loss = cf_exec_output(e, 1, &nl);
        CHECK(nl == 1);
        if (losses) CHECK(compare("loss", loss, &(cf_st_tensor){.data = losses->data + step, .count = 1}, 1) == 0);
        if (step == 0) CHECK(compare("probs0", probs, cf_st_find(gold, "probs0"), np) == 0);
        CHECK(cf_backward(e) == 0);
        if (step == 0)
            for (int p = 0; p < 6; p++) {
                char name[32];
                snprintf(name, sizeof name, "grad.%s", cf_model_param_name(m, p));
                CHECK(compare(name, cf_model_param_grad(m, p), cf_st_find(gold, name),
                              cf_shape_count(cf_model_param_shape(m, p))) == 0);
            }
        CHECK(cf_update_sgd(e, 0.1f) == 0);
    }
    for (int p = 0; p < 6; p++) {
        char name[32];
        snprintf(name, sizeof name, "final.%s", cf_model_param_name(m, p));
        CHECK(compare(name, cf_model_param_data(m, p), cf_st_find(gold, name),
                      cf_shape_count(cf_model_param_shape(m, p))) == 0);
    }
    cf_exec_free(e);
out:
    cf_model_free(m);
    cf_st_free(gold);
    cf_set_threads(0);
}

/* Every engine this build and CPU have, each forced in turn, at 1 and 2 threads. */
TEST(golden_every_engine) { CHECK(golden_each_engine(run_golden) >= 1); }

/* The comparison itself must be able to fail: a planted error in one weight of the
 * final parameters is reported. */
TEST(golden_compare_fails_on_a_wrong_value)
{
    cf_st_file *gold = cf_st_read(GOLDEN);
    CHECK(gold != NULL);
    if (!gold) return;
    const cf_st_tensor *t = cf_st_find(gold, "final.3.W");
    CHECK(t != NULL);
    if (!t) goto out;
    CHECK(golden_catches_a_planted_error(t, 100, 1e-4, 1e-6));
out:
    cf_st_free(gold);
}

int main(void)
{
    RUN(golden_every_engine);
    RUN(golden_compare_fails_on_a_wrong_value);
    return test_summary("golden_mlp");
}
