/* test_golden_quant.c - the 8-bit Affine and Conv2D products (cf_model_quantize,
 * static activations) against PyTorch's quantized operators (fbgemm's quantized
 * linear and conv2d on the same integers): the weights' integers and scales and the
 * input's scale and zero point are PyTorch's (which gen_quant.py checked it makes
 * from cflux's rules), and the output is within one step of PyTorch's quantized
 * output, whose own rounding to 8 bits is at most that. Calibration is on exactly the
 * test batch, so the input's range is the batch's least and greatest value, as the
 * script takes it. Fixture: tests/golden/quant_golden.safetensors, made by
 * tests/golden/gen_quant.py. At 1 and 2 threads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/quant.h"
#include "core/safetensors.h"
#include "golden.h"
#include "test.h"

#define GOLDEN "tests/golden/quant_golden.safetensors"

typedef struct {
    const char *name, *src;   /* the fixture's prefix, the model */
    const char *W, *b;        /* the weights' and the bias's parameter names */
    int B;
    cf_shape xs;              /* a sample's shape */
} qcase;

static const qcase cases[] = {
    {"affine", "model = Chain(Input(37), Affine(19))\n", "1.W", "1.b", 5, CF_SHAPE(37)},
    {"conv", "model = Chain(Input(3, 7, 6), Conv2D(5, 3, pad = 1))\n", "1.K", "1.b", 2, CF_SHAPE(3, 7, 6)},
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

static const cf_st_tensor *find(const cf_st_file *f, const char *name, const char *what)
{
    char key[64];
    snprintf(key, sizeof key, "%s.%s", name, what);
    const cf_st_tensor *t = cf_st_find(f, key);
    if (!t) fprintf(stderr, "%s: not in %s\n", key, GOLDEN);
    return t;
}

/* Parameter `name` of m set from t; 0, or -1 if it is missing or of another size. */
static int load(cf_model *m, const char *name, const cf_st_tensor *t)
{
    int i = cf_model_param_index(m, name);
    if (i < 0 || !t || cf_shape_count(cf_model_param_shape(m, i)) != t->count) return -1;
    memcpy(cf_model_param_data(m, i), t->data, t->count * sizeof *t->data);
    return 0;
}

/* Case c quantized and run; the largest |cflux - PyTorch| in output steps, or -1. */
static double run_case(const cf_st_file *gold, const qcase *c)
{
    const cf_st_tensor *x = find(gold, c->name, "x"), *qw = find(gold, c->name, "qw"),
                       *qscale = find(gold, c->name, "qscale"), *qin = find(gold, c->name, "qinput"),
                       *y = find(gold, c->name, "y"), *step = find(gold, c->name, "step");
    if (!x || !qw || !qscale || !qin || !y || !step) return -1;
    cf_model *m = cf_model_parse(c->src, "golden_quant.flux");
    CHECK(m != NULL && cf_model_init_params(m) == 0);
    if (!m) return -1;
    int W = cf_model_param_index(m, c->W);
    CHECK(load(m, c->W, find(gold, c->name, "W")) == 0 && load(m, c->b, find(gold, c->name, "b")) == 0);
    float *zeros = calloc((size_t)c->B, sizeof *zeros);   /* targets: calibration reads none */
    cf_dataset *calib = cf_dataset_from_arrays(x->data, c->xs, zeros, 1, (size_t)c->B);
    CHECK(calib != NULL);
    CHECK(cf_model_quantize(m, calib, &(cf_quantize_options){CF_QUANT_STATIC, 1, c->B}) == 1);
    const cf_qparam *qp = cf_model_qparam(m, W);
    CHECK(qp != NULL);
    double worst = -1;
    if (!qp) goto out;

    /* the integers exactly; the scales to rounding, as PyTorch keeps them in double */
    int wrong = 0;
    for (size_t i = 0; i < qw->count; i++) wrong += qp->q[i] != (int8_t)qw->data[i];
    if (wrong) fprintf(stderr, "%s: %d of %zu weight integers differ\n", c->name, wrong, qw->count);
    CHECK(wrong == 0 && qp->channels == (int)qscale->count);
    for (int j = 0; j < qp->channels; j++) CHECK_NEAR(qp->scale[j], qscale->data[j], 1e-6 * qscale->data[j]);
    CHECK(qp->act_static == 1);
    CHECK_NEAR(qp->act_scale, qin->data[0], 1e-6 * qin->data[0]);
    CHECK(qp->act_zero == (int)qin->data[1]);

    cf_exec *e = cf_bind(m, c->B, 0);
    CHECK(e != NULL);
    if (!e) goto out;
    size_t n;
    memcpy(cf_exec_input(e, 0, NULL), x->data, x->count * sizeof *x->data);
    CHECK(cf_forward(e, 0) == 0);
    const float *got = cf_exec_output(e, 0, &n);
    double s = step->data[0];
    CHECK(golden_compare(c->name, got, y, n, 1e-5, s) == 0);
    worst = 0;
    for (size_t i = 0; i < n && i < y->count; i++) worst = fmax(worst, fabs(got[i] - y->data[i]) / s);
    cf_exec_free(e);
out:
    cf_dataset_free(calib);
    free(zeros);
    cf_model_free(m);
    return worst;
}

TEST(quantized_products_match_pytorch)
{
    cf_st_file *gold = golden_open(GOLDEN);
    CHECK(gold != NULL);
    if (!gold) return;
    printf("  int8 kernel %s\n", cf_int8_kernel());
    for (int threads = 1; threads <= 2; threads++) {
        cf_set_threads(threads);
        for (int i = 0; i < NCASES; i++) {
            double worst = run_case(gold, &cases[i]);
            CHECK(worst >= 0);
            printf("  %s, %d thread%s: max |cflux - pytorch| = %.3f output steps\n", cases[i].name, threads,
                   threads > 1 ? "s" : "", worst);
        }
    }
    cf_set_threads(0);
    cf_st_free(gold);
}

int main(void)
{
    RUN(quantized_products_match_pytorch);
    return test_summary("golden_quant");
}
