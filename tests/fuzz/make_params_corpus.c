/* make_params_corpus.c - writes tests/fuzz/corpus_params, fuzz_params's seeds: parameter
 * files of the fuzzer's two models (float32, and quantized with dynamic and with
 * static inputs), a few quantized files that a load must refuse (a scale of 0, a count
 * of scales that does not fit, a zero point of 200, an int8 tensor that is no matrix or
 * kernels, a weight of -128, no scales, the MLP's (1, 16) bias as int8: a matrix that
 * no product reads as its weights). Each file is loaded into a fresh model once written, and the result
 * printed; a file that does not do what it is for fails the run. Not in any default
 * build: the fuzz build has it as a target built only when asked,
 *
 *   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCFLUX_FUZZ=ON -DCFLUX_BLAS=OFF
 *   cmake --build build-fuzz --target make_params_corpus
 *   build-fuzz/make_params_corpus tests/fuzz/corpus_params
 *
 * or compile it against a built library, with the libraries that build links (here a
 * release build with OpenBLAS and Open MPI):
 *
 *   clang -O1 -Iinclude -Isrc tests/fuzz/make_params_corpus.c build/libcflux.a -lopenblas -lmpi \
 *       -lcjson -lpng -ljpeg -lz -lm -lpthread -o /tmp/make_params_corpus
 *   /tmp/make_params_corpus tests/fuzz/corpus_params
 *
 * The files are the same bits each time (the models' parameters are set here). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/safetensors.h"

static const char *const sources[2] = {
    "model = Chain(Input(8), Affine(16), relu, Affine(3))\n",
    "model = Chain(Input(2, 5, 5), Conv2D(3, 3, pad = 1), BatchNorm(), relu, MaxPool(2), flatten, Affine(2))\n",
};
static const char *const names[2] = {"mlp", "cnn"};

static const char *dir;
static int failed;

static const char *at(const char *file)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return path;
}

static void fail(const char *what)
{
    fprintf(stderr, "make_params_corpus: %s: %s\n", what, cf_last_error());
    failed = 1;
}

/* Model `which` with fixed parameters (and a batch norm's running statistics). */
static cf_model *model(int which)
{
    cf_model *m = cf_model_parse(sources[which], "fuzz.flux");
    if (!m || cf_model_init_params(m)) {
        fail("model");
        exit(1);
    }
    for (int i = 0; i < cf_model_param_count(m); i++) {
        float *p = cf_model_param_data(m, i);
        size_t n = cf_shape_count(cf_model_param_shape(m, i));
        int gamma = strstr(cf_model_param_name(m, i), "γ") != NULL;
        for (size_t k = 0; k < n; k++) p[k] = 0.4f * sinf((float)(7 * k + 3 * i)) + (gamma ? 1.0f : 0.0f);
    }
    for (int i = 0; i < cf_model_state_count(m); i++) { /* running mean, then variance */
        float *p = cf_model_state_data(m, i);
        size_t n = cf_shape_count(cf_model_state_shape(m, i));
        for (size_t k = 0; k < n; k++) p[k] = i ? 0.5f + 0.1f * (float)k : 0.2f * (float)k - 0.3f;
    }
    return m;
}

/* Whether file loads into a fresh model `which`: it must (want 1) or must not (0). */
static void check(int which, const char *file, int want)
{
    cf_model *m = model(which);
    int rc = cf_model_load_params(m, at(file));
    if (rc == 0) printf("%-24s loads, %d products quantized\n", file, cf_model_quantized_count(m));
    else printf("%-24s refused: %s\n", file, cf_last_error());
    if ((rc == 0) != want) {
        fprintf(stderr, "make_params_corpus: %s: %s\n", file, want ? "refused" : "loads");
        failed = 1;
    }
    cf_model_free(m);
}

/* Model `which` quantized (mode CF_QUANT_DYNAMIC or CF_QUANT_STATIC; 0: float32),
 * saved as file. */
static void valid(int which, int mode, const char *file)
{
    enum { N = 16 };
    float x[N * 2 * 5 * 5], y[N] = {0};
    for (size_t i = 0; i < sizeof x / sizeof *x; i++) x[i] = 1.5f * sinf(0.71f * (float)i) + 0.2f;
    cf_dataset *d = cf_dataset_from_arrays(x, which ? CF_SHAPE(2, 5, 5) : CF_SHAPE(8), y, 1, N);
    cf_model *m = model(which);
    if (!d || (mode && cf_model_quantize(m, d, &(cf_quantize_options){mode, 2, 8}) != 2) ||
        cf_model_save_params(m, at(file)))
        fail(file);
    cf_model_free(m);
    cf_dataset_free(d);
    check(which, file, 1);
}

/* A tensor to put in a file: name, dtype, count values of data (count < 0: the
 * tensor's own shape; data NULL: the tensor removed). */
typedef struct change {
    const char *name, *dtype;
    int count;
    const float *data;
} change;

/* Model `which` quantized (dynamic) and saved as file, with each of the n changes'
 * tensors replaced, or added; then checked to load (want 1) or be refused (0). */
static void altered(int which, const char *file, int want, int n, const change *c)
{
    cf_model *m = model(which);
    if (cf_model_quantize(m, NULL, NULL) != 2 || cf_model_save_params(m, at(file))) fail(file);
    cf_model_free(m);
    cf_st_file *f = cf_st_read(at(file));
    if (!f) {
        fail(file);
        return;
    }
    cf_st_tensor t[32];
    int k = 0;
    for (int i = 0; i < cf_st_count(f) && k < 30; i++) t[k++] = *cf_st_get(f, i);
    for (int j = 0; j < n; j++) {
        int i = 0;
        while (i < k && strcmp(t[i].name, c[j].name)) i++;
        if (!c[j].data) { /* removed */
            if (i < k) memmove(t + i, t + i + 1, (size_t)(--k - i) * sizeof *t);
            continue;
        }
        if (i == k) t[k++] = (cf_st_tensor){.name = c[j].name, .rank = 1, .shape = {c[j].count}};
        t[i].dtype = c[j].dtype, t[i].data = c[j].data;
        if (c[j].count >= 0) t[i].count = (size_t)c[j].count, t[i].rank = 1, t[i].shape[0] = c[j].count;
    }
    const char *keys[] = {"format", "format_version"}, *vals[] = {"cflux-params", "1"};
    if (cf_st_write(at(file), k, t, 2, keys, vals)) fail(file);
    cf_st_free(f);
    check(which, file, want);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_params_corpus DIR   (tests/fuzz/corpus_params)\n");
        return 2;
    }
    dir = argv[1];
    char file[64];
    for (int which = 0; which < 2; which++) {
        snprintf(file, sizeof file, "%s_float32", names[which]);
        valid(which, 0, file);
        snprintf(file, sizeof file, "%s_dynamic", names[which]);
        valid(which, CF_QUANT_DYNAMIC, file);
        snprintf(file, sizeof file, "%s_static", names[which]);
        valid(which, CF_QUANT_STATIC, file);
    }
    float zero[16] = {0}, ok[16], ones[16], in_zero200[2] = {0.05f, 200}, in_ok[2] = {0.05f, 60}, bad_weight[128];
    for (int i = 0; i < 16; i++) ok[i] = 0.01f, ones[i] = 1;
    for (int i = 0; i < 128; i++) bad_weight[i] = i == 77 ? -128 : 1;
    /* refused */
    altered(0, "bad_mlp_zero_scale", 0, 1, &(change){"1.W.qscale", "F32", 16, zero});
    altered(0, "bad_mlp_scale_count", 0, 1, &(change){"3.W.qscale", "F32", 4, ok});
    altered(0, "bad_mlp_qinput_zero200", 0, 1, &(change){"1.W.qinput", "F32", 2, in_zero200});
    altered(0, "bad_mlp_i8_bias", 0, 1, &(change){"1.b", "I8", 16, ones});
    altered(0, "bad_mlp_weight_-128", 0, 1, &(change){"1.W", "I8", -1, bad_weight});
    altered(0, "bad_mlp_no_qscale", 0, 1, &(change){"3.W.qscale", NULL, 0, NULL});
    altered(1, "bad_cnn_zero_scale", 0, 1, &(change){"1.K.qscale", "F32", 3, zero});
    altered(1, "bad_cnn_scale_count", 0, 1, &(change){"1.K.qscale", "F32", 2, ok});
    altered(1, "bad_cnn_qinput_zero200", 0, 2,
            (change[]){{"6.W.qinput", "F32", 2, in_zero200}, {"1.K.qinput", "F32", 2, in_ok}});
    altered(1, "bad_cnn_i8_gamma", 0, 1, &(change){"2.γ", "I8", 3, ones});
    /* refused: the MLP's bias (1, 16) is a matrix, but no product reads it as its weights */
    altered(0, "bad_mlp_i8_bias_matrix", 0, 2, (change[]){{"1.b", "I8", -1, ones}, {"1.b.qscale", "F32", 16, ok}});
    if (failed) return 1;
    printf("make_params_corpus: wrote %s\n", dir);
    return 0;
}
