/* test_lstm_fused.c - an unrolled Chain with the standard library's LSTM is built layer
 * by layer, and the pass fuse_lstm runs the LSTM as one node (ops/lstm.c), an Embedding
 * before it folded in; the notation's definition, step by step (CFLUX_PASSES=-fuse_lstm),
 * must give the same numbers: outputs, every parameter's gradient, the inputs' gradients, and the
 * carried states over two calls of a stateful unroll, at 1 and 2 threads. The models
 * cover a step's units or the sequences split between threads, a block that is not 8
 * wide, two LSTMs in a row, indices with the table's product folded (V < B T) and
 * gathered (V >= B T, batch 1: what `cflux sample` runs). */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/graph.h"
#include "exec/exec.h"
#include "test.h"

#define RTOL 2e-4
#define ATOL 2e-5

/* Does the graph e runs hold an lstm node? */
static int has_lstm_node(const cf_exec *e)
{
    for (int i = 0; e && i < e->nn; i++)
        if (e->g->node[i] && e->g->node[i]->op == CF_OP_LSTM) return 1;
    return 0;
}

static cf_model *parse(const char *src)
{
    cf_model *m = cf_model_parse(src, "fused.flux");
    if (!m) fprintf(stderr, "%s\n", cf_last_error());
    return m;
}

/* m bound with the passes (fuse 1) or without fuse_lstm (0). */
static cf_exec *bind(cf_model *m, int B, unsigned flags, int fuse);

/* Does the model of src, bound with the passes, run an lstm node? */
static int runs_fused(const char *src)
{
    cf_model *m = parse(src);
    cf_exec *e = m ? bind(m, 4, 0, 1) : NULL;
    int fused = has_lstm_node(e);
    cf_exec_free(e);
    cf_model_free(m);
    return fused;
}

static cf_exec *bind(cf_model *m, int B, unsigned flags, int fuse)
{
    if (!fuse) setenv("CFLUX_PASSES", "-fuse_lstm", 1);
    cf_exec *e = cf_bind(m, B, flags);
    unsetenv("CFLUX_PASSES");
    return e;
}

/* Mismatches between a and b (n floats each), the first few printed. */
static int compare(const char *what, const float *a, const float *b, size_t n)
{
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        double tol = ATOL + RTOL * fmax(fabs(a[i]), fabs(b[i]));
        if (!(fabs((double)a[i] - b[i]) <= tol)) {
            if (bad++ < 3) fprintf(stderr, "  %s[%zu]: fused %.8g, as written %.8g\n", what, i, a[i], b[i]);
        }
    }
    return bad;
}

/* One forward and backward of each executor on the same inputs (indices below
 * `classes`, or values in [-1, 1]) and head gradients; the differences. */
static int one_call(cf_exec *ef, cf_model *mf, cf_exec *ew, cf_model *mw, int classes, unsigned seed, int grads)
{
    size_t n, ny;
    float *xf = cf_exec_input(ef, 0, &n), *xw = cf_exec_input(ew, 0, NULL);
    srand(seed);
    for (size_t i = 0; i < n; i++)
        xf[i] = xw[i] = classes ? (float)(rand() % classes) : 2.0f * (float)rand() / (float)RAND_MAX - 1.0f;
    if (cf_forward(ef, 1) || cf_forward(ew, 1)) {
        fprintf(stderr, "forward: %s\n", cf_last_error());
        return 1;
    }
    const float *yf = cf_exec_output(ef, 0, &ny), *yw = cf_exec_output(ew, 0, NULL);   /* ny set first */
    int bad = compare("y", yf, yw, ny);
    float *gf = cf_exec_output_grad(ef, 0, NULL), *gw = cf_exec_output_grad(ew, 0, NULL);
    for (size_t i = 0; i < ny; i++) gf[i] = gw[i] = 2.0f * (float)rand() / (float)RAND_MAX - 1.0f;
    cf_model_zero_grad(mf);
    cf_model_zero_grad(mw);
    if (cf_backward(ef) || cf_backward(ew)) {
        fprintf(stderr, "backward: %s\n", cf_last_error());
        return bad + 1;
    }
    for (int p = 0; p < cf_model_param_count(mf); p++) {
        const char *name = cf_model_param_name(mf, p);
        int q = cf_model_param_index(mw, name);
        size_t count = cf_shape_count(cf_model_param_shape(mf, p));
        if (q < 0) return bad + 1;
        bad += compare(name, cf_model_param_grad(mf, p), cf_model_param_grad(mw, q), count);
    }
    if (grads) bad += compare("dx", cf_exec_input_grad(ef, 0, NULL), cf_exec_input_grad(ew, 0, NULL), n);
    for (int s = 0; s < cf_exec_state_count(ef); s++) {
        size_t cn = cf_shape_count_b(cf_exec_state_shape(ef, s), 1);
        float *a = malloc(cn * sizeof *a), *b = malloc(cn * sizeof *b);
        if (cf_exec_state_get(ef, s, a) || cf_exec_state_get(ew, s, b)) bad++;
        else bad += compare(cf_exec_state_name(ef, s), a, b, cn);
        free(a), free(b);
    }
    return bad;
}

/* The model of src, fused and as written, with the same parameters, over two calls at
 * batch B; the differences. */
static int same_numbers(const char *src, int B, int classes, int threads)
{
    cf_model *mf = parse(src), *mw = parse(src);
    if (!mf || !mw) return cf_model_free(mf), cf_model_free(mw), 1;
    cf_set_threads(threads);
    int flags = classes ? CF_TRAIN : CF_INPUT_GRADS, bad = 0;
    cf_exec *ef = bind(mf, B, flags, 1), *ew = bind(mw, B, flags, 0);
    if (!ef || !ew) {
        fprintf(stderr, "bind: %s\n", cf_last_error());
        bad++;
    } else {
        bad = !has_lstm_node(ef) || has_lstm_node(ew);   /* each run the way it says */
        if (bad) fprintf(stderr, "  %s: not run fused and as written\n", src);
        /* the same parameters (allocated at the first bind) */
        for (int p = 0; p < cf_model_param_count(mf); p++) {
            int q = cf_model_param_index(mw, cf_model_param_name(mf, p));
            size_t count = cf_shape_count(cf_model_param_shape(mf, p));
            if (q < 0 || cf_shape_count(cf_model_param_shape(mw, q)) != count) {
                bad++;
                continue;
            }
            float *a = cf_model_param_data(mf, p);
            srand(100u + (unsigned)p);
            for (size_t i = 0; i < count; i++) a[i] = 0.6f * (2.0f * (float)rand() / (float)RAND_MAX - 1.0f);
            memcpy(cf_model_param_data(mw, q), a, count * sizeof *a);
        }
        CHECK(cf_exec_state_count(ef) == cf_exec_state_count(ew));
        bad += one_call(ef, mf, ew, mw, classes, 1, !classes);
        bad += one_call(ef, mf, ew, mw, classes, 2, !classes);   /* from the carried states */
    }
    cf_set_threads(0);
    cf_exec_free(ef), cf_exec_free(ew);
    cf_model_free(mf), cf_model_free(mw);
    if (bad) fprintf(stderr, "  %s at batch %d, %d threads: %d differences\n", src, B, threads, bad);
    return bad;
}

static const char *char_rnn = "model = unroll(Chain(Input(), Embedding(11, 6), LSTM(64), Affine(11), softmax), 7)\n";

/* The table folded (11 < 56). Two threads at batch 8 split each step's units (two
 * blocks of 32), at batches 16 and 18 the sequences (all steps in one region). */
TEST(embedded_lstm_folded)
{
    CHECK(same_numbers(char_rnn, 8, 11, 1) == 0);
    CHECK(same_numbers(char_rnn, 8, 11, 2) == 0);
    CHECK(same_numbers(char_rnn, 16, 11, 2) == 0);
    CHECK(same_numbers(char_rnn, 18, 11, 2) == 0);   /* 8 and 10 */
}

/* Batch 1 (sampling): the table's rows gathered (11 >= 7). */
TEST(embedded_lstm_gathered) { CHECK(same_numbers(char_rnn, 1, 11, 2) == 0); }

/* Two LSTMs in a row, 12 units (one block of 12) then 16, on values, each starting
 * from zeros (stateful = false); the inputs' gradients too. */
TEST(stacked_lstms_on_values)
{
    const char *src = "model = unroll(Chain(Input(5), LSTM(12), LSTM(16), Affine(3), tanh), 6, stateful = false)\n";
    CHECK(same_numbers(src, 4, 0, 1) == 0);
    CHECK(same_numbers(src, 4, 0, 2) == 0);
}

/* LayerNorm and gelu treat each step alike: the Chain around an LSTM is still built
 * layer by layer, each over all steps at once, with the same numbers. */
TEST(layernorm_and_gelu_around_an_lstm)
{
    const char *src = "model = unroll(Chain(Input(5), LayerNorm(), LSTM(12), gelu, LayerNorm(), Affine(3)), 6, "
                      "stateful = false)\n";
    CHECK(runs_fused(src));
    CHECK(same_numbers(src, 4, 0, 1) == 0);
    CHECK(same_numbers(src, 4, 0, 2) == 0);
}

/* What is not built layer by layer: a Chain with a layer that is not known to treat
 * each step alike (here a user's net) keeps the step-by-step graph. */
TEST(other_chains_stay_as_written)
{
    const char *src = "net Twice() { x -> x .* 2 }\n"
                      "model = unroll(Chain(Input(3), Twice(), LSTM(4)), 5)\n";
    cf_model *m = parse(src);
    cf_exec *e = m ? bind(m, 4, 0, 1) : NULL;
    CHECK(e && !has_lstm_node(e));   /* bound, and as written */
    cf_exec_free(e);
    cf_model_free(m);
}

/* A net of one's own that declares sequence(each) treats every step alike, as the
 * library's Affine does: the Chain around the LSTM is built layer by layer, and fused. */
TEST(a_net_that_treats_steps_alike_says_so)
{
    const char *src = "net Twice() {\n  sequence(each)\n  x -> x .* 2\n}\n"
                      "model = unroll(Chain(Input(3), Twice(), LSTM(4)), 5, stateful = false)\n";
    CHECK(runs_fused(src));
    CHECK(same_numbers(src, 4, 0, 2) == 0);
}

/* word in s replaced by to, where it stands alone (not part of a longer name). */
static void rename_word(char *s, size_t cap, const char *word, const char *to)
{
    size_t wl = strlen(word), tl = strlen(to);
    for (char *p = s; (p = strstr(p, word));) {
        int alone = (p == s || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) &&
                    !(isalnum((unsigned char)p[wl]) || p[wl] == '_');
        if (!alone || strlen(s) + tl - wl >= cap) {
            p += wl;
            continue;
        }
        memmove(p + tl, p + wl, strlen(p + wl) + 1);
        memcpy(p, to, tl);
        p += tl;
    }
}

/* The fused form is declared where the net is written, not recognised by its name or
 * its locals': the standard library's LSTM, copied from recurrent.flux under another
 * name with every local renamed, is fused as well, to the same numbers. */
TEST(renamed_locals_keep_the_fusion)
{
    static char src[8192];
    FILE *f = fopen("src/lang/stdlib/recurrent.flux", "r");
    size_t n = f ? fread(src, 1, sizeof src - 1, f) : 0;
    if (f) fclose(f);
    src[n] = 0;
    char *start = strstr(src, "net LSTM("), *end = start ? strstr(start, "\n}\n") : NULL;
    CHECK(start && end);
    if (!start || !end) return;
    end[3] = 0;
    memmove(src, start, strlen(start) + 1);
    static const char *const names[][2] = {{"LSTM", "Mine"}, {"W", "Wx"}, {"U", "Uh"}, {"b", "bias"},
                                          {"h", "hid"},     {"c", "cell"}, {"z", "pre"}, {"g", "cand"}};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) rename_word(src, sizeof src, names[k][0], names[k][1]);
    CHECK(strstr(src, "net Mine(") && strstr(src, "cell{-1}") && !strstr(src, "c{-1}"));
    strcat(src, "model = unroll(Chain(Input(), Embedding(11, 6), Mine(16), Affine(11), softmax), 7)\n");
    CHECK(same_numbers(src, 8, 11, 2) == 0);
}

int main(void)
{
    RUN(embedded_lstm_folded);
    RUN(embedded_lstm_gathered);
    RUN(stacked_lstms_on_values);
    RUN(layernorm_and_gelu_around_an_lstm);
    RUN(other_chains_stay_as_written);
    RUN(renamed_locals_keep_the_fusion);
    RUN(a_net_that_treats_steps_alike_says_so);
    return test_summary("lstm_fused");
}
