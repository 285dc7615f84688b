/* test_quant.c - quantized models (cf_model_quantize, core/quant.h, the quantize
 * pass, ops/qaffine.c): an inference bind runs each Affine layer as the 8-bit product,
 * bitwise what the integer reference gives from the model's own integers and scales,
 * at 1 and 2 threads; training binds and cf_model_use_quantized(m, 0) run float32 on
 * the dequantized weights; static calibration fixes each input's range; a saved file
 * loads back into the same bits; and every malformed quantized file is refused,
 * naming the tensor, with the model left as it was. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/graph.h"
#include "core/quant.h"
#include "core/safetensors.h"
#include "qref.h"
#include "test.h"
#include "tmpdir.h"

#define SRC "model = Chain(Input(8), Affine(16), relu, Affine(3))\n"
enum { B = 7, D = 8, H = 16, O = 3 };

static float xs[64 * D];

static cf_model *fresh(void)
{
    cf_model *m = cf_model_parse(SRC, "q.flux");
    cf_model_set_seed(m, 3);
    if (!m || cf_model_init_params(m)) return NULL;
    for (int i = 0; i < 4; i++) {   /* biases too, so that the epilogue adds something */
        float *p = cf_model_param_data(m, i);
        size_t n = cf_shape_count(cf_model_param_shape(m, i));
        for (size_t k = 0; k < n; k++) p[k] = (i % 2 ? 0.1f : 1.0f) * sinf((float)(7 * k + i));
    }
    return m;
}

/* Output 0 of a bind of m at batch B with flags on the first B samples of xs. */
static void run(cf_model *m, unsigned flags, float *out)
{
    cf_exec *e = cf_bind(m, B, flags);
    CHECK(e != NULL);
    if (!e) return;
    memcpy(cf_exec_input(e, 0, NULL), xs, sizeof(float) * B * D);
    CHECK(cf_forward(e, 0) == 0);
    memcpy(out, cf_exec_output(e, 0, NULL), sizeof(float) * B * O);
    cf_exec_free(e);
}

/* What the two quantized layers give, from m's integers and scales, by qref.h. */
static void by_reference(cf_model *m, float *out)
{
    float h[B * H];
    for (int l = 0; l < 2; l++) {
        int W = cf_model_param_index(m, l ? "3.W" : "1.W"), bias = W + 1;
        const cf_qparam *qp = cf_model_qparam(m, W);
        cf_qact qa = {!qp->act_static, qp->act_scale, qp->act_zero};
        reference(B, l ? O : H, l ? H : D, l ? h : xs, qp->q, qp->scale, &qa, cf_model_param_data(m, bias), !l,
                  l ? out : h);
    }
}

static int same_bits(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof *a) == 0; }

TEST(dynamic_runs_the_integer_product)
{
    cf_model *m = fresh();
    float f32[B * O], q8[B * O], ref[B * O], train[B * O], off[B * O], two[B * O];
    run(m, 0, f32);
    CHECK(cf_model_quantize(m, NULL, &(cf_quantize_options){CF_QUANT_DYNAMIC, 0, 0}) == 2);
    CHECK(cf_model_quantized_count(m) == 2);
    cf_set_threads(1);
    run(m, 0, q8);
    by_reference(m, ref);
    CHECK(same_bits(q8, ref, B * O));
    cf_set_threads(2);
    run(m, 0, two);
    CHECK(same_bits(two, q8, B * O));
    cf_set_threads(0);
    for (int i = 0; i < B * O; i++) CHECK_NEAR(q8[i], f32[i], 0.05 * (1 + fabs(f32[i])));
    /* the dequantized float32 model: training binds, and quantization switched off */
    run(m, CF_TRAIN, train);
    cf_model_use_quantized(m, 0);
    run(m, 0, off);
    cf_model_use_quantized(m, 1);
    CHECK(same_bits(train, off, B * O));
    CHECK(!same_bits(train, q8, B * O));
    /* and the float parameters are the integers times their scales */
    const cf_qparam *qp = cf_model_qparam(m, 0);
    CHECK(cf_model_param_data(m, 0)[5 * H + 3] == qp->q[5 * H + 3] * qp->scale[3]);
    cf_model_free(m);
}

TEST(static_calibration_fixes_the_range)
{
    cf_model *m = fresh();
    float y[64] = {0}, q8[B * O], ref[B * O];
    cf_dataset *d = cf_dataset_from_arrays(xs, CF_SHAPE(D), y, 1, 64);
    CHECK(cf_model_quantize(m, NULL, &(cf_quantize_options){CF_QUANT_STATIC, 0, 0}) == -1);
    CHECK_HAS(cf_last_error(), "give the data");
    CHECK(cf_model_quantize(m, d, &(cf_quantize_options){CF_QUANT_STATIC, 4, 16}) == 2);
    const cf_qparam *qp = cf_model_qparam(m, 0);
    float lo = 0, hi = 0;
    for (int i = 0; i < 64 * D; i++) lo = fminf(lo, xs[i]), hi = fmaxf(hi, xs[i]);
    float s;
    int z;
    cf_qact_range(lo, hi, &s, &z);
    CHECK(qp->act_static && qp->act_scale == s && qp->act_zero == z);
    run(m, 0, q8);
    by_reference(m, ref);
    CHECK(same_bits(q8, ref, B * O));
    cf_dataset_free(d);
    cf_model_free(m);
}

TEST(saved_file_loads_back)
{
    cf_model *m = fresh();
    float y[64] = {0}, a[B * O], b[B * O];
    cf_dataset *d = cf_dataset_from_arrays(xs, CF_SHAPE(D), y, 1, 64);
    CHECK(cf_model_quantize(m, d, &(cf_quantize_options){CF_QUANT_STATIC, 4, 16}) == 2);
    run(m, 0, a);
    CHECK(cf_model_save_params(m, tmp("q.safetensors")) == 0);
    cf_st_file *f = cf_st_read(tmp("q.safetensors"));
    CHECK(f && !strcmp(cf_st_find(f, "1.W")->dtype, "I8") && !strcmp(cf_st_find(f, "1.b")->dtype, "F32"));
    CHECK(f && cf_st_find(f, "3.W.qscale")->count == O && cf_st_find(f, "1.W.qinput")->count == 2);
    cf_st_free(f);
    cf_model *n = fresh();
    CHECK(cf_model_load_params(n, tmp("q.safetensors")) == 0);
    CHECK(cf_model_quantized_count(n) == 2);
    run(n, 0, b);
    CHECK(same_bits(a, b, B * O));
    /* the float32 checkpoint loaded again drops the quantization */
    cf_model *plain = fresh();
    CHECK(cf_model_save_params(plain, tmp("f.safetensors")) == 0);
    CHECK(cf_model_load_params(n, tmp("f.safetensors")) == 0 && cf_model_quantized_count(n) == 0);
    cf_model_free(plain);
    cf_model_free(n);
    cf_dataset_free(d);
    cf_model_free(m);
}

/* An update of the parameters drops the quantization: an executor bound before then
   runs the float32 product of the trained weights. */
TEST(training_drops_quantization)
{
    cf_model *m = fresh();
    CHECK(cf_model_quantize(m, NULL, NULL) == 2);
    cf_exec *old = cf_bind(m, B, 0), *t = cf_bind(m, B, CF_TRAIN);
    CHECK(old && t);
    if (!old || !t) return;
    memcpy(cf_exec_input(t, 0, NULL), xs, sizeof(float) * B * D);
    float *dy = cf_exec_output_grad(t, 0, NULL), a[B * O], b[B * O];
    for (int i = 0; i < B * O; i++) dy[i] = 0.1f * (float)(i % 5);
    CHECK(cf_forward(t, 1) == 0 && cf_backward(t) == 0 && cf_update_sgd(t, 0.5f) == 0);
    CHECK(cf_model_quantized_count(m) == 0);
    memcpy(cf_exec_input(old, 0, NULL), xs, sizeof(float) * B * D);
    CHECK(cf_forward(old, 0) == 0);
    memcpy(a, cf_exec_output(old, 0, NULL), sizeof a);
    run(m, 0, b);   /* a bind now: float32 throughout */
    CHECK(same_bits(a, b, B * O));
    cf_exec_free(old);
    cf_exec_free(t);
    cf_model_free(m);
}

/* A convolution (bias, batch norm, relu and 2x2 max-pooling after it, folded) then an
   Affine layer, against the plain computation from the model's integers; CC input
   channels: 3 (the direct convolution, where the kernels have one) or 6 (the rows of
   patches gathered). */
#define CSRC "model = Chain(Input(%d, 6, 5), Conv2D(4, 3, pad = 1), BatchNorm(), relu, MaxPool(2), flatten, Affine(2))\n"
enum { CB = 5, CMAX = 6, CH = 6, CW = 5, CO = 4, PH = 3, PW = 2, FEAT = CO * PH * PW };
static int CC = 3;

static cf_model *fresh_conv(void)
{
    char src[256];
    snprintf(src, sizeof src, CSRC, CC);
    cf_model *m = cf_model_parse(src, "qc.flux");
    if (!m || cf_model_init_params(m)) return NULL;
    for (int i = 0; i < cf_model_param_count(m); i++) {
        float *p = cf_model_param_data(m, i);
        size_t n = cf_shape_count(cf_model_param_shape(m, i));
        for (size_t k = 0; k < n; k++) p[k] = 0.3f * sinf((float)(5 * k + 3 * i)) + (i == 2 ? 1 : 0);   /* 2: γ */
    }
    for (int i = 0; i < cf_model_state_count(m); i++) {   /* running mean and variance */
        float *p = cf_model_state_data(m, i);
        for (int k = 0; k < CO; k++) p[k] = i ? 0.5f + 0.1f * (float)k : 0.2f * (float)k - 0.3f;
    }
    return m;
}

static void conv_by_reference(cf_model *m, const float *x, float *out)
{
    int K = cf_model_param_index(m, "1.K"), bi = cf_model_param_index(m, "1.b");
    const cf_qparam *qp = cf_model_qparam(m, K);
    const float *b = cf_model_param_data(m, bi), *gamma = cf_model_param_data(m, cf_model_param_index(m, "2.γ")),
                *beta = cf_model_param_data(m, cf_model_param_index(m, "2.β")),
                *mean = cf_model_state_data(m, cf_model_state_index(m, "2.mean")),
                *var = cf_model_state_data(m, cf_model_state_index(m, "2.var"));
    float feat[CB * FEAT];
    for (int n = 0; n < CB; n++) {
        const float *xs1 = x + n * CC * CH * CW;
        float s = qp->act_scale, lo = 0, hi = 0;
        int z = qp->act_zero;
        for (int i = 0; i < CC * CH * CW; i++) lo = fminf(lo, xs1[i]), hi = fmaxf(hi, xs1[i]);
        if (!qp->act_static) cf_qact_range(lo, hi, &s, &z);
        int q[CMAX][CH + 2][CW + 2];
        for (int c = 0; c < CC; c++)
            for (int i = 0; i < CH + 2; i++)
                for (int j = 0; j < CW + 2; j++) {
                    q[c][i][j] = z;
                    if (i < 1 || i > CH || j < 1 || j > CW) continue;
                    float v = xs1[(c * CH + i - 1) * CW + j - 1] * (1 / s);
                    v = v > -z ? v : (float)-z;
                    v = v < CF_QA_MAX - z ? v : (float)(CF_QA_MAX - z);
                    q[c][i][j] = (int)nearbyintf(v) + z;
                }
        float y[CO][CH][CW];
        for (int o = 0; o < CO; o++) {
            float a = gamma[o] / sqrtf(var[o] + 1e-5f), cs = qp->scale[o] * a, bias = b[o] * a + (beta[o] - mean[o] * a);
            long sumw = 0;
            for (int t = 0; t < CC * 9; t++) sumw += qp->q[o * CC * 9 + t];
            for (int i = 0; i < CH; i++)
                for (int j = 0; j < CW; j++) {
                    long acc = 0;
                    for (int c = 0; c < CC; c++)
                        for (int ki = 0; ki < 3; ki++)
                            for (int kj = 0; kj < 3; kj++) acc += (long)q[c][i + ki][j + kj] * qp->q[((o * CC + c) * 3 + ki) * 3 + kj];
                    float v = (float)(int)(acc - z * sumw) * (s * cs) + bias;
                    y[o][i][j] = v > 0 ? v : 0;
                }
        }
        for (int o = 0; o < CO; o++)
            for (int i = 0; i < PH; i++)
                for (int j = 0; j < PW; j++) {
                    float mx = y[o][2 * i][2 * j];
                    mx = y[o][2 * i][2 * j + 1] > mx ? y[o][2 * i][2 * j + 1] : mx;
                    mx = y[o][2 * i + 1][2 * j] > mx ? y[o][2 * i + 1][2 * j] : mx;
                    mx = y[o][2 * i + 1][2 * j + 1] > mx ? y[o][2 * i + 1][2 * j + 1] : mx;
                    feat[n * FEAT + (o * PH + i) * PW + j] = mx;
                }
    }
    int W = cf_model_param_index(m, "6.W");
    const cf_qparam *qa = cf_model_qparam(m, W);
    cf_qact act = {!qa->act_static, qa->act_scale, qa->act_zero};
    reference(CB, 2, FEAT, feat, qa->q, qa->scale, &act, cf_model_param_data(m, W + 1), 0, out);
}

TEST(conv_runs_the_integer_product)
{
    float x[CB * CMAX * CH * CW], y[64] = {0}, f32[CB * 2], ref[CB * 2], got[CB * 2];
    for (int i = 0; i < CB * CMAX * CH * CW; i++) x[i] = 1.5f * sinf(0.71f * (float)i) + 0.2f;
    for (CC = 3; CC <= CMAX; CC += 3) {
        size_t bytes = sizeof(float) * CB * (size_t)CC * CH * CW;
        cf_dataset *d = cf_dataset_from_arrays(x, CF_SHAPE(CC, CH, CW), y, 1, CB);
        for (int mode = CF_QUANT_DYNAMIC; mode <= CF_QUANT_STATIC; mode++)
            for (int threads = 1; threads <= 2; threads++) {
                cf_set_threads(threads);
                cf_model *m = fresh_conv();
                cf_exec *e = cf_bind(m, CB, 0);
                memcpy(cf_exec_input(e, 0, NULL), x, bytes);
                CHECK(cf_forward(e, 0) == 0);
                memcpy(f32, cf_exec_output(e, 0, NULL), sizeof f32);
                cf_exec_free(e);
                CHECK(cf_model_quantize(m, d, &(cf_quantize_options){mode, 1, CB}) == 2);
                CHECK(cf_model_qparam(m, cf_model_param_index(m, "1.K"))->channels == CO);
                e = cf_bind(m, CB, 0);
                memcpy(cf_exec_input(e, 0, NULL), x, bytes);
                CHECK(cf_forward(e, 0) == 0);
                memcpy(got, cf_exec_output(e, 0, NULL), sizeof got);
                cf_exec_free(e);
                conv_by_reference(m, x, ref);
                CHECK(same_bits(got, ref, CB * 2));
                for (int i = 0; i < CB * 2; i++) CHECK_NEAR(got[i], f32[i], 0.05 * (1 + fabs(f32[i])));
                cf_model_free(m);
            }
        cf_dataset_free(d);
    }
    cf_set_threads(0);
}

/* A quantized file of the model with one tensor replaced (or, data NULL, removed). */
static void write_bad(const char *path, const char *name, const char *dtype, int count, const float *data)
{
    cf_model *m = fresh();
    cf_model_quantize(m, NULL, NULL);
    cf_model_save_params(m, path);
    cf_st_file *f = cf_st_read(path);
    int n = cf_st_count(f), k = 0;
    cf_st_tensor t[16];
    for (int i = 0; i < n; i++) {
        t[k] = *cf_st_get(f, i);
        if (!strcmp(t[k].name, name)) {
            if (!data) continue;
            t[k].dtype = dtype, t[k].data = data;
            if (count >= 0) t[k].count = (size_t)count, t[k].rank = 1, t[k].shape[0] = count;
        }
        k++;
    }
    if (!cf_st_find(f, name)) t[k++] = (cf_st_tensor){.name = name, .rank = 1, .shape = {count}, .count = (size_t)count,
                                                     .data = data, .dtype = dtype};
    CHECK(cf_st_write(path, k, t, 0, NULL, NULL) == 0);
    cf_st_free(f);
    cf_model_free(m);
}

/* Loading path into a fresh model fails with `want`, leaving it as it was. */
static void refused(const char *path, const char *want)
{
    cf_model *m = fresh();
    float before = cf_model_param_data(m, 0)[0];
    CHECK(cf_model_load_params(m, path) == -1);
    CHECK_HAS(cf_last_error(), want);
    CHECK(cf_model_param_data(m, 0)[0] == before && cf_model_quantized_count(m) == 0);
    cf_model_free(m);
}

TEST(bad_files_are_refused)
{
    float zero[16] = {0}, neg[16], nan16[16], inf16[16], ok[16], big[128];
    for (int i = 0; i < 16; i++) neg[i] = ok[i] = nan16[i] = inf16[i] = 0.01f;
    neg[2] = -0.01f, nan16[15] = NAN, inf16[0] = INFINITY;
    for (int i = 0; i < 128; i++) big[i] = i == 77 ? -128 : 1;
    float in_bad_zero[2] = {0.1f, 128}, in_frac[2] = {0.1f, 1.5f}, in_bad_scale[2] = {0, 3}, three[3] = {1, 2, 3};
    static const struct { const char *name, *dtype; int count; int data; const char *want; } cases[] = {
        {"1.W.qscale", "F32", 16, 0, "'1.W.qscale' holds 0 (element 0); a scale is a finite number above 0"},
        {"1.W.qscale", "F32", 16, 1, "'1.W.qscale' holds -0.01 (element 2); a scale is a finite number above 0"},
        {"1.W.qscale", "F32", 16, 2, "'1.W.qscale' holds nan (element 15)"},
        {"1.W.qscale", "F32", 16, 3, "'1.W.qscale' holds inf (element 0)"},
        {"3.W.qscale", "F32", 4, 4, "'3.W.qscale' holds 4 scales, but '3.W' has 3 output columns"},
        {"3.W.qscale", "F32", 0, -1, "'3.W' is int8 but the file has no '3.W.qscale', its scales"},
        {"1.b.qscale", "F32", 16, 4, "'1.b.qscale' is for the quantized parameter '1.b', which the file does not hold as int8"},
        {"1.W.qinput", "F32", 2, 5, "'1.W.qinput' holds the zero point 128; it is a whole number in 0..127"},
        {"1.W.qinput", "F32", 2, 6, "'1.W.qinput' holds the zero point 1.5"},
        {"1.W.qinput", "F32", 2, 7, "'1.W.qinput' holds the scale 0; a scale is a finite number above 0"},
        {"1.W.qinput", "F32", 3, 8, "'1.W.qinput' holds 3 numbers, not 2"},
        {"1.W", "I8", -1, 9, "'1.W' holds -128 (element 77); quantized weights are -127..127"},
        {"1.b", "I8", 16, 4, "'1.b' is int8 but neither a matrix nor a convolution's kernels"},
        /* (1, 16): a matrix, but the bias */
        {"1.b", "I8", -1, 4, "'1.b' is int8, but no matrix product or convolution of the model reads it as its weights"},
    };
    const float *data[] = {zero, neg, nan16, inf16, ok, in_bad_zero, in_frac, in_bad_scale, three, big};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        write_bad(tmp("bad.safetensors"), cases[i].name, cases[i].dtype, cases[i].count,
                  cases[i].data < 0 ? NULL : data[cases[i].data]);
        refused(tmp("bad.safetensors"), cases[i].want);
    }
}

int main(void)
{
    for (int i = 0; i < 64 * D; i++) xs[i] = 2 * sinf(0.37f * (float)i) + 0.5f;
    if (tmpdir_make("cflux-test-quant")) return 1;
    RUN(dynamic_runs_the_integer_product);
    RUN(static_calibration_fixes_the_range);
    RUN(saved_file_loads_back);
    RUN(training_drops_quantization);
    RUN(conv_runs_the_integer_product);
    RUN(bad_files_are_refused);
    tmpdir_remove();
    return test_summary("quant");
}
