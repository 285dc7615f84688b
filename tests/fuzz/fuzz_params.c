/* fuzz_params.c - libFuzzer target over loading parameter files, quantized ones above
 * all (int8 weights "NAME" as I8, "NAME.qscale", "NAME.qinput": docs/quantization.md).
 *
 * Built by `make fuzz` (CMake with -DCFLUX_FUZZ=ON and clang); by hand:
 *   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCFLUX_FUZZ=ON -DCFLUX_BLAS=OFF
 *   cmake --build build-fuzz --target fuzz_params
 *   sh tests/fuzz/run.sh build-fuzz/fuzz_params tests/fuzz/corpus_params 60
 * The seed corpus is made by tests/fuzz/make_params_corpus.c (how: its header).
 *
 * Each input that parses as a safetensors file (cf_st_parse_ex, strict, as a file is
 * read) is loaded (cf_model_params_from) into an MLP and into a small CNN (a
 * convolution with a batch norm, relu and max-pooling after it, then an Affine layer),
 * built afresh for each input, three times in turn into the same model: strictly, with
 * CF_LOAD_PARTIAL, and with CF_LOAD_PARTIAL | CF_LOAD_MATCHING (so a load may meet the
 * quantization an earlier one left). Each load either succeeds or fails with a message
 * that starts with "error: fuzz: ", and a load that fails leaves the parameters and the
 * quantization as they were. A model that a load left quantized is bound for inference
 * (the 8-bit products) and run on fixed inputs: the bind and the forward pass must
 * succeed (the outputs may be anything, NaN included; a crash may not). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/params_io.h"
#include "core/safetensors.h"

#define BATCH 2

static const char *const sources[2] = {
    "model = Chain(Input(8), Affine(16), relu, Affine(3))\n",
    "model = Chain(Input(2, 5, 5), Conv2D(3, 3, pad = 1), BatchNorm(), relu, MaxPool(2), flatten, Affine(2))\n",
};

static float inputs[BATCH * 2 * 5 * 5]; /* enough for either model's batch */
static float saved[1024];               /* a model's parameters before a load */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    cf_set_threads(1); /* the same path for every input */
    cf_set_memory_limit((size_t)64 << 20);
    for (size_t i = 0; i < sizeof inputs / sizeof *inputs; i++)
        inputs[i] = 2.0f * (float)((i * 37) % 23) / 23.0f - 0.7f;
    return 0;
}

/* Every parameter value of m in saved[], in order; the count. */
static size_t snapshot(cf_model *m, float *to)
{
    size_t k = 0;
    for (int i = 0; i < cf_model_param_count(m); i++) {
        const float *p = cf_model_param_data(m, i);
        size_t n = cf_shape_count(cf_model_param_shape(m, i));
        if (k + n > sizeof saved / sizeof *saved) abort(); /* the models are small */
        if (to) memcpy(to + k, p, n * sizeof *p);
        else if (memcmp(saved + k, p, n * sizeof *p)) return (size_t)-1;
        k += n;
    }
    return k;
}

/* A quantized model bound for inference and run once. */
static void run(cf_model *m)
{
    cf_exec *e = cf_bind(m, BATCH, 0);
    if (!e) {
        fprintf(stderr, "fuzz_params: a file that loads does not bind: %s\n", cf_last_error());
        abort();
    }
    size_t n = 0, k;
    float *x = cf_exec_input(e, 0, &n);
    if (!x || n > sizeof inputs / sizeof *inputs) abort();
    memcpy(x, inputs, n * sizeof *x);
    if (cf_forward(e, 0) != 0) {
        fprintf(stderr, "fuzz_params: a file that loads does not run: %s\n", cf_last_error());
        abort();
    }
    const float *y = cf_exec_output(e, 0, &n);
    volatile float sink = 0;
    for (k = 0; y && k < n; k++) sink += y[k]; /* every output is readable */
    (void)sink;
    cf_exec_free(e);
}

static void load(const cf_st_file *f, int which)
{
    static const unsigned flags[3] = {0, CF_LOAD_PARTIAL, CF_LOAD_PARTIAL | CF_LOAD_MATCHING};
    cf_model *m = cf_model_parse(sources[which], "fuzz.flux");
    if (!m || cf_model_init_params(m)) abort();
    for (int i = 0; i < 3; i++) {
        int quantized = cf_model_quantized_count(m);
        snapshot(m, saved);
        int rc = cf_model_params_from(m, f, "fuzz", flags[i]);
        if (rc == -1) {
            if (strncmp(cf_last_error(), "error: fuzz: ", 13)) abort(); /* every failure explains itself */
            if (snapshot(m, NULL) == (size_t)-1 || cf_model_quantized_count(m) != quantized)
                abort(); /* and changes nothing */
            continue;
        }
        if (rc != 0) abort();
        if (cf_model_quantized_count(m) > 0) run(m);
    }
    cf_model_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cf_st_file *f = cf_st_parse_ex(data, size, "fuzz", 0);
    if (!f) {
        if (strncmp(cf_last_error(), "error: fuzz: ", 13)) abort();
        return 0;
    }
    load(f, 0);
    load(f, 1);
    cf_st_free(f);
    return 0;
}
