/* test_golden_softmax.c - softmax over the last dimension, causal (row i of each T x T
 * over columns 0..i, as attention uses it) and plain, against PyTorch: the output and
 * the gradient of sum(y * r), at 1 and 2 threads. Fixtures:
 * tests/golden/softmax_golden.safetensors, made by tests/golden/gen_softmax.py (which
 * also checks PyTorch's masked softmax against its scaled_dot_product_attention). */
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/safetensors.h"
#include "golden.h"
#include "test.h"

#define GOLDEN "tests/golden/softmax_golden.safetensors"
#define SEED 20261201u
#define RTOL 1e-5
#define ATOL 1e-6

/* The script's table: name, x's shape with the batch first, causal, x's scale. */
typedef struct {
    const char *name;
    int rank, d[4], causal;
    float xscale;
} scase;

static const scase cases[] = {
    {"causal", 4, {3, 4, 7, 7}, 1, 4},
    {"causal_one", 3, {2, 1, 1}, 1, 4},
    {"causal_wide", 3, {2, 19, 19}, 1, 8},
    {"plain", 4, {3, 4, 7, 7}, 0, 4},
};

static void run_case(const cf_st_file *gold, const scase *c)
{
    cf_shape s = {c->rank - 1, {0}};
    for (int i = 1; i < c->rank; i++) s.d[i - 1] = c->d[i];
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", s);
    cf_output(m, c->causal ? cf_softmax_causal(m, x) : cf_softmax(m, x));
    cf_exec *e = cf_bind(m, c->d[0], CF_INPUT_GRADS);
    CHECK(e != NULL);
    if (!e) {
        fprintf(stderr, "%s: %s\n", c->name, cf_last_error());
        cf_model_free(m);
        return;
    }
    size_t nx, ny;
    float *xv = cf_exec_input(e, 0, &nx);
    for (size_t i = 0; i < nx; i++) xv[i] = golden_sym() * c->xscale;
    float *r = cf_exec_output_grad(e, 0, &ny);
    for (size_t i = 0; i < ny; i++) r[i] = golden_sym();
    CHECK(cf_forward(e, 1) == 0 && cf_backward(e) == 0);
    char name[64];
    snprintf(name, sizeof name, "%s.y", c->name);
    CHECK(golden_compare(name, cf_exec_output(e, 0, NULL), cf_st_find(gold, name), ny, RTOL, ATOL) == 0);
    snprintf(name, sizeof name, "%s.dx", c->name);
    CHECK(golden_compare(name, cf_exec_input_grad(e, 0, NULL), cf_st_find(gold, name), nx, RTOL, ATOL) == 0);
    cf_exec_free(e);
    cf_model_free(m);
}

TEST(softmax_matches_pytorch)
{
    cf_st_file *gold = golden_open(GOLDEN);
    CHECK(gold != NULL);
    if (!gold) return;
    for (int threads = 1; threads <= 2; threads++) {
        cf_set_threads(threads);
        golden_state = SEED;   /* the cases draw from it in turn, as the script does */
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(gold, &cases[i]);
    }
    cf_set_threads(0);
    cf_st_free(gold);
}

/* The comparison itself can fail: one element of the causal gradient (row 5, column 3
 * of the third matrix: one it sees) off by 0.1%. */
TEST(golden_compare_fails_on_a_wrong_value)
{
    cf_st_file *gold = cf_st_read(GOLDEN);
    CHECK(gold != NULL);
    if (!gold) return;
    const cf_st_tensor *t = cf_st_find(gold, "causal.dx");
    CHECK(t != NULL && t->count == 3 * 4 * 7 * 7);
    if (t) CHECK(golden_catches_a_planted_error(t, 2 * 49 + 5 * 7 + 3, RTOL, ATOL));
    cf_st_free(gold);
}

int main(void)
{
    RUN(softmax_matches_pytorch);
    RUN(golden_compare_fails_on_a_wrong_value);
    return test_summary("golden_softmax");
}
