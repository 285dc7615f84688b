/* bench.c - `cflux bench` and `cflux version`: how fast the engine runs a model here,
 * and which kernels it runs.
 *
 * bench binds the model three times on random data (inputs uniform in [0, 1), random
 * labels or targets; an input of indices, cf_model_input_classes, whole numbers below
 * its vocabulary, as a text loader hands them) and times, each after a warm-up:
 *   train     forward, loss, backward and an SGD update (lr 0.01) at --batch, for
 *             --seconds; samples/s, and the matrix products' GFLOP/s (2 per
 *             multiply-add of every product forward and backward, counted by the
 *             engine: cf_gemm_flops) against one core's measured FMA peak times the
 *             threads;
 *   infer     forward at batch 1000, for --seconds; samples/s;
 *   latency   forward at batch 1: the median of 10,000 calls, each timed alone;
 *   generate  a GPT (a model cf_model_load_cached takes) only: characters/s drawn one
 *             at a time at batch 1, each fed back, against the cache of keys and
 *             values, as cflux sample runs it (when the window fills, its last quarter
 *             read again), for --seconds.
 * A model whose batch of 1000 costs more than INFER_FLOPS (25 GFLOP) forward, as
 * cf_model_flops counts, is timed on ten times fewer, batch and calls alike, until a
 * batch costs less: the GPT of models/char-gpt.flux (112 MFLOP a sequence of 64)
 * infers at batch 100 and takes the median of 1000 calls, where a batch of 1000 would
 * take seconds and 10,000 calls half a minute; the LSTM of models/char-rnn.flux
 * (11 MFLOP) keeps 1000 and 10,000.
 * Training copies each batch into the executor, as a data loader does; inference
 * reads each batch where it lies (cf_exec_set_input), as a program passes its arrays.
 * Peak memory is the process's peak resident set after training (getrusage). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "cflux.h"
#include "commands.h"

enum { POOL = 16, LAT_CALLS = 10000, INFER_BATCH = 1000 };
#define INFER_FLOPS 25e9   /* the most a batch of inference may cost, in FLOPs */

/* xorshift64*, so that runs are repeatable */
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float uniform(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (float)((rng * 2685821657736338717ull) >> 40) / (float)(1 << 24);
}

/* Random contents for every input of e: POOL batches of each, cycled by fill(). The
   label input of a classifier gets class indices below `classes`, an input of
   embedding whole numbers below its vocabulary (cf_model_input_classes). */
typedef struct {
    int n;
    float **pool;
    size_t *count;
} inputs;

/* Set when a failure was already reported here, not through cf_last_error. */
static int reported;

static int inputs_make(inputs *in, const cf_model *m, cf_exec *e, int label, int classes)
{
    int n = cf_exec_input_count(e);
    in->pool = calloc((size_t)n + 1, sizeof *in->pool);
    in->count = calloc((size_t)n + 1, sizeof *in->count);
    if (!in->pool || !in->count) goto no_memory;
    in->n = n;
    for (int i = 0; i < in->n; i++) {
        cf_exec_input(e, i, &in->count[i]);
        in->pool[i] = malloc(POOL * in->count[i] * sizeof(float));
        if (!in->pool[i]) goto no_memory;
        int v = i == label ? classes : cf_model_input_classes(m, i);
        for (size_t j = 0; j < POOL * in->count[i]; j++)
            in->pool[i][j] = v ? (float)(int)(uniform() * (float)v) : uniform();
    }
    return 0;
no_memory:
    fprintf(stderr, "error: cflux bench: no memory for %d batches of random inputs\n", POOL);
    reported = 1;
    return -1;
}

static void inputs_fill(const inputs *in, cf_exec *e, long step)
{
    for (int i = 0; i < in->n; i++)
        memcpy(cf_exec_input(e, i, NULL), in->pool[i] + (size_t)(step % POOL) * in->count[i], in->count[i] * sizeof(float));
}

/* The same batch read in place, as a program passes its own arrays (cf_exec_set_input). */
static void inputs_point(const inputs *in, cf_exec *e, long step)
{
    for (int i = 0; i < in->n; i++) cf_exec_set_input(e, i, in->pool[i] + (size_t)(step % POOL) * in->count[i]);
}

static void inputs_free(inputs *in)
{
    for (int i = 0; i < in->n; i++) free(in->pool[i]);
    free(in->pool);
    free(in->count);
    *in = (inputs){0};
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    double train, gflops, infer, latency, rss_mb, peak, generate;   /* generate 0: not a GPT */
    int infer_batch, latency_calls;   /* what infer and latency ran */
} figures;

/* Training steps for `seconds` after a warm-up; samples/s and GFLOP/s. */
static int time_train(cf_model *m, int batch, double seconds, figures *f)
{
    cf_exec *e = cf_bind(m, batch, CF_TRAIN);
    if (!e) return -1;
    int label = cf_exec_input_index(e, "label");
    cf_shape out = cf_model_output_shape(m, 0);
    inputs in = {0};
    int rc = -1;
    if (inputs_make(&in, m, e, label, out.rank ? out.d[out.rank - 1] : 1)) goto out;
    long steps = 0;
    double t0 = now(), flops0 = 0, t = 0;
    int warm = 1;
    for (;;) {
        inputs_fill(&in, e, steps);
        if (cf_forward(e, 1) || cf_backward(e) || cf_update_sgd(e, 0.01f)) goto out;
        steps++;
        t = now() - t0;
        if (warm && (t > 0.3 || steps >= 50)) {   /* warmed up: start the clock */
            warm = 0;
            steps = 0;
            t0 = now();
            flops0 = cf_gemm_flops();
        } else if (!warm && t >= seconds && steps >= 5) {
            break;
        }
    }
    f->train = (double)steps * batch / t;
    f->gflops = (cf_gemm_flops() - flops0) / t * 1e-9;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    f->rss_mb = (double)ru.ru_maxrss / 1024.0;   /* KiB on Linux */
    rc = 0;
out:
    inputs_free(&in);
    cf_exec_free(e);
    return rc;
}

/* 1, 10, 100 or 1000: how many times fewer samples than INFER_BATCH and LAT_CALLS
   inference and latency take for m, so that a batch costs at most INFER_FLOPS. */
static int infer_divisor(cf_model *m)
{
    double forward = 0, backward;
    if (cf_model_flops(m, &forward, &backward)) return 1;   /* not counted: bind says why, if it fails */
    int d = 1;
    while (d < INFER_BATCH && forward * (INFER_BATCH / d) > INFER_FLOPS) d *= 10;
    return d;
}

/* Inference at batch f->infer_batch for `seconds`, then the median batch-1 latency of
   f->latency_calls calls. */
static int time_infer(cf_model *m, double seconds, figures *f)
{
    int batch = f->infer_batch, ncalls = f->latency_calls;
    cf_exec *e = cf_bind(m, batch, 0);
    if (!e) return -1;
    inputs in = {0};
    int rc = -1;
    if (inputs_make(&in, m, e, -1, 0)) goto out;
    long calls = 0;
    double t0 = now(), t;
    for (int i = 0; i < 3; i++)
        if (cf_forward(e, 0)) goto out;   /* warm-up */
    t0 = now();
    do {
        inputs_point(&in, e, calls);
        if (cf_forward(e, 0)) goto out;
        calls++;
        t = now() - t0;
    } while (t < seconds || calls < 3);
    f->infer = (double)calls * batch / t;
    inputs_free(&in);
    cf_exec_free(e);

    e = cf_bind(m, 1, 0);
    if (!e || inputs_make(&in, m, e, -1, 0)) goto out;
    static double lat[LAT_CALLS];
    for (int i = 0; i < ncalls / 10; i++) {   /* warm-up */
        inputs_point(&in, e, i);
        if (cf_forward(e, 0)) goto out;
    }
    for (int i = 0; i < ncalls; i++) {
        inputs_point(&in, e, i);
        double s = now();
        if (cf_forward(e, 0)) goto out;
        lat[i] = now() - s;
    }
    qsort(lat, (size_t)ncalls, sizeof *lat, cmp_double);
    f->latency = lat[ncalls / 2] * 1e6;
    rc = 0;
out:
    inputs_free(&in);
    cf_exec_free(e);
    return rc;
}

/* A class drawn from the probabilities p[0 .. n). */
static int draw(const float *p, int n)
{
    float u = uniform(), sum = 0;
    for (int i = 0; i < n; i++)
        if ((sum += p[i]) > u) return i;
    return n - 1;
}

/* Characters/s of the cached form of the model in path, generating at batch 1 for
   `seconds` (its own random weights: the speed is the same); 0 when it has no causal
   attention to cache. When the window fills, it goes on from its last quarter, read in
   one forward of the form that reads T / 4 positions, as cflux sample does. 0 or -1. */
static int time_generate(const char *path, double seconds, figures *f)
{
    cf_model *c = cf_model_load_cached(path), *pc = NULL;
    if (!c) return strstr(cf_last_error(), "no causal attention to cache") ? 0 : -1;
    int rc = -1, T = cf_model_cache_size(c), V = cf_model_output_shape(c, 0).d[2], K = T / 4;
    float *w = malloc((size_t)T * sizeof *w);
    cf_exec *e = w ? cf_bind(c, 1, 0) : NULL, *pe = NULL;
    if (!e) goto out;
    if (K > 1) {
        if (!(pc = cf_model_load_cached_n(path, K)) || cf_model_init_params(pc)) goto out;
        for (int i = 0; i < cf_model_param_count(c); i++)   /* the same weights */
            memcpy(cf_model_param_data(pc, i), cf_model_param_data(c, i),
                   cf_shape_count(cf_model_param_shape(c, i)) * sizeof(float));
        if (!(pe = cf_bind(pc, 1, 0))) goto out;
    }
    float *x = cf_exec_input(e, 0, NULL);
    const float *p = cf_exec_output(e, 0, NULL);
    long chars = 0;
    int n = 0, next = 0;
    double t0 = now(), t;
    do {
        if (n == T) {   /* full: go on from the last quarter, read again */
            memmove(w, w + T - K, (size_t)K * sizeof *w);
            n = K;
            cf_exec_reset_state(pe ? pe : e);
            if (pe) {
                memcpy(cf_exec_input(pe, 0, NULL), w, (size_t)K * sizeof *w);
                if (cf_forward(pe, 0) || cf_exec_state_copy(pe, e)) goto out;
            } else {
                for (int i = 0; i < n; i++) {
                    x[0] = w[i];
                    if (cf_forward(e, 0)) goto out;
                }
            }
        }
        x[0] = w[n++] = (float)next;
        if (cf_forward(e, 0)) goto out;
        next = draw(p, V);
        chars++;
        t = now() - t0;
    } while (t < seconds || chars < 2 * T);
    f->generate = (double)chars / t;
    rc = 0;
out:
    free(w);
    cf_exec_free(pe);
    cf_model_free(pc);
    cf_exec_free(e);
    cf_model_free(c);
    return rc;
}

/* --int8: m quantized as cflux quantize does by default (static inputs), calibrated on
   1000 samples drawn as the timed inputs are. 0 or -1. */
static int quantize_on_random(cf_model *m)
{
    enum { N = 1000 };
    cf_shape s = cf_model_input_shape(m, 0);   /* (B, ...): a sample's is what follows B */
    if (s.rank > 1 && s.d[0] < 0) {
        for (int i = 1; i < s.rank; i++) s.d[i - 1] = s.d[i];
        s.rank--;
    }
    size_t per = cf_shape_count(s);
    int v = cf_model_input_classes(m, 0);
    float *x = malloc(N * per * sizeof *x), *y = calloc(N, sizeof *y);
    cf_dataset *d = NULL;
    int rc = -1;
    if (x && y) {
        for (size_t i = 0; i < N * per; i++) x[i] = v ? (float)(int)(uniform() * (float)v) : uniform();
        d = cf_dataset_from_arrays(x, s, y, 1, N);
    }
    if (d) rc = cf_model_quantize(m, d, NULL) < 0 ? -1 : 0;
    else if (x && y) rc = -1;   /* the message is set */
    else fprintf(stderr, "error: cflux bench: no memory for the calibration samples\n"), reported = 1;
    cf_dataset_free(d);
    free(x);
    free(y);
    return rc;
}

int cmd_bench(const args *a)
{
    if (apply_common(a)) return 1;
    int batch = isnan(a->batch) ? 64 : (int)a->batch;
    double seconds = isnan(a->seconds) ? 3.0 : a->seconds;
    cf_loss loss = 0;
    if (a->loss) {
        if (!strcmp(a->loss, "xent")) loss = CF_LOSS_XENT;
        else if (!strcmp(a->loss, "mse")) loss = CF_LOSS_MSE;
        else {
            fprintf(stderr, "cflux bench: --loss is xent or mse, not '%s'\n", a->loss);
            return 2;
        }
    }
    cf_model *m = cf_model_load(a->pos[0]);
    if (!m) return fail();
    int rc = 1;
    if (cf_model_init_params(m) || (a->params && cf_model_load_params(m, a->params))) goto out;
    /* the loss training would use: cross-entropy for a classifier, else MSE */
    if (!loss) loss = cf_model_add_loss(m, CF_LOSS_XENT) == 0 ? CF_LOSS_XENT : CF_LOSS_MSE;
    if (loss == CF_LOSS_MSE || a->loss) {
        if (cf_model_has_loss(m) != (int)loss && cf_model_add_loss(m, loss)) goto out;
    }
    figures f = {0};
    int divisor = infer_divisor(m);
    f.infer_batch = INFER_BATCH / divisor;
    f.latency_calls = LAT_CALLS / divisor;
    f.peak = cf_cpu_peak_gflops();
    /* inference and latency run the 8-bit products, if any, before training (float32)
       updates the weights and so drops the quantization */
    if (a->int8 && !cf_model_quantized_count(m) && quantize_on_random(m)) goto out;
    int int8 = cf_model_quantized_count(m);
    if (int8 ? time_infer(m, seconds, &f) || time_train(m, batch, seconds, &f)
             : time_train(m, batch, seconds, &f) || time_infer(m, seconds, &f))
        goto out;
    if (!int8 && time_generate(a->pos[0], seconds, &f)) goto out;
    int threads = cf_threads();
    double peak = f.peak * threads;
    if (a->json) {
        printf("{\"model\": ");
        json_string(stdout, a->pos[0]);
        printf(", \"version\": \"%s\", \"batch\": %d, \"threads\": %d, \"seconds\": %g,\n", cf_version(), batch, threads,
               seconds);
        printf(" \"train_samples_per_sec\": %.1f, \"train_gflops\": %.2f, \"peak_gflops\": %.2f, "
               "\"peak_gflops_per_core\": %.2f,\n", f.train, f.gflops, peak, f.peak);
        printf(" \"infer_batch\": %d, \"infer_samples_per_sec\": %.1f, \"latency_us\": %.3f, \"latency_calls\": %d,\n",
               f.infer_batch, f.infer, f.latency, f.latency_calls);
        if (f.generate > 0) printf(" \"generate_chars_per_sec\": %.1f,", f.generate);
        printf(" \"peak_rss_mb\": %.1f, \"cpu\": ", f.rss_mb);
        json_string(stdout, cf_cpu_name());
        printf(", \"isa\": ");
        json_string(stdout, cf_cpu_isa());
        printf(",\n \"kernels\": {\"gemm\": ");
        json_string(stdout, cf_gemm_name());
        printf(", \"why\": ");
        json_string(stdout, cf_gemm_why());
        printf(", \"int8\": ");
        json_string(stdout, cf_int8_kernel());
        printf(", \"int8_why\": ");
        json_string(stdout, cf_int8_kernel_why());
        printf("}, \"int8_products\": %d}\n", int8);
    } else {
        printf("%s: batch %d, %d thread%s, %s (%s)\n", a->pos[0], batch, threads, threads == 1 ? "" : "s",
               cf_cpu_name(), cf_cpu_isa());
        printf("  train     %10.0f samples/s   matrix products %.1f GFLOP/s, %.0f%% of the measured peak\n"
               "                                  (%.1f GFLOP/s a core x %d)\n",
               f.train, f.gflops, 100 * f.gflops / peak, f.peak, threads);
        printf("  infer     %10.0f samples/s   at batch %d\n", f.infer, f.infer_batch);
        printf("  latency   %10.2f us          batch 1, median of %d calls\n", f.latency, f.latency_calls);
        if (f.generate > 0)
            printf("  generate  %10.0f chars/s     batch 1, a character at a time against the cache of keys and values\n",
                   f.generate);
        printf("  memory    %10.1f MB          peak resident while training\n", f.rss_mb);
        printf("  kernels   %s: %s\n", cf_gemm_name(), cf_gemm_why());
        if (int8)
            printf("  int8      %d product%s in 8-bit integers for infer and latency, kernel %s: %s\n", int8,
                   int8 == 1 ? "" : "s", cf_int8_kernel(), cf_int8_kernel_why());
    }
    rc = 0;
out:
    if (rc && !reported) fail();
    cf_model_free(m);
    return rc;
}

int cmd_version(const args *a)
{
    if (a && a->json) {
        printf("{\"version\": \"%s\", \"threads\": %d, \"cpu\": ", cf_version(), cf_threads());
        json_string(stdout, cf_cpu_name());
        printf(", \"isa\": ");
        json_string(stdout, cf_cpu_isa());
        printf(", \"kernels\": {\"gemm\": ");
        json_string(stdout, cf_gemm_name());
        printf(", \"why\": ");
        json_string(stdout, cf_gemm_why());
        printf(", \"int8\": ");
        json_string(stdout, cf_int8_kernel());
        printf(", \"int8_why\": ");
        json_string(stdout, cf_int8_kernel_why());
        printf("}}\n");
        return 0;
    }
    printf("cflux %s (matrix products: %s, threads: %d)\n", cf_version(), cf_gemm_name(), cf_threads());
    printf("cpu: %s (%s)\n", cf_cpu_name(), cf_cpu_isa());
    printf("kernels: %s, because %s\n", cf_gemm_name(), cf_gemm_why());
    printf("int8 kernels: %s, because %s\n", cf_int8_kernel(), cf_int8_kernel_why());
    return 0;
}
