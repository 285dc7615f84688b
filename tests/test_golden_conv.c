/* test_golden_conv.c - conv2d against PyTorch's torch.nn.functional.conv2d: the output
 * and the gradients of sum(y * r) with respect to x and w, in configurations with
 * stride, padding, dilation and groups. Fixtures: tests/golden/conv_golden.safetensors,
 * made by tests/golden/gen_conv.py (same generator and table as here). Runs with each
 * matrix-product engine this build and CPU have, forced one at a time, and with 1 and
 * 2 threads. */
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/safetensors.h"
#include "golden.h"
#include "test.h"

#define GOLDEN "tests/golden/conv_golden.safetensors"

typedef struct {
    const char *name;
    int B, C, H, W, O, KH, KW;
    int ia[7];   /* stride h, w, pad h, w, dilation h, w, groups */
} config;

/* The table of gen_conv.py, in its order. */
static const config configs[] = {
    {"plain", 18, 3, 9, 8, 4, 3, 3, {1, 1, 0, 0, 1, 1, 1}},
    {"s2p1", 4, 2, 10, 9, 5, 3, 3, {2, 2, 1, 1, 1, 1, 1}},
    {"dil2", 3, 2, 9, 10, 3, 3, 2, {1, 2, 2, 1, 2, 2, 1}},
    {"g2", 5, 4, 7, 7, 6, 3, 3, {1, 1, 1, 1, 1, 1, 2}},
    {"s2p1_7", 3, 5, 7, 7, 6, 3, 3, {2, 2, 1, 1, 1, 1, 1}},
    {"1x1s2_7", 3, 6, 7, 7, 5, 1, 1, {2, 2, 0, 0, 1, 1, 1}},
};
#define NCONFIGS (int)(sizeof configs / sizeof configs[0])

/* |got - want| <= 1e-4 |want| + 1e-5 for every element; returns the mismatches. */
static int compare(const char *what, const float *got, const cf_st_tensor *want, size_t n)
{
    return golden_compare(what, got, want, n, 1e-4, 1e-5);
}

static void fill_sym(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++) p[i] = golden_sym();
}

/* Runs configuration c (the generator's next draws) and compares with gold; with keep,
 * also returns copies of y, dx and dw (malloc'd) and their counts. */
static void run_config(const cf_st_file *gold, const config *c, float **keep, size_t *kn)
{
    cf_model *m = cf_model_new();
    cf_node *in[2];
    in[0] = cf_input(m, "x", CF_SHAPE(c->C, c->H, c->W));
    in[1] = cf_param(m, "w", CF_SHAPE(c->O, c->C / c->ia[6], c->KH, c->KW), CF_ZEROS);
    cf_output(m, cf_op_at(m, CF_OP_CONV2D, 2, in, c->ia, 7, NULL, 0, __FILE__, __LINE__, 0));
    CHECK(cf_model_init_params(m) == 0);
    cf_exec *e = cf_bind(m, c->B, CF_INPUT_GRADS);
    CHECK(e != NULL);
    if (!e) {
        fprintf(stderr, "%s: %s\n", c->name, cf_last_error());
        cf_model_free(m);
        return;
    }
    size_t nx, ny, nw = (size_t)c->O * (c->C / c->ia[6]) * c->KH * c->KW;
    fill_sym(cf_model_param_data(m, 0), nw);
    float *x = cf_exec_input(e, 0, &nx);   /* apart: nx is set by the call */
    fill_sym(x, nx);
    CHECK(cf_forward(e, 1) == 0);
    const float *y = cf_exec_output(e, 0, &ny);
    fill_sym(cf_exec_output_grad(e, 0, NULL), ny);
    cf_model_zero_grad(m);
    CHECK(cf_backward(e) == 0);
    char name[32];
    snprintf(name, sizeof name, "%s.y", c->name);
    CHECK(compare(name, y, cf_st_find(gold, name), ny) == 0);
    snprintf(name, sizeof name, "%s.dx", c->name);
    CHECK(compare(name, cf_exec_input_grad(e, 0, NULL), cf_st_find(gold, name), nx) == 0);
    snprintf(name, sizeof name, "%s.dw", c->name);
    CHECK(compare(name, cf_model_param_grad(m, 0), cf_st_find(gold, name), nw) == 0);
    if (keep) {
        const float *src[3] = {y, cf_exec_input_grad(e, 0, NULL), cf_model_param_grad(m, 0)};
        size_t n[3] = {ny, nx, nw};
        for (int i = 0; i < 3; i++) {
            keep[i] = malloc(n[i] * sizeof **keep);
            memcpy(keep[i], src[i], n[i] * sizeof **keep);
            kn[i] = n[i];
        }
    }
    cf_exec_free(e);
    cf_model_free(m);
}

static void run_golden(const char *engine, int threads)
{
    cf_st_file *gold = golden_begin(GOLDEN, engine, threads);
    CHECK(gold != NULL);
    if (!gold) return;
    golden_state = 20260307;   /* the configurations draw from it in turn, as the script does */
    for (int i = 0; i < NCONFIGS; i++) run_config(gold, &configs[i], NULL, NULL);
    cf_st_free(gold);
    cf_set_threads(0);
}

/* Every engine this build and CPU have, each forced in turn, at 1 and 2 threads. */
TEST(golden_every_engine) { CHECK(golden_each_engine(run_golden) >= 1); }

/* Each sample's output and dx, and dw's fixed order of sums: the same bits at 1, 2 and
 * 3 threads, with each engine. */
static void same_bits(const cf_st_file *gold, const char *engine)
{
    float *ref[NCONFIGS][3];
    size_t n[NCONFIGS][3];
    for (int threads = 1; threads <= 3; threads++) {
        cf_set_threads(threads);
        golden_state = 20260307;
        for (int i = 0; i < NCONFIGS; i++) {
            float *got[3];
            size_t gn[3];
            run_config(gold, &configs[i], threads == 1 ? ref[i] : got, threads == 1 ? n[i] : gn);
            if (threads == 1) continue;
            static const char *what[3] = {"y", "dx", "dw"};
            for (int j = 0; j < 3; j++) {
                int same = gn[j] == n[i][j] && memcmp(got[j], ref[i][j], n[i][j] * sizeof **got) == 0;
                if (!same) fprintf(stderr, "  %s, %s: %s differs at %d threads\n", engine, configs[i].name, what[j], threads);
                CHECK(same);
                free(got[j]);
            }
        }
    }
    for (int i = 0; i < NCONFIGS; i++)
        for (int j = 0; j < 3; j++) free(ref[i][j]);
    cf_set_threads(0);
}

TEST(same_bits_at_any_thread_count)
{
    static const char *engines[] = {"builtin-portable", "builtin-avx2", "builtin-avx512", "openblas"};
    cf_st_file *gold = cf_st_read(GOLDEN);
    CHECK(gold != NULL);
    if (!gold) return;
    for (int i = 0; i < 4; i++)
        if (cf_set_gemm(engines[i]) == 0) same_bits(gold, engines[i]);
    cf_st_free(gold);
}

/* The comparison itself must be able to fail: a planted error in one element of a
 * weight gradient is reported. */
TEST(golden_compare_fails_on_a_wrong_value)
{
    cf_st_file *gold = cf_st_read(GOLDEN);
    CHECK(gold != NULL);
    if (!gold) return;
    const cf_st_tensor *t = cf_st_find(gold, "g2.dw");
    CHECK(t != NULL && t->count > 10);
    if (!t) goto out;
    CHECK(golden_catches_a_planted_error(t, 10, 1e-4, 1e-5));
out:
    cf_st_free(gold);
}

int main(void)
{
    RUN(golden_every_engine);
    RUN(same_bits_at_any_thread_count);
    RUN(golden_compare_fails_on_a_wrong_value);
    return test_summary("golden_conv");
}
