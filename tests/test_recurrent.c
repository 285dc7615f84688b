/* test_recurrent.c - recurrence in the notation: gradients through time for the
 * library's Recurrent, GRU and LSTM, the state carried between calls of a stateful
 * unroll (two calls of 3 steps are one of 6), its reset, and tuple outputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "gradcheck.h"
#include "test.h"
#include "tmpdir.h"

/* A layer unrolled over 3 steps, checked numerically: inputs and every parameter,
 * through all steps (stateful = false: each forward starts from zeros, as the
 * numerical differences need). */
static int check_layer(const char *layer)
{
    char src[256];
    snprintf(src, sizeof src, "model = unroll(Chain(Input(3), %s(4), Affine(2), tanh), 3, stateful = false)\n", layer);
    cf_model *m = cf_model_parse(src, "rnn.flux");
    if (!m) {
        fprintf(stderr, "%s\n", cf_last_error());
        return -1;
    }
    cf_model_set_seed(m, 7);
    cf_exec *e = cf_bind(m, 2, CF_INPUT_GRADS);
    if (!e) {
        fprintf(stderr, "%s\n", cf_last_error());
        cf_model_free(m);
        return -1;
    }
    size_t n;
    float *x = cf_exec_input(e, 0, &n);
    srand(3);
    for (size_t i = 0; i < n; i++) x[i] = 2.0f * (float)rand() / (float)RAND_MAX - 1.0f;
    gc_opts o = {1e-2, 2e-2, 2e-3, 0, 1};
    int bad = gradcheck_exec(e, m, 5, &o);
    cf_exec_free(e);
    cf_model_free(m);
    return bad;
}

/* A step that gives two values: unrolled, two outputs (B, T, 4) and (B, T, 2), each
 * with its own head gradient, checked through time together. */
TEST(tuple_outputs_through_time)
{
    const char *src = "net Two(in) {\n"
                      "  W = param(in, 4)\n  U = param(4, 4)\n  V = param(4, 2)\n  h = state(4)\n"
                      "  x -> {\n    h = tanh(x * W + h{-1} * U)\n    (h, σ(h * V))\n  }\n}\n"
                      "model = unroll(Chain(Input(3), Two()), 3, stateful = false)\n";
    cf_model *m = cf_model_parse(src, "two.flux");
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "%s\n", cf_last_error());
        return;
    }
    CHECK(cf_model_output_count(m) == 2);
    cf_shape a = cf_model_output_shape(m, 0), b = cf_model_output_shape(m, 1);
    CHECK(a.rank == 3 && a.d[1] == 3 && a.d[2] == 4 && b.rank == 3 && b.d[1] == 3 && b.d[2] == 2);
    cf_exec *e = cf_bind(m, 2, CF_INPUT_GRADS);
    CHECK(e != NULL);
    if (e) {
        size_t n;
        float *x = cf_exec_input(e, 0, &n);
        for (size_t i = 0; i < n; i++) x[i] = cosf((float)i * 1.3f);
        CHECK(gradcheck_exec(e, m, 9, NULL) == 0);
    }
    cf_exec_free(e);
    cf_model_free(m);
}

TEST(gradients_through_time)
{
    CHECK(check_layer("Recurrent") == 0);
    CHECK(check_layer("GRU") == 0);
    CHECK(check_layer("LSTM") == 0);
}

/* Forward x (B, T, 3) through a model; the output copied out. */
static float *run(cf_exec *e, const float *x, size_t *count)
{
    size_t n;
    float *in = cf_exec_input(e, 0, &n);
    memcpy(in, x, n * sizeof *x);
    if (cf_forward(e, 0)) return NULL;
    const float *y = cf_exec_output(e, 0, count);
    float *copy = malloc(*count * sizeof *copy);
    memcpy(copy, y, *count * sizeof *copy);
    return copy;
}

/* With the same seed the two models have the same parameters (names and shapes are
 * the same): one unrolled over 6 steps from zeros, one over 3 that carries its state.
 * The second's two calls on the halves must give the first's outputs. */
TEST(a_stateful_unroll_carries_its_state)
{
    const char *layers[] = {"Recurrent", "GRU", "LSTM"};
    for (int l = 0; l < 3; l++) {
        char s6[160], s3[160];
        snprintf(s6, sizeof s6, "model = unroll(Chain(Input(3), %s(5)), 6, stateful = false)\n", layers[l]);
        snprintf(s3, sizeof s3, "model = unroll(Chain(Input(3), %s(5)), 3)\n", layers[l]);
        cf_model *m6 = cf_model_parse(s6, "six.flux"), *m3 = cf_model_parse(s3, "three.flux");
        CHECK(m6 && m3);
        if (!m6 || !m3) return;
        cf_exec *e6 = cf_bind(m6, 2, 0), *e3 = cf_bind(m3, 2, 0);
        CHECK(e6 && e3);
        /* the carried states, named by where the net put them: 1.h (and 1.c) */
        CHECK(cf_exec_state_count(e3) == (l == 2 ? 2 : 1) && strcmp(cf_exec_state_name(e3, 0), "1.h") == 0);
        if (l == 2) CHECK(strcmp(cf_exec_state_name(e3, 1), "1.c") == 0);
        cf_shape cs = cf_exec_state_shape(e3, 0);
        CHECK(cs.rank == 2 && cs.d[0] == 2 && cs.d[1] == 5);
        float x[2 * 6 * 3], half[2][2 * 3 * 3];
        for (int i = 0; i < 36; i++) x[i] = sinf((float)i * 0.7f);
        for (int h = 0; h < 2; h++)
            for (int b = 0; b < 2; b++) memcpy(half[h] + b * 9, x + b * 18 + h * 9, 9 * sizeof *x);
        size_t n6, na, nb, nc;
        float *y6 = run(e6, x, &n6), *ya = run(e3, half[0], &na), *yb = run(e3, half[1], &nb);
        CHECK(n6 == 2 * 6 * 5 && na == 2 * 3 * 5 && nb == na);
        int bad = 0;
        for (int b = 0; b < 2; b++)
            for (int j = 0; j < 15; j++)
                bad += fabsf(y6[b * 30 + j] - ya[b * 15 + j]) > 1e-6f || fabsf(y6[b * 30 + 15 + j] - yb[b * 15 + j]) > 1e-6f;
        CHECK(bad == 0);
        /* reset: the next call starts from zeros again, as the first did */
        cf_exec_reset_state(e3);
        float *yc = run(e3, half[0], &nc);
        CHECK(memcmp(ya, yc, na * sizeof *ya) == 0);
        CHECK(memcmp(ya, yb, na * sizeof *ya) != 0);
        free(y6), free(ya), free(yb), free(yc);
        cf_exec_free(e6), cf_exec_free(e3);
        cf_model_free(m6), cf_model_free(m3);
    }
}

/* Truncated back-propagation: after a first call from zeros, a second call starts from
 * the state the first left (s1), and its backward must differentiate that call alone,
 * with s1 a constant. Checked against central differences of the second call's loss
 * in U (the weights that read h{-1}), each taken with s1 made again by a first call at
 * the unperturbed U. */
static double second_call_loss(cf_exec *e, const float *x, float *u, size_t j, float du)
{
    cf_exec_reset_state(e);
    memcpy(cf_exec_input(e, 0, NULL), x, 18 * sizeof *x);
    if (cf_forward(e, 1)) return NAN;
    float keep = u[j];
    u[j] += du;
    memcpy(cf_exec_input(e, 0, NULL), x, 18 * sizeof *x);
    int rc = cf_forward(e, 1);
    u[j] = keep;
    if (rc) return NAN;
    size_t n;
    const float *y = cf_exec_output(e, 0, &n);
    double L = 0;
    for (size_t i = 0; i < n; i++) L += (double)y[i] * (double)((int)(i % 5) - 2);
    return L;
}

TEST(backward_stops_at_the_carried_state)
{
    cf_model *m = cf_model_parse("model = unroll(Chain(Input(3), LSTM(4)), 3)\n", "lstm.flux");
    CHECK(m != NULL);
    if (!m) return;
    cf_exec *e = cf_bind(m, 2, CF_TRAIN);
    CHECK(e != NULL && strcmp(cf_model_param_name(m, 1), "1.U") == 0);
    float x[18];
    for (int i = 0; i < 18; i++) x[i] = cosf((float)i);
    float *head = cf_exec_output_grad(e, 0, NULL);
    for (int i = 0; i < 24; i++) head[i] = (float)((i % 5) - 2);
    float *u = cf_model_param_data(m, 1);
    size_t nu = cf_shape_count(cf_model_param_shape(m, 1));
    cf_model_zero_grad(m);
    CHECK(second_call_loss(e, x, u, 0, 0) == second_call_loss(e, x, u, 0, 0));   /* repeatable */
    CHECK(cf_backward(e) == 0);
    const float *g = cf_model_param_grad(m, 1);
    int bad = 0, nonzero = 0;
    const float h = 1e-2f;
    for (size_t j = 0; j < nu; j++) {
        double num = (second_call_loss(e, x, u, j, h) - second_call_loss(e, x, u, j, -h)) / (2 * h);
        nonzero += fabs(num) > 1e-3;
        if (!(fabs(num - g[j]) <= 2e-3 + 2e-2 * fmax(fabs(num), fabs(g[j])))) {
            if (bad++ < 3) fprintf(stderr, "  dU[%zu]: analytic %g, numeric %g\n", j, (double)g[j], num);
        }
    }
    CHECK(bad == 0);
    CHECK(nonzero > (int)nu / 2);   /* h{-1} at the first step was not zeros */
    cf_exec_free(e);
    cf_model_free(m);
}

/* A classifier at every step ends, unrolled, with one softmax over the joined steps,
 * so the training loss (cross-entropy with (B, T) labels) attaches to it; and the same
 * file loaded over one step (cf_model_load_steps), with the parameters of the file's
 * model, gives step by step, carrying its state, what the whole sequence gave. */
TEST(one_step_model_generates_what_the_unrolled_one_computes)
{
    const char *src = "model = unroll(Chain(Input(3), GRU(5), Affine(4), softmax), 3)\n";
    FILE *f = fopen(tmp("gen.flux"), "w");
    CHECK(f && fputs(src, f) >= 0 && fclose(f) == 0);
    cf_model *m3 = cf_model_load(tmp("gen.flux")), *m1 = cf_model_load_steps(tmp("gen.flux"), 1);
    CHECK(m3 && m1);
    if (!m3 || !m1) return;
    CHECK(strcmp(cf_model_output_op(m3, 0), "softmax") == 0);
    cf_shape s1 = cf_model_input_shape(m1, 0);
    CHECK(s1.rank == 3 && s1.d[1] == 1 && s1.d[2] == 3);
    CHECK(cf_model_add_loss(m3, CF_LOSS_XENT) == 0);
    CHECK(cf_model_save_params(m3, tmp("gen.params")) == 0 && cf_model_load_params(m1, tmp("gen.params")) == 0);
    cf_exec *e3 = cf_bind(m3, 1, 0), *e1 = cf_bind(m1, 1, 0);
    CHECK(e3 && e1);
    float x[9];
    for (int i = 0; i < 9; i++) x[i] = sinf((float)i + 0.5f);
    size_t n3, n1;
    float *y3 = run(e3, x, &n3);
    CHECK(n3 == 12);
    int bad = 0;
    for (int t = 0; t < 3; t++) {
        float *y1 = run(e1, x + 3 * t, &n1);
        CHECK(n1 == 4);
        for (int j = 0; j < 4; j++) bad += fabsf(y1[j] - y3[4 * t + j]) > 1e-6f;
        free(y1);
    }
    CHECK(bad == 0);
    free(y3);
    cf_exec_free(e3), cf_exec_free(e1);
    cf_model_free(m3), cf_model_free(m1);
}

int main(void)
{
    RUN(gradients_through_time);
    RUN(tuple_outputs_through_time);
    RUN(a_stateful_unroll_carries_its_state);
    RUN(backward_stops_at_the_carried_state);
    RUN(one_step_model_generates_what_the_unrolled_one_computes);
    tmpdir_remove();
    return test_summary("recurrent");
}
