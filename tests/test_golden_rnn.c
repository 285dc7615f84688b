/* test_golden_rnn.c - the standard library's LSTM and GRU, unrolled, against PyTorch's
 * nn.LSTM and nn.GRU (batch_first) with the same weights: the output and the
 * gradients of sum(y * r) with respect to x and every weight, from zeros and, with a
 * stateful unroll, over a second call that continues the first (back-propagation
 * stopping at the carried state, as PyTorch's with the state detached). Fixtures:
 * tests/golden/rnn_golden.safetensors, made by tests/golden/gen_rnn.py (same
 * generator and table as here), in PyTorch's layouts; the mapping onto cflux's
 * parameters is here (map_weights, compare_grads) and in docs/notation.md. Runs with
 * each matrix-product engine this build and CPU have, forced one at a time, and with
 * 1 and 2 threads. */
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/safetensors.h"
#include "golden.h"
#include "test.h"

#define GOLDEN "tests/golden/rnn_golden.safetensors"
#define SEED 20260419u
#define RTOL 1e-5   /* gen_rnn.py checks that PyTorch's float32 meets it too */
#define ATOL 1e-6

typedef struct {
    const char *name;
    int gru;               /* 0: LSTM, gates i, f, g, o; 1: GRU, gates r, z, n */
    int I, H, B, T, calls; /* calls 2: a stateful unroll, the second call continuing the first */
} rcase;

/* The table of gen_rnn.py, in its order. */
static const rcase cases[] = {
    {"lstm", 0, 5, 6, 3, 4, 1},
    {"gru", 1, 5, 6, 3, 4, 1},
    {"lstm_carry", 0, 5, 6, 3, 7, 2},
    {"gru_carry", 1, 4, 5, 2, 7, 2},
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

/* PyTorch's weights of one layer, G H = 4H (LSTM) or 3H (GRU) rows. */
typedef struct {
    float *w_ih, *w_hh, *b_ih, *b_hh;   /* (G H, I), (G H, H), (G H), (G H) */
} torch_weights;

/* dst (cols, rows) = src (rows, cols) transposed. */
static void transpose(const float *src, int rows, int cols, float *dst)
{
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) dst[(size_t)j * rows + i] = src[(size_t)i * cols + j];
}

static void fill_sym(float *p, size_t n, float scale)
{
    for (size_t i = 0; i < n; i++) p[i] = golden_sym() * scale;
}

/* The parameter called name, checked to be (rows, cols); -1 if it is not. */
static int param(const cf_model *m, const char *name, int rows, int cols)
{
    int i = cf_model_param_index(m, name);
    cf_shape s = i >= 0 ? cf_model_param_shape(m, i) : (cf_shape){0};
    if (i < 0 || s.rank != 2 || s.d[0] != rows || s.d[1] != cols) {
        fprintf(stderr, "  %s: missing, or not (%d, %d)\n", name, rows, cols);
        return -1;
    }
    return i;
}

/* The mapping, PyTorch -> cflux (p: the indices of 1.W, 1.U, 1.b and, for the GRU,
 * 1.d): W = weight_ih^T, U = weight_hh^T; the LSTM's b = bias_ih + bias_hh (its two
 * biases only ever appear as their sum), the GRU's b = bias_ih and d = bias_hh (r
 * multiplies the hidden part of n with its bias, so they stay apart). */
static void map_weights(cf_model *m, const rcase *c, const int p[4], const torch_weights *t)
{
    int GH = (c->gru ? 3 : 4) * c->H;
    transpose(t->w_ih, GH, c->I, cf_model_param_data(m, p[0]));
    transpose(t->w_hh, GH, c->H, cf_model_param_data(m, p[1]));
    float *b = cf_model_param_data(m, p[2]);
    for (int j = 0; j < GH; j++) b[j] = c->gru ? t->b_ih[j] : t->b_ih[j] + t->b_hh[j];
    if (c->gru) memcpy(cf_model_param_data(m, p[3]), t->b_hh, (size_t)GH * sizeof *t->b_hh);
}

/* cflux's parameter gradients, mapped back to PyTorch's, against call K's fixture:
 * d weight_ih = dW^T, d weight_hh = dU^T, d bias_ih = db, d bias_hh = db (LSTM) or
 * dd (GRU). The mismatches. */
static int compare_grads(const cf_st_file *gold, cf_model *m, const rcase *c, const int p[4], const char *call)
{
    int GH = (c->gru ? 3 : 4) * c->H, bad = 0;
    float *t = malloc((size_t)GH * (c->I > c->H ? c->I : c->H) * sizeof *t);
    struct {
        const char *what;
        int param, rows;   /* rows of the cflux gradient, transposed if > 1 */
    } g[4] = {{"dweight_ih", p[0], c->I}, {"dweight_hh", p[1], c->H}, {"dbias_ih", p[2], 1},
              {"dbias_hh", c->gru ? p[3] : p[2], 1}};
    for (int k = 0; k < 4; k++) {
        char name[64];
        snprintf(name, sizeof name, "%s.%s.%s", c->name, call, g[k].what);
        const float *d = cf_model_param_grad(m, g[k].param);
        if (g[k].rows > 1) transpose(d, g[k].rows, GH, t), d = t;
        bad += golden_compare(name, d, cf_st_find(gold, name), (size_t)g[k].rows * GH, RTOL, ATOL);
    }
    free(t);
    return bad;
}

/* Runs case c (the generator's next draws) and compares with gold. */
static void run_case(const cf_st_file *gold, const rcase *c)
{
    char src[160];
    snprintf(src, sizeof src, "model = unroll(Chain(Input(%d), %s(%d)), %d%s)\n", c->I, c->gru ? "GRU" : "LSTM", c->H,
             c->T, c->calls > 1 ? "" : ", stateful = false");
    cf_model *m = cf_model_parse(src, "rnn.flux");
    cf_exec *e = m ? cf_bind(m, c->B, CF_INPUT_GRADS) : NULL;
    CHECK(e != NULL);
    if (!e) {
        fprintf(stderr, "%s: %s\n", c->name, cf_last_error());
        cf_model_free(m);
        return;
    }
    int G = c->gru ? 3 : 4, GH = G * c->H;
    int p[4] = {param(m, "1.W", c->I, GH), param(m, "1.U", c->H, GH), param(m, "1.b", 1, GH),
                c->gru ? param(m, "1.d", 1, GH) : 0};
    CHECK(p[0] >= 0 && p[1] >= 0 && p[2] >= 0 && p[3] >= 0);
    CHECK(cf_model_param_count(m) == (c->gru ? 4 : 3));   /* nothing else is learned */
    if (p[0] < 0 || p[1] < 0 || p[2] < 0 || p[3] < 0) {
        cf_exec_free(e);
        cf_model_free(m);
        return;
    }
    torch_weights t = {malloc((size_t)GH * c->I * sizeof(float)), malloc((size_t)GH * c->H * sizeof(float)),
                       malloc((size_t)GH * sizeof(float)), malloc((size_t)GH * sizeof(float))};
    fill_sym(t.w_ih, (size_t)GH * c->I, 0.5f);
    fill_sym(t.w_hh, (size_t)GH * c->H, 0.5f);
    fill_sym(t.b_ih, (size_t)GH, 0.5f);
    fill_sym(t.b_hh, (size_t)GH, 0.5f);
    map_weights(m, c, p, &t);
    for (int k = 1; k <= c->calls; k++) {
        size_t nx, ny;
        float *x = cf_exec_input(e, 0, &nx);   /* (B, T, I), as batch_first */
        fill_sym(x, nx, 1);
        CHECK(cf_forward(e, 1) == 0);
        const float *y = cf_exec_output(e, 0, &ny);
        fill_sym(cf_exec_output_grad(e, 0, NULL), ny, 1);
        cf_model_zero_grad(m);
        CHECK(cf_backward(e) == 0);
        char call[16], name[64];
        snprintf(call, sizeof call, "c%d", k);
        snprintf(name, sizeof name, "%s.%s.y", c->name, call);
        CHECK(golden_compare(name, y, cf_st_find(gold, name), ny, RTOL, ATOL) == 0);
        snprintf(name, sizeof name, "%s.%s.dx", c->name, call);
        CHECK(golden_compare(name, cf_exec_input_grad(e, 0, NULL), cf_st_find(gold, name), nx, RTOL, ATOL) == 0);
        CHECK(compare_grads(gold, m, c, p, call) == 0);
    }
    free(t.w_ih), free(t.w_hh), free(t.b_ih), free(t.b_hh);
    cf_exec_free(e);
    cf_model_free(m);
}

static void run_golden(const char *engine, int threads)
{
    cf_st_file *gold = golden_begin(GOLDEN, engine, threads);
    CHECK(gold != NULL);
    if (!gold) return;
    golden_state = SEED;   /* the cases draw from it in turn, as the script does */
    for (int i = 0; i < NCASES; i++) run_case(gold, &cases[i]);
    cf_st_free(gold);
    cf_set_threads(0);
}

/* Every engine this build and CPU have, each forced in turn, at 1 and 2 threads. */
TEST(lstm_and_gru_match_pytorch) { CHECK(golden_each_engine(run_golden) >= 1); }

/* The comparison itself must be able to fail: a planted error in one element of the
 * recurrent weights' gradient over the carried call is reported. */
TEST(golden_compare_fails_on_a_wrong_value)
{
    cf_st_file *gold = cf_st_read(GOLDEN);
    CHECK(gold != NULL);
    if (!gold) return;
    const cf_st_tensor *t = cf_st_find(gold, "lstm_carry.c2.dweight_hh");
    CHECK(t != NULL && t->count == 24 * 6);
    if (t) CHECK(golden_catches_a_planted_error(t, 88, RTOL, ATOL));
    cf_st_free(gold);
}

int main(void)
{
    RUN(lstm_and_gru_match_pytorch);
    RUN(golden_compare_fails_on_a_wrong_value);
    return test_summary("golden_rnn");
}
