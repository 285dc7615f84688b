/* test_noalloc.c - after cf_bind, a training step (forward, backward, update)
 * allocates nothing: malloc and friends are replaced here by counting versions. */
#include <stdlib.h>

#include "cflux.h"
#include "test.h"

#include "alloc_count.h"
#include "mlp.h"

#ifndef ALLOC_COUNT_OFF
/* Allocations in three training steps of e; frees e and m. */
static int three_steps(cf_model *m, cf_exec *e)
{
    allocations = 0;
    counting = 1;
    for (int step = 0; step < 3; step++) {
        cf_forward(e, 1);
        cf_backward(e);
        cf_update_sgd(e, 0.01f);
    }
    counting = 0;
    cf_exec_free(e);
    cf_model_free(m);
    cf_set_threads(0);
    return allocations;
}

static int steps_allocate(const char *engine, int threads)
{
    cf_set_gemm(engine);
    cf_set_threads(threads);
    cf_model *m = mlp_classifier();
    cf_exec *e = cf_bind(m, 64, CF_TRAIN);
    if (!e) return -1;
    float *x = cf_exec_input(e, 0, NULL), *y = cf_exec_input(e, 1, NULL);
    for (int i = 0; i < 64 * 784; i++) x[i] = (float)(i % 255) / 255.0f;
    for (int i = 0; i < 64; i++) y[i] = (float)(i % 10);
    return three_steps(m, e);
}

TEST(training_step_allocates_nothing)
{
    CHECK(steps_allocate("builtin", 1) == 0);
    CHECK(steps_allocate("builtin", 2) == 0);
    if (cf_set_gemm("openblas") == 0) {
        CHECK(steps_allocate("openblas", 1) == 0);
        CHECK(steps_allocate("openblas", 2) == 0);
    }
}

/* A model of the notation, large enough for the thread pool; indices > 0: its input
 * holds indices below that. */
static int notation_steps_allocate(const char *src, int indices, int threads)
{
    cf_set_threads(threads);
    cf_model *m = cf_model_parse(src, "m.flux");
    cf_exec *e = m && cf_model_init_params(m) == 0 ? cf_bind(m, 32, CF_TRAIN) : NULL;
    if (!e) {
        fprintf(stderr, "%s\n", cf_last_error());
        cf_model_free(m);
        return -1;
    }
    size_t n, ny;
    float *x = cf_exec_input(e, 0, &n), *g = cf_exec_output_grad(e, 0, &ny);
    for (size_t i = 0; i < n; i++) x[i] = indices ? (float)(i * 7 % (size_t)indices) : (float)(i % 255) / 127.0f - 1.0f;
    for (size_t i = 0; i < ny; i++) g[i] = (float)(i % 7) - 3.0f;
    return three_steps(m, e);
}

/* layernorm (its aux and workspace) and gelu */
static const char *layernorm_src = "model = Chain(Input(16, 64), LayerNorm(), Affine(128), gelu, Affine(64),\n"
                                   "              x -> gelu(x, exact = true), LayerNorm(eps = 1e-3))\n";

TEST(layernorm_and_gelu_steps_allocate_nothing)
{
    CHECK(notation_steps_allocate(layernorm_src, 0, 1) == 0);
    CHECK(notation_steps_allocate(layernorm_src, 0, 2) == 0);
}

/* a GPT: attention's batched products, transposes, causal softmax, dropout */
static const char *gpt_src = "model = Chain(Input(16), GPT(20, 32, layers = 2, heads = 4, context = 16, drop = 0.1))\n";

TEST(gpt_steps_allocate_nothing)
{
    CHECK(notation_steps_allocate(gpt_src, 20, 1) == 0);
    CHECK(notation_steps_allocate(gpt_src, 20, 2) == 0);
}

/* The counter itself works: the check can fail. */
TEST(counter_sees_allocations)
{
    allocations = 0;
    counting = 1;
    cf_model *m = mlp_classifier();
    counting = 0;
    CHECK(allocations > 0);
    cf_model_free(m);
}
#endif

int main(void)
{
#ifdef ALLOC_COUNT_OFF
    printf("noalloc: skipped under AddressSanitizer (it owns malloc)\n");
    return 0;
#else
    RUN(training_step_allocates_nothing);
    RUN(layernorm_and_gelu_steps_allocate_nothing);
    RUN(gpt_steps_allocate_nothing);
    RUN(counter_sees_allocations);
    return test_summary("noalloc");
#endif
}
