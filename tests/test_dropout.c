/* test_dropout.c - dropout's behaviour beyond its gradient (tests/test_grad.c): the
 * fraction kept, the scale, identity in evaluation, masks that follow the seed and
 * the step (new at every forward, the same for the same seed and step, different for
 * two dropouts of one model), the same at any thread count, and the refused rates. */
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "test.h"

#define N 100000   /* per sample */
#define B 2

/* x (B, N) of ones -> dropout(x, p) and a second dropout of the same x. */
static cf_exec *make(float p, uint64_t seed, cf_model **mp)
{
    cf_model *m = cf_model_new();
    cf_model_set_seed(m, seed);
    cf_node *x = cf_input(m, "x", CF_SHAPE(N));
    cf_output(m, cf_dropout(m, x, p));
    cf_output(m, cf_dropout(m, x, p));
    cf_exec *e = cf_bind(m, B, CF_INPUT_GRADS);
    CHECK(e != NULL);
    if (e) {
        float *xv = cf_exec_input(e, 0, NULL);
        for (size_t i = 0; i < (size_t)B * N; i++) xv[i] = 1.0f + (float)(i % 7);
    }
    *mp = m;
    return e;
}

TEST(kept_fraction_and_scale)
{
    static const float rates[3] = {0.0f, 0.3f, 0.9f};
    for (int r = 0; r < 3; r++) {
        float p = rates[r], scale = 1.0f / (1.0f - p);
        cf_model *m;
        cf_exec *e = make(p, 5, &m);
        if (!e) continue;
        CHECK(cf_forward(e, 1) == 0);
        const float *x = cf_exec_input(e, 0, NULL), *y = cf_exec_output(e, 0, NULL);
        size_t kept = 0, wrong = 0;
        for (size_t i = 0; i < (size_t)B * N; i++) {
            if (y[i] != 0) kept++;
            if (y[i] != 0 && y[i] != x[i] * scale) wrong++;
        }
        double frac = (double)kept / (B * N);
        /* the standard deviation of frac is at most 0.0012 */
        if (fabs(frac - (1 - p)) > 0.006) fprintf(stderr, "  p %g: kept %.4f\n", (double)p, frac);
        CHECK(fabs(frac - (1 - p)) <= 0.006);
        CHECK(wrong == 0);
        cf_exec_free(e);
        cf_model_free(m);
    }
}

TEST(evaluation_is_identity)
{
    cf_model *m;
    cf_exec *e = make(0.5f, 5, &m);
    if (!e) return;
    size_t n;
    float *h = cf_exec_output_grad(e, 0, &n);
    for (size_t i = 0; i < n; i++) h[i] = (float)(i % 13) - 6.0f;
    CHECK(cf_forward(e, 1) == 0);   /* a training forward first: evaluation must not use its mask */
    CHECK(cf_forward(e, 0) == 0 && cf_backward(e) == 0);
    const float *x = cf_exec_input(e, 0, NULL), *y = cf_exec_output(e, 0, NULL);
    const float *dx = cf_exec_input_grad(e, 0, NULL);
    CHECK(memcmp(x, y, n * sizeof *x) == 0);
    CHECK(memcmp(dx, h, n * sizeof *dx) == 0);   /* output 1's head gradient is 0 */
    cf_exec_free(e);
    cf_model_free(m);
}

/* The two outputs and the input gradient after `steps` training forwards. */
static void masks(int threads, uint64_t seed, int steps, float *y0, float *y1, float *dx)
{
    cf_set_threads(threads);
    cf_model *m;
    cf_exec *e = make(0.4f, seed, &m);
    if (!e) return;
    for (int o = 0; o < 2; o++) {
        size_t n;
        float *h = cf_exec_output_grad(e, o, &n);
        for (size_t i = 0; i < n; i++) h[i] = (float)((i + (size_t)o) % 5) - 2.0f;
    }
    for (int s = 0; s < steps; s++) CHECK(cf_forward(e, 1) == 0);
    CHECK(cf_backward(e) == 0);
    size_t n = (size_t)B * N * sizeof(float);
    memcpy(y0, cf_exec_output(e, 0, NULL), n);
    memcpy(y1, cf_exec_output(e, 1, NULL), n);
    memcpy(dx, cf_exec_input_grad(e, 0, NULL), n);
    cf_exec_free(e);
    cf_model_free(m);
    cf_set_threads(0);
}

TEST(masks_follow_seed_and_step_not_threads)
{
    size_t n = (size_t)B * N;
    float *a = malloc(9 * n * sizeof *a);
    float *a0 = a, *a1 = a + n, *ad = a + 2 * n, *b0 = a + 3 * n, *b1 = a + 4 * n, *bd = a + 5 * n;
    float *c0 = a + 6 * n, *c1 = a + 7 * n, *cd = a + 8 * n;
    masks(1, 9, 2, a0, a1, ad);
    masks(2, 9, 2, b0, b1, bd);
    CHECK(memcmp(a0, b0, n * sizeof *a) == 0);   /* 1 and 2 threads: bitwise the same */
    CHECK(memcmp(a1, b1, n * sizeof *a) == 0);
    CHECK(memcmp(ad, bd, n * sizeof *a) == 0);
    CHECK(memcmp(a0, a1, n * sizeof *a) != 0);   /* two dropouts of one model differ */
    masks(2, 9, 3, c0, c1, cd);
    CHECK(memcmp(a0, c0, n * sizeof *a) != 0);   /* another step, another mask */
    masks(1, 10, 2, c0, c1, cd);
    CHECK(memcmp(a0, c0, n * sizeof *a) != 0);   /* another seed, another mask */
    free(a);
}

TEST(refused_rates)
{
    static const float bad[4] = {1.0f, -0.1f, 1.5f, NAN};
    for (int i = 0; i < 4; i++) {
        cf_model *m = cf_model_new();
        cf_node *x = cf_input(m, "x", CF_SHAPE(3));
        cf_output(m, cf_dropout(m, x, bad[i]));
        cf_exec *e = cf_bind(m, 2, 0);
        CHECK(e == NULL);
        CHECK_HAS(cf_last_error(), "must be at least 0 and below 1");
        cf_exec_free(e);
        cf_model_free(m);
    }
}

int main(void)
{
    RUN(kept_fraction_and_scale);
    RUN(evaluation_is_identity);
    RUN(masks_follow_seed_and_step_not_threads);
    RUN(refused_rates);
    return test_summary("dropout");
}
