/* test_golden_transformer.c - the standard library's TransformerBlock against PyTorch:
 * one pre-norm block (LayerNorm, causal self-attention of 4 heads, LayerNorm, MLP with
 * tanh gelu, both residuals), built in the notation, its parameters set by name from
 * a PyTorch module's state_dict, compared on the output and the gradients of
 * sum(y * r) with respect to the input and every parameter. Fixtures:
 * tests/golden/transformer_golden.safetensors, made by tests/golden/gen_transformer.py.
 * Runs with each matrix-product engine this build and CPU have, forced one at a
 * time, at 1 and 2 threads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/safetensors.h"
#include "golden.h"
#include "test.h"

#define GOLDEN "tests/golden/transformer_golden.safetensors"
#define BATCH 3   /* x (3, 8, 32): T = 8, d = 32, 4 heads of 8 */
#define SRC "model = Chain(Input(8, 32), TransformerBlock(heads = 4))\n"
#define RTOL 1e-5 /* gen_transformer.py prints how far PyTorch's own float32 is from it */
#define ATOL 1e-6

/* Each parameter of the block, the PyTorch tensor that holds it, and whether it is
 * transposed (Linear's weight (out, in) is Affine's W (in, out)). */
static const struct {
    const char *cflux, *torch;
    int transposed;
} params[] = {
    {"1.norm1.γ", "norm1.weight", 0},
    {"1.norm1.β", "norm1.bias", 0},
    {"1.attention.qkv.W", "attention.qkv.weight", 1},
    {"1.attention.qkv.b", "attention.qkv.bias", 0},
    {"1.attention.out.W", "attention.out.weight", 1},
    {"1.attention.out.b", "attention.out.bias", 0},
    {"1.norm2.γ", "norm2.weight", 0},
    {"1.norm2.β", "norm2.bias", 0},
    {"1.mlp.up.W", "mlp.up.weight", 1},
    {"1.mlp.up.b", "mlp.up.bias", 0},
    {"1.mlp.down.W", "mlp.down.weight", 1},
    {"1.mlp.down.b", "mlp.down.bias", 0},
};
#define NPARAMS (int)(sizeof params / sizeof params[0])

/* The worst error seen in each compared tensor over all runs (y, dx, then the
 * parameters' gradients in the table's order): absolute, and as a fraction of the
 * tolerance. */
static double worst_abs[2 + NPARAMS], worst_ratio[2 + NPARAMS];

static int compare(int slot, const char *what, const float *got, const cf_st_tensor *want, size_t n)
{
    for (size_t i = 0; want && i < want->count && i < n; i++) {
        double w = want->data[i], e = fabs(got[i] - w);
        if (e > worst_abs[slot]) worst_abs[slot] = e;
        if (e / (RTOL * fabs(w) + ATOL) > worst_ratio[slot]) worst_ratio[slot] = e / (RTOL * fabs(w) + ATOL);
    }
    return golden_compare(what, got, want, n, RTOL, ATOL);
}

/* dst (rows, cols) = src (cols, rows) transposed. */
static void transpose(float *dst, const float *src, int rows, int cols)
{
    for (int a = 0; a < rows; a++)
        for (int b = 0; b < cols; b++) dst[(size_t)a * cols + b] = src[(size_t)b * rows + a];
}

/* Every parameter of m from the fixture's state_dict; 0, or -1 with the reason printed. */
static int set_params(cf_model *m, const cf_st_file *gold)
{
    if (cf_model_param_count(m) != NPARAMS) {
        fprintf(stderr, "the block has %d parameters, the table %d\n", cf_model_param_count(m), NPARAMS);
        return -1;
    }
    for (int i = 0; i < NPARAMS; i++) {
        int p = cf_model_param_index(m, params[i].cflux);
        char key[64];
        snprintf(key, sizeof key, "state.%s", params[i].torch);
        const cf_st_tensor *t = cf_st_find(gold, key);
        cf_shape s = p >= 0 ? cf_model_param_shape(m, p) : (cf_shape){0};
        if (p < 0 || !t || t->count != cf_shape_count(s)) {
            fprintf(stderr, "%s: no such parameter, or %s missing or of another size\n", params[i].cflux, key);
            return -1;
        }
        float *data = cf_model_param_data(m, p);
        if (params[i].transposed) transpose(data, t->data, s.d[0], s.d[1]);
        else memcpy(data, t->data, t->count * sizeof *data);
    }
    return 0;
}

/* One forward and backward with this engine and thread count, compared with the
 * fixture. */
static void run_golden(const char *engine, int threads)
{
    cf_st_file *gold = golden_begin(GOLDEN, engine, threads);
    CHECK(gold != NULL);
    if (!gold) return;
    cf_model *m = cf_model_parse(SRC, "block.flux");
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "%s\n", cf_last_error());
        goto out;
    }
    CHECK(cf_model_init_params(m) == 0);
    CHECK(set_params(m, gold) == 0);
    cf_exec *e = cf_bind(m, BATCH, CF_INPUT_GRADS);
    CHECK(e != NULL);
    if (!e) {
        fprintf(stderr, "%s\n", cf_last_error());
        goto out;
    }
    const cf_st_tensor *x = cf_st_find(gold, "x"), *r = cf_st_find(gold, "r");
    size_t nx, ny;
    float *xv = cf_exec_input(e, 0, &nx);
    float *rv = cf_exec_output_grad(e, 0, &ny);
    CHECK(x && r && x->count == nx && r->count == ny);
    if (x && r && x->count == nx && r->count == ny) {
        memcpy(xv, x->data, nx * sizeof *xv);
        CHECK(cf_forward(e, 1) == 0);
        memcpy(rv, r->data, ny * sizeof *rv);
        cf_model_zero_grad(m);
        CHECK(cf_backward(e) == 0);
        CHECK(compare(0, "y", cf_exec_output(e, 0, NULL), cf_st_find(gold, "y"), ny) == 0);
        CHECK(compare(1, "dx", cf_exec_input_grad(e, 0, NULL), cf_st_find(gold, "dx"), nx) == 0);
        for (int i = 0; i < NPARAMS; i++) {
            int p = cf_model_param_index(m, params[i].cflux);
            cf_shape s = cf_model_param_shape(m, p);
            size_t n = cf_shape_count(s);
            char key[64];
            snprintf(key, sizeof key, "grad.%s", params[i].torch);
            const cf_st_tensor *t = cf_st_find(gold, key);
            cf_st_tensor want = t ? *t : (cf_st_tensor){0};
            float *tt = NULL;
            if (params[i].transposed && t && t->count == n) {   /* PyTorch's (out, in) as cflux's (in, out) */
                tt = malloc(n * sizeof *tt);
                transpose(tt, t->data, s.d[0], s.d[1]);
                want.data = tt;
            }
            CHECK(compare(2 + i, key, cf_model_param_grad(m, p), t ? &want : NULL, n) == 0);
            free(tt);
        }
    }
    cf_exec_free(e);
out:
    cf_model_free(m);
    cf_st_free(gold);
    cf_set_threads(0);
}

/* Every engine this build and CPU have, each forced in turn, at 1 and 2 threads; then
 * the worst error in each tensor. */
TEST(block_matches_pytorch_with_every_engine)
{
    CHECK(golden_each_engine(run_golden) >= 1);
    for (int k = 0; k < 2 + NPARAMS; k++)
        printf("  worst error %9.3g, %5.3f of the tolerance: %s\n", worst_abs[k], worst_ratio[k],
               k == 0 ? "y" : k == 1 ? "dx" : params[k - 2].cflux);
}

/* The comparison itself must be able to fail: a planted error in one element of a
 * gradient is reported. */
TEST(golden_compare_fails_on_a_wrong_value)
{
    cf_st_file *gold = cf_st_read(GOLDEN);
    CHECK(gold != NULL);
    if (!gold) return;
    const cf_st_tensor *t = cf_st_find(gold, "grad.attention.qkv.weight");
    CHECK(t != NULL && t->count == 96 * 32);
    if (t) CHECK(golden_catches_a_planted_error(t, 1000, RTOL, ATOL));
    cf_st_free(gold);
}

int main(void)
{
    RUN(block_matches_pytorch_with_every_engine);
    RUN(golden_compare_fails_on_a_wrong_value);
    return test_summary("golden_transformer");
}
