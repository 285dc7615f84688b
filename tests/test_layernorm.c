/* test_layernorm.c - layernorm where the golden and gradient tests do not look: rows
 * whose mean is far from 0 beside their spread (1e5 ± 1, 1e6 ± 4). In float, the
 * mean of such a row misses by more than the spread's rounding, and the variance of
 * the residuals about it is too large by the square of the miss unless corrected
 * (ops/layernorm.c): off by up to 1e-4 of y at these rows. Output and the gradients
 * of sum(y r) for x, gamma and beta against the definition computed here in double
 * from the same floats, to 1e-5. */
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "golden.h"
#include "test.h"

#define EPS 1e-5

typedef struct {
    int rows, d;          /* x (rows, d): B = rows, one row a sample */
    float shift, scale;   /* x = shift + scale sym */
} lncase;

static const lncase cases[] = {
    {6, 64, 1e5f, 1},      /* 64: whole vectors of eight lanes */
    {5, 301, 1e5f, 1},     /* a tail past the lanes */
    {4, 1024, 1e5f, 1},
    {4, 256, 3e4f, 0.5f},
    {3, 100, 1e6f, 4},
    {4, 1000, 1e4f, 1},    /* 1e4 ± 1: the correction is within the tolerance here */
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

/* y, and dx, dgamma, dbeta of sum(y r), for one row of d: the definition in double. */
static void reference_row(const float *x, const float *g, const float *b, const float *r, int d, double *y,
                          double *dx, double *dg, double *db)
{
    double mean = 0, var = 0;
    for (int i = 0; i < d; i++) mean += x[i];
    mean /= d;
    for (int i = 0; i < d; i++) var += (x[i] - mean) * (x[i] - mean);
    var /= d;
    double rstd = 1 / sqrt(var + EPS), sg = 0, sgx = 0;
    for (int i = 0; i < d; i++) {
        double xh = (x[i] - mean) * rstd, gi = (double)r[i] * g[i];
        y[i] = xh * g[i] + b[i];
        dg[i] += r[i] * xh;
        db[i] += r[i];
        sg += gi;
        sgx += gi * xh;
    }
    for (int i = 0; i < d; i++) dx[i] = rstd * ((double)r[i] * g[i] - sg / d - (x[i] - mean) * rstd * sgx / d);
}

/* |got - want| <= tol (|want| + 1) for each element; the mismatches and the worst
 * error, as a fraction of that bound, printed. */
static int compare(const char *what, int d, const float *got, const double *want, size_t n, double tol)
{
    int bad = 0;
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double err = fabs(got[i] - want[i]) / (tol * (fabs(want[i]) + 1));
        if (!(err <= 1)) bad++;
        if (err > worst || err != err) worst = err;
    }
    if (bad) fprintf(stderr, "  d %d: %s: %d of %zu elements differ, the worst by %.3g times the tolerance\n", d, what,
                     bad, n, worst);
    return bad;
}

static void run_case(const lncase *c)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(c->d));
    cf_node *g = cf_param(m, "g", CF_SHAPE(c->d), CF_ONES), *b = cf_param(m, "b", CF_SHAPE(c->d), CF_ZEROS);
    cf_output(m, cf_layernorm(m, x, g, b, (float)EPS));
    CHECK(cf_model_init_params(m) == 0);
    cf_exec *e = cf_bind(m, c->rows, CF_INPUT_GRADS);
    CHECK(e != NULL);
    if (!e) {
        fprintf(stderr, "%s\n", cf_last_error());
        cf_model_free(m);
        return;
    }
    size_t n = (size_t)c->rows * c->d, d = (size_t)c->d;
    float *xv = cf_exec_input(e, 0, NULL), *gv = cf_model_param_data(m, 0), *bv = cf_model_param_data(m, 1);
    float *r = cf_exec_output_grad(e, 0, NULL);
    for (size_t i = 0; i < d; i++) gv[i] = 1 + 0.5f * golden_sym(), bv[i] = golden_sym();
    for (size_t i = 0; i < n; i++) xv[i] = c->shift + c->scale * golden_sym(), r[i] = golden_sym();
    cf_model_zero_grad(m);
    CHECK(cf_forward(e, 1) == 0 && cf_backward(e) == 0);
    double *y = malloc(n * sizeof *y), *dx = malloc(n * sizeof *dx), *dg = calloc(2 * d, sizeof *dg), *db = dg + d;
    for (int row = 0; row < c->rows; row++)
        reference_row(xv + row * d, gv, bv, r + row * d, c->d, y + row * d, dx + row * d, dg, db);
    CHECK(compare("y", c->d, cf_exec_output(e, 0, NULL), y, n, 1e-5) == 0);
    CHECK(compare("dx", c->d, cf_exec_input_grad(e, 0, NULL), dx, n, 1e-5) == 0);
    CHECK(compare("dgamma", c->d, cf_model_param_grad(m, 0), dg, d, 1e-5) == 0);
    CHECK(compare("dbeta", c->d, cf_model_param_grad(m, 1), db, d, 1e-5) == 0);
    free(y), free(dx), free(dg);
    cf_exec_free(e);
    cf_model_free(m);
}

TEST(rows_far_from_zero_against_definition)
{
    golden_state = 10000;
    for (int i = 0; i < NCASES; i++) run_case(&cases[i]);
}

int main(void)
{
    RUN(rows_far_from_zero_against_definition);
    return test_summary("layernorm");
}
