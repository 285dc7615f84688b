/* test_golden_resblock.c - the standard library's ResidualBlock against torchvision's
 * BasicBlock in PyTorch (tests/golden/gen_resblock.py writes it out in plain torch):
 * the block's weights come from PyTorch's state_dict through cf_model_import_torch
 * (so its torch(...) names are torchvision's: conv1, bn1, conv2, bn2, downsample.0,
 * downsample.1), then one forward in training mode, and the output, the input's
 * gradient, every parameter's gradient and the running statistics after it are
 * compared with PyTorch's, for the projection shortcut (stride 2, 3 to 8 channels; and
 * stride 1, 4 to 8) and the identity (stride 1, 8 to 8). Runs with each matrix-product engine this build and
 * CPU have, at 1 and 2 threads. */
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/safetensors.h"
#include "golden.h"
#include "test.h"

#define GOLDEN "tests/golden/resblock_golden.safetensors"

/* The table of gen_resblock.py: the model, and the parameters and statistics it must
 * have (a projection has the 1x1 convolution and its batch normalisation) */
static const struct {
    const char *name, *src;
    int params, stats;
} cases[] = {
    {"proj", "model = Chain(Input(3, 9, 9), ResidualBlock(8, stride = 2))\n", 9, 6},
    {"ident", "model = Chain(Input(8, 7, 7), ResidualBlock(8))\n", 6, 4},
    {"widen", "model = Chain(Input(4, 7, 7), ResidualBlock(8))\n", 9, 6},
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

/* |got - want| <= 1e-4 |want| + 2e-5 for every element; returns the mismatches. */
static int compare(const char *what, const float *got, const cf_st_tensor *want, size_t n)
{
    return golden_compare(what, got, want, n, 1e-4, 2e-5);
}

static const cf_st_tensor *gold_of(const cf_st_file *gold, const char *name, const char *what, const char *p)
{
    char key[256];
    snprintf(key, sizeof key, "%s.%s%s", name, what, p ? p : "");
    return cf_st_find(gold, key);
}

static void run_case(const cf_st_file *gold, int c)
{
    const char *name = cases[c].name;
    char state[128];
    snprintf(state, sizeof state, "tests/golden/resblock_%s_state.safetensors", name);
    cf_model *m = cf_model_parse(cases[c].src, "resblock.flux");
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "%s: %s\n", name, cf_last_error());
        return;
    }
    CHECK(cf_model_param_count(m) == cases[c].params && cf_model_state_count(m) == cases[c].stats);
    CHECK(cf_model_import_torch(m, state, NULL, NULL) == 0);
    const cf_st_tensor *x = gold_of(gold, name, "x", NULL), *r = gold_of(gold, name, "r", NULL);
    CHECK(x != NULL && r != NULL);
    cf_exec *e = x && r ? cf_bind(m, (int)(x->shape[0]), CF_TRAIN | CF_INPUT_GRADS) : NULL;
    CHECK(e != NULL);
    if (!e) {
        fprintf(stderr, "%s: %s\n", name, cf_last_error());
        cf_model_free(m);
        return;
    }
    size_t nx, ny;
    memcpy(cf_exec_input(e, 0, &nx), x->data, x->count * sizeof *x->data);
    CHECK(nx == x->count);
    CHECK(cf_forward(e, 1) == 0);
    const float *y = cf_exec_output(e, 0, &ny);
    CHECK(ny == r->count);
    memcpy(cf_exec_output_grad(e, 0, NULL), r->data, ny * sizeof *r->data);
    cf_model_zero_grad(m);
    CHECK(cf_backward(e) == 0);
    char what[160];
    snprintf(what, sizeof what, "%s.y", name);
    CHECK(compare(what, y, gold_of(gold, name, "y", NULL), ny) == 0);
    snprintf(what, sizeof what, "%s.dx", name);
    CHECK(compare(what, cf_exec_input_grad(e, 0, NULL), gold_of(gold, name, "dx", NULL), nx) == 0);
    for (int i = 0; i < cf_model_param_count(m); i++) {   /* every parameter has PyTorch's gradient */
        const char *p = cf_model_param_name(m, i);
        snprintf(what, sizeof what, "%s.grad.%s", name, p);
        CHECK(compare(what, cf_model_param_grad(m, i), gold_of(gold, name, "grad.", p),
                      cf_shape_count(cf_model_param_shape(m, i))) == 0);
    }
    for (int i = 0; i < cf_model_state_count(m); i++) {
        const char *s = cf_model_state_name(m, i);
        snprintf(what, sizeof what, "%s.stat.%s", name, s);
        CHECK(compare(what, cf_model_state_data(m, i), gold_of(gold, name, "stat.", s),
                      cf_shape_count(cf_model_state_shape(m, i))) == 0);
    }
    cf_exec_free(e);
    cf_model_free(m);
}

static void run_golden(const char *engine, int threads)
{
    cf_st_file *gold = golden_begin(GOLDEN, engine, threads);
    CHECK(gold != NULL);
    if (!gold) return;
    for (int c = 0; c < NCASES; c++) run_case(gold, c);
    cf_st_free(gold);
    cf_set_threads(0);
}

/* Every engine this build and CPU have, each forced in turn, at 1 and 2 threads. */
TEST(golden_every_engine) { CHECK(golden_each_engine(run_golden) >= 1); }

/* The fixture holds a gradient for each parameter the block has, and no more: a
 * parameter missing from the model (or one too many) is caught by the counts above,
 * and one of another name here. */
TEST(fixture_names_every_parameter)
{
    cf_st_file *gold = golden_open(GOLDEN);
    CHECK(gold != NULL);
    if (!gold) return;
    int grads[NCASES] = {0};
    for (int i = 0; i < cf_st_count(gold); i++)
        for (int c = 0; c < NCASES; c++) {
            char prefix[32];
            snprintf(prefix, sizeof prefix, "%s.grad.", cases[c].name);
            grads[c] += strncmp(cf_st_get(gold, i)->name, prefix, strlen(prefix)) == 0;
        }
    for (int c = 0; c < NCASES; c++) CHECK(grads[c] == cases[c].params);
    const cf_st_tensor *t = cf_st_find(gold, "proj.grad.1.downsample.0.K");
    CHECK(t != NULL && golden_catches_a_planted_error(t, 5, 1e-4, 2e-5));
    cf_st_free(gold);
}

int main(void)
{
    RUN(golden_every_engine);
    RUN(fixture_names_every_parameter);
    return test_summary("golden_resblock");
}
