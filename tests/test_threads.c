/* test_threads.c - cflux from threads the user makes: a thread with a small stack
 * (256 KiB) can be created and can bind and run a model; two threads training two
 * models at once, or running forward on two executors of one model, get bitwise
 * what they get one after the other. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "rt/gemm_builtin.h"
#include "mlp.h"
#include "test.h"

enum { BATCH = 16, STEPS = 4 };

/* The MLP classifier with its parameters set by seed, bound for training, its inputs
 * filled from the seed too. */
typedef struct {
    cf_model *m;
    cf_exec *e;
} net;

static net net_new(uint64_t seed, unsigned flags)
{
    net n = {mlp_classifier(), NULL};
    cf_model_set_seed(n.m, seed);
    n.e = cf_bind(n.m, BATCH, flags);
    if (!n.e) return n;
    float *x = cf_exec_input(n.e, 0, NULL), *y = cf_exec_input(n.e, 1, NULL);
    for (int i = 0; i < BATCH * 784; i++) x[i] = (float)((i * 7 + (int)seed) % 255) / 255.0f;
    for (int i = 0; i < BATCH; i++) y[i] = (float)((i + (int)seed) % 10);
    return n;
}

static void net_free(net n)
{
    cf_exec_free(n.e);
    cf_model_free(n.m);
}

/* STEPS of forward, backward and SGD; 0 or -1. */
static int train(net n)
{
    for (int s = 0; s < STEPS; s++)
        if (cf_forward(n.e, 1) || cf_backward(n.e) || cf_update_sgd(n.e, 0.05f)) return -1;
    return cf_forward(n.e, 0);
}

/* The probabilities and every parameter are the same bits in a and b. */
static int same_bits(net a, net b)
{
    size_t na, nb;
    const float *pa = cf_exec_output(a.e, 0, &na), *pb = cf_exec_output(b.e, 0, &nb);
    if (na != nb || memcmp(pa, pb, na * sizeof *pa)) return 0;
    for (int i = 0; i < cf_model_param_count(a.m); i++) {
        size_t n = cf_shape_count(cf_model_param_shape(a.m, i));
        if (memcmp(cf_model_param_data(a.m, i), cf_model_param_data(b.m, i), n * sizeof(float))) return 0;
    }
    return 1;
}

/* ---- a thread with a small stack ---- */

static int small_stack_ok;

static void *small_stack_main(void *arg)
{
    const net *want = arg;
    /* a product straight from the built-in GEMM: its packing buffers come now */
    float A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {7, 8, 9, 10, 11, 12}, C[4];
    cf_gemm_builtin(0, 0, 2, 2, 3, 1, A, 3, B, 2, 0, C, 2);
    int ok = C[0] == 58 && C[1] == 64 && C[2] == 139 && C[3] == 154;
    /* and a whole model: bind, train, forward */
    net n = net_new(3, CF_TRAIN);
    ok = ok && n.e && train(n) == 0 && same_bits(n, *want);
    net_free(n);
    small_stack_ok = ok;
    return NULL;
}

/* Static thread-local storage lives in each thread's stack; it once held 790 KiB of
 * GEMM buffers and error-trace lines, and pthread_create then refused any stack
 * smaller than that (EINVAL). */
TEST(small_stack_thread)
{
    for (int e = 0; e < 2; e++) {
        if (cf_set_gemm(e ? "openblas" : "builtin")) continue;
        net want = net_new(3, CF_TRAIN);
        CHECK(want.e && train(want) == 0);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        CHECK(pthread_attr_setstacksize(&attr, 256 * 1024) == 0);
        pthread_t th;
        small_stack_ok = 0;
        int rc = pthread_create(&th, &attr, small_stack_main, &want);
        CHECK(rc == 0);
        if (rc == 0) pthread_join(th, NULL);
        CHECK(small_stack_ok);
        pthread_attr_destroy(&attr);
        net_free(want);
    }
}

/* ---- two threads, two models ---- */

static void *train_main(void *arg)
{
    return train(*(net *)arg) == 0 ? arg : NULL;
}

/* Each thread trains its own model; the pool serves one of them at a time and the
 * other runs its kernels serially, with the same split into tasks: same bits. */
TEST(two_models_at_once)
{
    static const int threads[] = {1, 2, 3};
    for (int e = 0; e < 2; e++) {
        if (cf_set_gemm(e ? "openblas" : "builtin")) continue;
        for (int t = 0; t < 3; t++) {
            cf_set_threads(threads[t]);
            net want[2] = {net_new(1, CF_TRAIN), net_new(2, CF_TRAIN)};
            CHECK(train(want[0]) == 0 && train(want[1]) == 0);
            CHECK(!same_bits(want[0], want[1]));   /* the comparison can fail */
            for (int rep = 0; rep < 3; rep++) {
                net got[2] = {net_new(1, CF_TRAIN), net_new(2, CF_TRAIN)};
                pthread_t th[2];
                void *res[2] = {NULL, NULL};
                for (int k = 0; k < 2; k++) CHECK(pthread_create(&th[k], NULL, train_main, &got[k]) == 0);
                for (int k = 0; k < 2; k++) pthread_join(th[k], &res[k]);
                CHECK(res[0] && res[1]);
                CHECK(same_bits(got[0], want[0]) && same_bits(got[1], want[1]));
                net_free(got[0]);
                net_free(got[1]);
            }
            net_free(want[0]);
            net_free(want[1]);
        }
    }
    cf_set_threads(0);
}

/* Executors of one model share its parameters, which forward only reads: forwards
 * on two of them at once give what each gives alone. */
static void *forward_main(void *arg)
{
    net *n = arg;
    for (int k = 0; k < 20; k++)
        if (cf_forward(n->e, 0)) return NULL;
    return arg;
}

TEST(one_model_two_executors_forward)
{
    cf_set_threads(2);
    net a = net_new(5, CF_TRAIN);
    CHECK(a.e && train(a) == 0);   /* parameters away from their initial values */
    net b = {a.m, cf_bind(a.m, BATCH, 0)}, want[2] = {a, b};
    CHECK(b.e != NULL);
    float *xb = cf_exec_input(b.e, 0, NULL);
    for (int i = 0; i < BATCH * 784; i++) xb[i] = (float)(i % 97) / 97.0f;
    for (int i = 0; i < BATCH; i++) cf_exec_input(b.e, 1, NULL)[i] = (float)(i % 10);
    float out[2][BATCH * 10];
    for (int k = 0; k < 2; k++) {
        CHECK(cf_forward(want[k].e, 0) == 0);
        memcpy(out[k], cf_exec_output(want[k].e, 0, NULL), sizeof out[k]);
    }
    CHECK(memcmp(out[0], out[1], sizeof out[0]) != 0);
    pthread_t th[2];
    void *res[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) CHECK(pthread_create(&th[k], NULL, forward_main, &want[k]) == 0);
    for (int k = 0; k < 2; k++) pthread_join(th[k], &res[k]);
    CHECK(res[0] && res[1]);
    for (int k = 0; k < 2; k++) CHECK(memcmp(cf_exec_output(want[k].e, 0, NULL), out[k], sizeof out[k]) == 0);
    cf_exec_free(b.e);
    net_free(a);
    cf_set_threads(0);
}

int main(void)
{
    RUN(small_stack_thread);
    RUN(two_models_at_once);
    RUN(one_model_two_executors_forward);
    return test_summary("threads");
}
