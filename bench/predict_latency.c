/* predict_latency.c - the C API's latency for one sample: a model bound at batch 1,
 * each call copying a sample in, cf_forward, and copying the output out (what
 * cflux's Python predict does around the same calls). A benchmark, not a test.
 *
 *   build/bench_predict_latency MODEL [calls] [rounds] [threads]
 *
 * prints "ns_per_call N" for each round, then "median N". bench/python_overhead.py
 * runs it in turns with Python's m.predict on the same model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cflux.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL [calls] [rounds] [threads]\n", argv[0]);
        return 2;
    }
    long calls = argc > 2 ? atol(argv[2]) : 20000;
    int rounds = argc > 3 ? atoi(argv[3]) : 5;
    if (argc > 4) cf_set_threads(atoi(argv[4]));
    if (calls < 1 || rounds < 1 || rounds > 1000) return 2;
    cf_model *m = cf_model_load(argv[1]);
    cf_exec *e = m ? cf_bind(m, 1, 0) : NULL;
    if (!e) {
        fprintf(stderr, "%s\n", cf_last_error());
        return 1;
    }
    size_t nin, nout;
    float *in = cf_exec_input(e, 0, &nin);
    cf_exec_output(e, 0, &nout);
    float *x = malloc(nin * sizeof *x), *y = malloc(nout * sizeof *y);
    if (!x || !y) return 1;
    for (size_t i = 0; i < nin; i++) x[i] = (float)(i % 7) / 7.0f;
    double *t = malloc((size_t)rounds * sizeof *t), sink = 0;
    for (int r = 0; r < rounds; r++) {
        double t0 = now();
        for (long c = 0; c < calls; c++) {
            memcpy(in, x, nin * sizeof *x);
            if (cf_forward(e, 0)) {
                fprintf(stderr, "%s\n", cf_last_error());
                return 1;
            }
            memcpy(y, cf_exec_output(e, 0, NULL), nout * sizeof *y);
            sink += y[0];
        }
        t[r] = (now() - t0) / (double)calls * 1e9;
        printf("ns_per_call %.0f\n", t[r]);
    }
    qsort(t, (size_t)rounds, sizeof *t, cmp);
    printf("median %.0f\n", t[rounds / 2]);
    if (sink == -1) printf("%g\n", sink);   /* keeps the outputs read */
    cf_exec_free(e);
    cf_model_free(m);
    free(x);
    free(y);
    free(t);
    return 0;
}
