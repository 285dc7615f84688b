/* test_noalloc.c - after cf_bind, a training step (forward, backward, update)
 * allocates nothing: malloc and friends are replaced here by counting versions. */
#include <stdlib.h>

#include "cflux.h"
#include "test.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif

#ifndef SANITIZED
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static volatile int counting, allocations;

void *malloc(size_t n) { if (counting) allocations++; return __libc_malloc(n); }
void *calloc(size_t n, size_t s) { if (counting) allocations++; return __libc_calloc(n, s); }
void *realloc(void *p, size_t n) { if (counting) allocations++; return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }
void *aligned_alloc(size_t a, size_t n) { if (counting) allocations++; return __libc_memalign(a, n); }
void *memalign(size_t a, size_t n) { if (counting) allocations++; return __libc_memalign(a, n); }
int posix_memalign(void **p, size_t a, size_t n)
{
    if (counting) allocations++;
    *p = __libc_memalign(a, n);
    return *p ? 0 : 12;
}

static cf_model *mlp(void)
{
    cf_model *m = cf_model_new();
    cf_node *h = cf_input(m, "x", CF_SHAPE(784));
    cf_node *y = cf_input(m, "y", CF_SCALAR);
    int sz[] = {784, 128, 64, 10};
    for (int i = 0; i < 3; i++) {
        char path[4] = {(char)('1' + 2 * i), 0};
        cf_scope_begin(m, "Affine", path);
        cf_node *W = cf_param(m, "W", CF_SHAPE(sz[i], sz[i + 1]), CF_GLOROT);
        cf_node *b = cf_param(m, "b", CF_SHAPE(1, sz[i + 1]), CF_ZEROS);
        h = cf_add(m, cf_matmul(m, h, W), b);
        cf_scope_end(m);
        if (i < 2) h = cf_relu(m, h);
    }
    cf_node *loss = cf_softmax_xent(m, h, y);
    cf_output(m, cf_node_input(loss, 0));
    cf_output(m, loss);
    return m;
}

static int steps_allocate(const char *engine, int threads)
{
    cf_set_gemm(engine);
    cf_set_threads(threads);
    cf_model *m = mlp();
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
    cf_model *m = mlp();
    counting = 0;
    CHECK(allocations > 0);
    cf_model_free(m);
}
#endif

int main(void)
{
#ifdef SANITIZED
    printf("noalloc: skipped under AddressSanitizer (it owns malloc)\n");
    return 0;
#else
    RUN(training_step_allocates_nothing);
    RUN(counter_sees_allocations);
    return test_summary("noalloc");
#endif
}
