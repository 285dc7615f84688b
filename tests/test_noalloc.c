/* test_noalloc.c - after cf_bind, a training step (forward, backward, update)
 * allocates nothing: malloc and friends are replaced here by counting versions. */
#include <stdlib.h>

#include "cflux.h"
#include "test.h"

#include "alloc_count.h"
#include "mlp.h"

#ifndef ALLOC_COUNT_OFF
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

TEST(training_step_allocates_nothing)
{
    CHECK(steps_allocate("builtin", 1) == 0);
    CHECK(steps_allocate("builtin", 2) == 0);
    if (cf_set_gemm("openblas") == 0) {
        CHECK(steps_allocate("openblas", 1) == 0);
        CHECK(steps_allocate("openblas", 2) == 0);
    }
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
    RUN(counter_sees_allocations);
    return test_summary("noalloc");
#endif
}
