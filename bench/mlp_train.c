/* mlp_train.c - training speed of an MLP 784-128-64-10 (relu, softmax, SGD, batch 64)
 * on random data: prints samples per second. A benchmark, not a test.
 *
 *   build/bench_mlp_train [seconds] [batch]
 * The loop written against the bare API; `make bench` compares cflux with its peers. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cflux.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 3.0;
    int batch = argc > 2 ? atoi(argv[2]) : 64;
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
    cf_output(m, cf_softmax_xent(m, h, y));
    cf_exec *e = cf_bind(m, batch, CF_TRAIN);
    if (!e) {
        fprintf(stderr, "%s\n", cf_last_error());
        return 1;
    }
    /* a pool of 64 random batches, cycled, as a data loader would hand them over */
    enum { POOL = 64 };
    size_t nx = (size_t)batch * 784;
    float *data = malloc(POOL * nx * sizeof *data), *labels = malloc(POOL * (size_t)batch * sizeof *labels);
    srand(1);
    for (size_t i = 0; i < POOL * nx; i++) data[i] = (float)rand() / (float)RAND_MAX;
    for (size_t i = 0; i < POOL * (size_t)batch; i++) labels[i] = (float)(rand() % 10);
    float *x = cf_exec_input(e, 0, NULL), *yy = cf_exec_input(e, 1, NULL);
    long steps = 0;
    double t0 = now(), t;
    do {
        for (int k = 0; k < 50; k++, steps++) {
            int b = (int)(steps % POOL);
            for (size_t i = 0; i < nx; i++) x[i] = data[b * nx + i];
            for (int i = 0; i < batch; i++) yy[i] = labels[b * batch + i];
            cf_forward(e, 1);
            cf_backward(e);
            cf_update_sgd(e, 0.01f);
        }
        t = now() - t0;
    } while (t < seconds);
    printf("cflux: %.0f samples/s (batch %d, %d threads, %s, loss %.3f)\n", steps * batch / t, batch, cf_threads(),
           cf_gemm_name(), cf_exec_output(e, 0, NULL)[0]);
    free(data);
    free(labels);
    cf_exec_free(e);
    cf_model_free(m);
    return 0;
}
