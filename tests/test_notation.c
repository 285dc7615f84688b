/* test_notation.c - the model notation compiled to graphs: meaning, parameter names,
 * traces, and the same numbers as the same model built in C. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cflux.h"
#include "mlp.h"
#include "test.h"

static const char *tlp_src =
    "# Two layers, a template that takes other models (docs/notation.md's example).\n"
    "net TLP(first, second) {\n"
    "  x -> {\n"
    "    l1 = σ(first(x))\n"
    "    softmax(second(l1))\n"
    "  }\n"
    "}\n"
    "\n"
    "model = TLP(Affine(10, 20), Affine(21, 15))\n";

TEST(tlp_trace_points_into_the_source)
{
    CHECK(cf_model_parse(tlp_src, "model.flux") == NULL);
    const char *want =
        "error: matrix product shapes do not match: (B, 20) * (21, 15)\n"
        "  in Affine at <stdlib>/affine.flux:5:8\n"
        "  in TLP at model.flux:5:13\n"
        "  in model at model.flux:9:9";
    CHECK(strcmp(cf_last_error(), want) == 0);
    if (strcmp(cf_last_error(), want) != 0) fprintf(stderr, "got:\n%s\n", cf_last_error());
}

static int param_names_are(cf_model *m, const char *const *names, int n)
{
    if (!m || cf_model_param_count(m) != n) return 0;
    for (int i = 0; i < n; i++)
        if (strcmp(cf_model_param_name(m, i), names[i]) != 0) {
            fprintf(stderr, "parameter %d is '%s', not '%s'\n", i, cf_model_param_name(m, i), names[i]);
            return 0;
        }
    return 1;
}

TEST(parameter_names)
{
    cf_model *m = cf_model_load("models/mlp.flux");
    CHECK(m != NULL);
    const char *mlp[] = {"1.W", "1.b", "3.W", "3.b", "5.W", "5.b"};
    CHECK(param_names_are(m, mlp, 6));
    cf_model_free(m);

    m = cf_model_load("models/tlp.flux");
    const char *tlp[] = {"first.W", "first.b", "second.W", "second.b"};
    CHECK(param_names_are(m, tlp, 4));
    cf_model_free(m);

    m = cf_model_parse("model = Chain(Input(4), Affine(5), relu, Affine(3), softmax)", "c.flux");
    const char *chain[] = {"1.W", "1.b", "3.W", "3.b"};
    CHECK(param_names_are(m, chain, 4));
    cf_model_free(m);

    /* names bound in a body; a model used twice keeps its first name; defaults */
    m = cf_model_parse("net Enc(in, hidden = 8) {\n"
                       "  l1 = Affine(in, hidden)\n"
                       "  l2 = Affine(hidden, in)\n"
                       "  x -> l2(relu(l1(x)))\n"
                       "}\n"
                       "net Twice(inner) {\n"
                       "  x -> inner(inner(x))\n"
                       "}\n"
                       "shared = Enc(4)\n"
                       "model = Chain(Input(4), Twice(shared), shared)\n",
                       "n.flux");
    CHECK(m != NULL);
    if (!m) fprintf(stderr, "%s\n", cf_last_error());
    const char *nested[] = {"1.inner.l1.W", "1.inner.l1.b", "1.inner.l2.W", "1.inner.l2.b"};
    CHECK(param_names_are(m, nested, 4));
    cf_model_free(m);
}

TEST(templates_arguments_and_arithmetic)
{
    /* keyword arguments, defaults, arithmetic on arguments, numbers broadcast */
    const char *src = "net Inner(a, b) {\n"
                      "  W = param(a, b, init = normal(0.1))\n"
                      "  x -> x * W\n"
                      "}\n"
                      "net Outer(a, b = 3, scale = 0.5) {\n"
                      "  i = Inner(b + 1, a)\n"
                      "  j = Inner(a, b + 1)\n"
                      "  x -> (1 .- σ(i(j(x)))) .* scale\n"
                      "}\n"
                      "model = Chain(Input(6), Outer(6, scale = 2))\n";
    cf_model *m = cf_model_parse(src, "t.flux");
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "%s\n", cf_last_error());
        return;
    }
    cf_shape s = cf_model_param_shape(m, cf_model_param_index(m, "1.i.W"));
    CHECK(s.rank == 2 && s.d[0] == 4 && s.d[1] == 6);
    s = cf_model_param_shape(m, cf_model_param_index(m, "1.j.W"));
    CHECK(s.rank == 2 && s.d[0] == 6 && s.d[1] == 4);
    /* run it: y = (1 - σ(x W_j W_i)) * 2 */
    cf_exec *e = cf_bind(m, 2, 0);
    float *x = cf_exec_input(e, 0, NULL);
    for (int i = 0; i < 12; i++) x[i] = (float)(i % 5) * 0.1f;
    CHECK(cf_forward(e, 0) == 0);
    const float *Wj = cf_model_param_data(m, cf_model_param_index(m, "1.j.W"));
    const float *Wi = cf_model_param_data(m, cf_model_param_index(m, "1.i.W"));
    const float *y = cf_exec_output(e, 0, NULL);
    for (int r = 0; r < 2; r++)
        for (int o = 0; o < 6; o++) {
            double acc = 0;
            for (int k = 0; k < 4; k++) {
                double h = 0;
                for (int c = 0; c < 6; c++) h += x[r * 6 + c] * Wj[c * 4 + k];
                acc += h * Wi[k * 6 + o];
            }
            CHECK_NEAR(y[r * 6 + o], (1 - 1 / (1 + exp(-acc))) * 2, 1e-5);
        }
    cf_exec_free(e);
    cf_model_free(m);
}

TEST(several_inputs_and_outputs)
{
    const char *src = "net Two(n) {\n"
                      "  A = param(n, n)\n"
                      "  (x, h) -> (x * A + h, hcat(x, h), mean(sum(x .* h)))\n"
                      "}\n"
                      "model = Two(3)\n";
    cf_model *m = cf_model_parse(src, "two.flux");
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "%s\n", cf_last_error());
        return;
    }
    CHECK(cf_model_input_count(m) == 2 && cf_model_output_count(m) == 3);
    CHECK(strcmp(cf_model_input_name(m, 1), "h") == 0);
    char buf[64];
    CHECK(strcmp(cf_shape_format(cf_model_output_shape(m, 1), buf, sizeof buf), "(B, 6)") == 0);
    CHECK(strcmp(cf_shape_format(cf_model_output_shape(m, 2), buf, sizeof buf), "()") == 0);
    cf_model_free(m);
}

TEST(lambdas_functions_and_reshape_in_chains)
{
    const char *src = "model = Chain(Input(28, 28), flatten, Affine(16), x -> leakyrelu(x, 0.2) .* 2,\n"
                      "              x -> reshape(x, 4, 4), x -> sum(x), softmax)\n";
    cf_model *m = cf_model_parse(src, "l.flux");
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "%s\n", cf_last_error());
        return;
    }
    char buf[64];
    CHECK(strcmp(cf_shape_format(cf_model_input_shape(m, 0), buf, sizeof buf), "(B, 28, 28)") == 0);
    CHECK(strcmp(cf_shape_format(cf_model_output_shape(m, 0), buf, sizeof buf), "(B, 4)") == 0);
    cf_model_free(m);
    /* Input(784) accepts a value of 784 elements in another shape */
    m = cf_model_parse("net F() { x -> g(reshape(x, 28, 28)) }\ng = Chain(Input(784), Affine(784, 2))\n"
                       "model = Chain(Input(784), F())\n", "r.flux");
    CHECK(m != NULL);   /* g is bound after net F, and visible when F's forward runs */
    if (!m) fprintf(stderr, "%s\n", cf_last_error());
    CHECK(m && strcmp(cf_shape_format(cf_model_output_shape(m, 0), buf, sizeof buf), "(B, 2)") == 0);
    cf_model_free(m);
}

/* An op with CF_CALL in its table row is a function of the notation with no change to
 * the compiler: softplus, as a Chain element and as a call, gives log(1 + e^x); a
 * misspelling suggests it. */
TEST(ops_are_functions_of_the_notation_by_their_table_rows)
{
    cf_model *m = cf_model_parse("model = Chain(Input(3), softplus, x -> softplus(x) .* 1)\n", "s.flux");
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "%s\n", cf_last_error());
        return;
    }
    CHECK(cf_model_init_params(m) == 0);
    cf_exec *e = cf_bind(m, 1, 0);
    CHECK(e != NULL);
    if (!e) {
        cf_model_free(m);
        return;
    }
    float *x = cf_exec_input(e, 0, NULL);
    x[0] = -30, x[1] = 0, x[2] = 30;
    CHECK(cf_forward(e, 0) == 0);
    const float *y = cf_exec_output(e, 0, NULL);
    for (int i = 0; i < 3; i++) {
        double once = log1p(exp((double)x[i])), want = log1p(exp(once));
        CHECK(fabs(y[i] - want) <= 1e-6 * (1 + want));
    }
    cf_exec_free(e);
    cf_model_free(m);
    m = cf_model_parse("model = Chain(Input(3), softplux)\n", "t.flux");
    CHECK(m == NULL && strstr(cf_last_error(), "softplus"));
    cf_model_free(m);
}

/* The output of model m (parameters initialised) for x (B x n numbers): 0 if it ran. */
static int run_model(cf_model *m, int B, const float *x, size_t n, float *y)
{
    if (cf_model_init_params(m)) return -1;
    cf_exec *e = cf_bind(m, B, 0);
    if (!e) return -1;
    memcpy(cf_exec_input(e, 0, NULL), x, n * sizeof *x);
    size_t ny = 0;
    int rc = cf_forward(e, 0);
    if (!rc) memcpy(y, cf_exec_output(e, 0, &ny), n * sizeof *y);
    cf_exec_free(e);
    return rc || ny != n ? -1 : 0;
}

/* clamp, an op with numbers, comes to the notation from its row alone: by position
 * (clamp(x, 0, 6)), by keyword in any order, one bound left to its default: the bits
 * of min(max(x, lo), hi) computed here. Bare in a Chain (no numbers) it is refused, as are a
 * number too many and a keyword it does not have. */
TEST(clamp_in_the_notation)
{
    enum { B = 2, D = 6, N = B * D };
    const float x[N] = {-9, -2, -0.5f, 0.25f, 0.75f, 3, 7, 1.5f, -1, 1, 0, 5.5f};
    float want[N], got[N];
    cf_model *m = cf_model_parse("model = Chain(Input(6), x -> clamp(x, -4, 6) .* 0.5,\n"
                                 "              x -> clamp(x, hi = 1, lo = -1) + clamp(x, lo = 0.5))\n", "c.flux");
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "%s\n", cf_last_error());
        return;
    }
    CHECK(run_model(m, B, x, N, got) == 0);
    cf_model_free(m);
    for (int i = 0; i < N; i++) {
        float a = fminf(fmaxf(x[i], -4), 6) * 0.5f;
        want[i] = fminf(fmaxf(a, -1), 1) + fmaxf(a, 0.5f);
    }
    CHECK(memcmp(got, want, sizeof got) == 0);
    static const struct { const char *src, *msg; } bad[] = {
        {"model = Chain(Input(4), clamp)\n", "clamp with neither lo nor hi changes nothing"},
        {"model = Chain(Input(4), x -> clamp(x, 0, 6, 1))\n", "clamp takes a value and at most 2 numbers"},
        {"model = Chain(Input(4), x -> clamp(x, low = 0))\n", "clamp has no argument named 'low'"},
    };
    for (int i = 0; i < (int)(sizeof bad / sizeof bad[0]); i++) {
        m = cf_model_parse(bad[i].src, "b.flux");
        CHECK(m == NULL);
        CHECK_HAS(cf_last_error(), bad[i].msg);
        cf_model_free(m);
    }
}

/* The standard library's LayerNorm (γ ones, β zeros; eps given), gelu bare in a Chain
 * (the tanh form) and gelu(x, exact = true) (the erf form): the bits of the same ops
 * made in C. Their keywords are checked. */
TEST(layernorm_and_gelu_in_the_notation)
{
    enum { B = 3, T = 2, D = 6, N = B * T * D };
    float x[N], want[N], got[N];
    for (int i = 0; i < N; i++) x[i] = (float)((i * 7) % 13) / 3.0f - 2.0f;
    cf_model *m = cf_model_parse("model = Chain(Input(2, 6), LayerNorm(eps = 1e-3), gelu, "
                                 "x -> gelu(x, exact = true))\n", "g.flux");
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "%s\n", cf_last_error());
        return;
    }
    CHECK(cf_model_param_index(m, "1.γ") >= 0 && cf_model_param_index(m, "1.β") >= 0);
    CHECK(cf_model_weight_count(m) == 2 * D);
    CHECK(run_model(m, B, x, N, got) == 0);
    cf_model_free(m);
    m = cf_model_new();
    cf_node *in = cf_input(m, "x", CF_SHAPE(T, D));
    cf_node *g = cf_param(m, "g", CF_SHAPE(D), CF_ONES), *b = cf_param(m, "b", CF_SHAPE(D), CF_ZEROS);
    cf_output(m, cf_gelu_exact(m, cf_gelu(m, cf_layernorm(m, in, g, b, 1e-3f))));
    CHECK(run_model(m, B, x, N, want) == 0);
    CHECK(memcmp(got, want, sizeof got) == 0);
    cf_model_free(m);
    static const struct { const char *src, *msg; } bad[] = {
        {"model = Chain(Input(4), x -> gelu(x, exact = 2))\n", "gelu's exact is true or false"},
        {"model = Chain(Input(4), x -> gelu(x, approximate = true))\n", "gelu has no argument named 'approximate'"},
        {"model = Chain(Input(4), gelu(exact = true))\n", "in a Chain write just gelu"},
        {"model = Chain(Input(4), x -> gelu(x, x))\n", "gelu takes one value but was given 2 arguments"},
        {"model = Chain(Input(4), LayerNorm(eps = 0))\n", "layernorm's eps must be a number in (0, 1)"},
        {"model = Chain(Input(4), x -> layernorm(x, x))\n", "layernorm takes a value, the scale and the shift"},
        {"model = Chain(Input(4), x -> layernorm(x, x, x))\n", "the scale (gamma) must hold one number per element"},
        {"model = Chain(Input(4), LayerNorm(4, epsilon = 1e-3))\n", "LayerNorm has no parameter 'epsilon'"},
    };
    for (int i = 0; i < (int)(sizeof bad / sizeof bad[0]); i++) {
        m = cf_model_parse(bad[i].src, "b.flux");
        CHECK(m == NULL);
        CHECK_HAS(cf_last_error(), bad[i].msg);
        cf_model_free(m);
    }
}

/* The notation's attention pieces: transpose of sample dimensions, sqrt of numbers,
 * repeat making fresh copies, positions, dropout(x, 0) as x itself; the standard
 * library's GPT counts its parameters; a head count that does not divide the width
 * and a sequence longer than the context are errors naming the model's line. */
TEST(attention_in_the_notation)
{
    enum { B = 2, T = 3, H = 2, D = 4, N = B * T * H * D };
    float x[N], got[N];
    for (int i = 0; i < N; i++) x[i] = (float)i;
    cf_model *m = cf_model_parse("model = Chain(Input(3, 2, 4), x -> transpose(x, 1, 2) .* sqrt(4), "
                                 "x -> dropout(x, 0))\n", "t.flux");
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "%s\n", cf_last_error());
        return;
    }
    cf_shape ys = cf_model_output_shape(m, 0);
    CHECK(ys.rank == 4 && ys.d[1] == H && ys.d[2] == T && ys.d[3] == D);
    CHECK(run_model(m, B, x, N, got) == 0);
    int bad = 0;   /* y[b, h, t, d] = 2 x[b, t, h, d] */
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++)
                for (int d = 0; d < D; d++)
                    bad += got[((b * H + h) * T + t) * D + d] != 2 * x[((b * T + t) * H + h) * D + d];
    CHECK(bad == 0);
    CHECK(strcmp(cf_model_output_op(m, 0), "dropout") != 0);   /* dropout(x, 0) is x itself */
    cf_model_free(m);

    /* repeat: three Affines with parameters of their own, each made for what flows in */
    m = cf_model_parse("model = Chain(Input(8), repeat(Affine(8), 3), softmax)\n", "r.flux");
    CHECK(m != NULL && cf_model_param_count(m) == 6 && cf_model_weight_count(m) == 3 * (64 + 8));
    CHECK(m && cf_model_param_index(m, "1.2.W") >= 0);
    cf_model_free(m);
    m = cf_model_parse("net Twice(in) {\n  a = Affine(in, in)\n  x -> a(a(x))\n}\n"
                       "model = Chain(Input(5), repeat(Twice(5), 2))\n", "r.flux");
    CHECK(m != NULL && cf_model_weight_count(m) == 2 * (25 + 5));
    cf_model_free(m);

    /* a small GPT: its parameters, counted by hand */
    m = cf_model_parse("model = Chain(Input(6), GPT(11, 8, layers = 2, heads = 2, context = 7))\n", "g.flux");
    CHECK(m != NULL);
    size_t d = 8, per_block = 2 * 2 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d);
    CHECK(m && cf_model_weight_count(m) == 11 * d + 7 * d + 2 * per_block + 2 * d + d * 11 + 11);
    ys = m ? cf_model_output_shape(m, 0) : (cf_shape){0};
    CHECK(ys.rank == 3 && ys.d[1] == 6 && ys.d[2] == 11);
    cf_model_free(m);

    static const struct { const char *src, *msg; } errs[] = {
        {"\nmodel = Chain(Input(64), GPT(76, 128, layers = 2, heads = 3, context = 64))\n",
         "a reshape dimension must be a positive whole number, but in / heads is 42.6667: heads (3) does not divide "
         "in (128)"},
        {"\nmodel = Chain(Input(100), GPT(76, 32, layers = 1, heads = 4, context = 64))\n",
         "error: the sequence is longer than the context: (B, 100) has 100 positions, and the table (64, 32) holds 64"},
        {"blk = Affine(4, 4)\nmodel = Chain(Input(4), repeat(blk, 2))\n", "repeat would use this one model 2 times"},
        {"model = Chain(Input(4), repeat(Affine(4)))\n", "repeat takes a model and a count"},
        {"model = Chain(Input(4), repeat(Affine(4), 0))\n", "repeat's count must be a positive whole number"},
        {"model = Chain(Input(3, 4), x -> transpose(x, 0, 1))\n", "transpose cannot move the batch dimension"},
        {"model = Chain(Input(3, 4), x -> transpose(x, 1, 3))\n", "no such dimension"},
        {"model = Chain(Input(3, 4), x -> transpose(x, 1.5, 2))\n", "transpose's first dimension must be a whole number"},
        {"model = Chain(Input(4), x -> x .* sqrt(-1))\n", "sqrt takes one number, not negative"},
        {"model = Chain(Input(4), x -> positions(x, x))\n", "positions' table must be a matrix"},
        /* no sequence dimension: the batch met a dimension of a sample ("(B, -1, 16)") */
        {"model = Chain(Input(16), TransformerBlock(heads = 4))\n",
         "error: addition shapes do not broadcast: (B, 16) and (B, 1, 16)"},
    };
    for (int i = 0; i < (int)(sizeof errs / sizeof errs[0]); i++) {
        m = cf_model_parse(errs[i].src, "gpt.flux");
        CHECK(m == NULL);
        CHECK_HAS(cf_last_error(), errs[i].msg);
        if (i < 2) CHECK_HAS(cf_last_error(), "in model at gpt.flux:2:9");   /* the user's line */
        cf_model_free(m);
    }
}

/* Conv2D from the standard library: `in` is the channels of what flows in; conv2d's
 * keywords are checked; a kernel larger than the image and a channel mismatch are
 * errors that name the line of the layer. */
/* positions(P, x) is the first T rows of the table, 0..T-1, whether the sequence is
 * shorter than the context (a slice) or fills it (P itself): x + positions(P, x) for
 * x (B, T, 4), against x and P's rows read back. */
TEST(positions_are_the_tables_first_rows)
{
    enum { B = 2, D = 4, CONTEXT = 6 };
    for (int T = 1; T <= CONTEXT; T++) {
        char src[256];
        snprintf(src, sizeof src,
                 "net Pos(context, d) {\n"
                 "  P = param(context, d, init = normal(1))\n"
                 "  x -> x + positions(P, x)\n"
                 "}\n"
                 "model = Chain(Input(%d, %d), Pos(%d, %d))\n", T, D, CONTEXT, D);
        cf_model *m = cf_model_parse(src, "p.flux");
        CHECK(m != NULL);
        if (!m) {
            fprintf(stderr, "%s\n", cf_last_error());
            continue;
        }
        int n = B * T * D;
        float x[B * CONTEXT * D], got[B * CONTEXT * D];
        for (int i = 0; i < n; i++) x[i] = (float)(i % 7) * 100.0f;
        CHECK(run_model(m, B, x, (size_t)n, got) == 0);
        const float *P = cf_model_param_data(m, 0);
        int bad = 0, shifted = 0;   /* shifted: the values of rows 1..T instead */
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++)
                for (int j = 0; j < D; j++) {
                    int i = (b * T + t) * D + j;
                    bad += got[i] != x[i] + P[t * D + j];
                    shifted += t + 1 < CONTEXT && got[i] == x[i] + P[(t + 1) * D + j];
                }
        if (bad) fprintf(stderr, "  T %d of %d: %d of %d differ, %d are rows 1..T\n", T, CONTEXT, bad, n, shifted);
        CHECK(bad == 0);
        cf_model_free(m);
    }
}

TEST(conv2d_in_the_notation)
{
    cf_model *m = cf_model_parse("model = Chain(Input(1, 28, 28), Conv2D(8, 5), relu,\n"
                                 "              Conv2D(16, 3, stride = 2, pad = 1), flatten, Affine(10), softmax)\n",
                                 "c.flux");
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "%s\n", cf_last_error());
        return;
    }
    char buf[64];
    CHECK(strcmp(cf_shape_format(cf_model_output_shape(m, 0), buf, sizeof buf), "(B, 10)") == 0);
    CHECK(cf_model_param_index(m, "1.K") >= 0 || cf_model_param_count(m) == 6);
    CHECK(cf_model_weight_count(m) == 8 * 25 + 8 + 16 * 8 * 9 + 16 + 16 * 12 * 12 * 10 + 10);
    cf_model_free(m);
    m = cf_model_parse("model = Chain(Input(1, 4, 4),\n  Conv2D(8, 5))\n", "k.flux");
    CHECK(m == NULL && strstr(cf_last_error(), "larger than the input") && strstr(cf_last_error(), "k.flux:2:3"));
    cf_model_free(m);
    m = cf_model_parse("model = Chain(Input(3, 8, 8), relu,\n  Conv2D(2, 4, 3))\n", "ch.flux");
    CHECK(m == NULL && strstr(cf_last_error(), "channels do not match") && strstr(cf_last_error(), "ch.flux:2:3"));
    cf_model_free(m);
    m = cf_model_parse("model = Chain(Input(3, 8, 8), x -> conv2d(x, x, stride = 0))\n", "s.flux");
    CHECK(m == NULL && strstr(cf_last_error(), "stride must be a whole number of at least 1"));
    cf_model_free(m);
    m = cf_model_parse("model = Chain(Input(3, 8, 8), x -> conv2d(x, x, strides = 2))\n", "w.flux");
    CHECK(m == NULL && strstr(cf_last_error(), "no argument named 'strides'"));
    cf_model_free(m);
}

/* cond ? a : b is decided when the model is compiled: only the branch chosen is
 * evaluated, so only its parameters exist (and a division by zero in the other is
 * never seen, nor in the right side of && and || when the left decides). Comparisons
 * and ! give true (1) or false (0); identity is x itself; Conv2D(bias = false) has no
 * b, and reads the same kernels. */
TEST(conditionals_are_decided_when_compiling)
{
    static const char *pick =
        "net Pick(in, wide) {\n"
        "  f = wide > 1 && in != 3 ? Affine(in, 2 * in) : Chain(Affine(in, in), relu)\n"
        "  x -> f(x)\n"
        "}\n";
    char src[512];
    snprintf(src, sizeof src, "%smodel = Chain(Input(4), Pick(wide = 2))\n", pick);
    cf_model *m = cf_model_parse(src, "p.flux");
    const char *wide[] = {"1.f.W", "1.f.b"};
    CHECK(param_names_are(m, wide, 2));
    char buf[64];
    CHECK(m && strcmp(cf_shape_format(cf_model_output_shape(m, 0), buf, sizeof buf), "(B, 8)") == 0);
    cf_model_free(m);
    snprintf(src, sizeof src, "%smodel = Chain(Input(4), Pick(wide = 1))\n", pick);
    m = cf_model_parse(src, "p.flux");
    const char *narrow[] = {"1.f.0.W", "1.f.0.b"};
    CHECK(param_names_are(m, narrow, 2));
    cf_model_free(m);

    enum { B = 2, D = 3, N = B * D };
    const float x[N] = {-1.5f, 0, 2, 3, -4, 0.25f};
    float got[N];
    m = cf_model_parse("model = Chain(Input(3), identity,\n"
                       "  x -> identity(x) .* (2 >= 2) .* (1 != 1 ? 5 : 3) + (1 == 2 || !(3 < 1) ? 10 : 20),\n"
                       "  x -> x .- (false && 1 / 0 > 0) .- (true || 1 / 0 > 0 ? 1 : 2) .* (2 <= 1 ? 1 / 0 : 1))\n",
                       "c.flux");
    CHECK(m != NULL);
    if (!m) fprintf(stderr, "%s\n", cf_last_error());
    CHECK(m && run_model(m, B, x, N, got) == 0);
    for (int i = 0; m && i < N; i++) CHECK(got[i] == x[i] * 3 + 10 - 1);
    cf_model_free(m);
    m = cf_model_parse("model = Chain(Input(3), x -> true && 1 / 0 > 0 ? x : x)\n", "z.flux");
    CHECK(m == NULL && strstr(cf_last_error(), "division by zero"));
    cf_model_free(m);

    m = cf_model_parse("model = Chain(Input(2, 5, 5), Conv2D(3, 3, bias = false), Conv2D(4, 3, stride = 2))\n",
                       "b.flux");
    const char *conv[] = {"1.K", "2.K", "2.b"};
    CHECK(param_names_are(m, conv, 3));
    CHECK(m && cf_model_weight_count(m) == 3 * 2 * 9 + 4 * 3 * 9 + 4);
    cf_model_free(m);
    m = cf_model_parse("model = Chain(Input(2, 5, 5), Conv2D(3, 3, bias = 2))\n", "b2.flux");
    CHECK(m == NULL && strstr(cf_last_error(), "must be true or false") && strstr(cf_last_error(), "b2.flux:1:31"));
    cf_model_free(m);
}

/* Inside a Chain, `in` is the channels C of an image (B, C, H, W) and the last
 * dimension of anything else (docs/notation.md, "How a Chain fills in the input
 * size"). Size's W is (in, 5) whatever flows in, so its rows show what the Chain
 * gave; Affine after flatten gets the flattened size. */
TEST(chain_fills_in_channels_of_images_and_features_otherwise)
{
    static const struct { const char *input; int in; } cases[] = {
        {"Input(3, 8, 8)", 3},    /* (C, H, W): channels, not the width 8 */
        {"Input(3, 5, 8)", 3},    /* H != W: not the height either */
        {"Input(7)", 7},          /* features */
        {"Input(6, 4)", 4},       /* (T, n): the last dimension */
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        char src[512];
        snprintf(src, sizeof src,
                 "net Size(in, out) {\n"
                 "  W = param(in, out)\n"
                 "  x -> x .+ sum(sum(W))\n"
                 "}\n"
                 "model = Chain(%s, Size(5), flatten, Affine(2), softmax)\n",
                 cases[i].input);
        cf_model *m = cf_model_parse(src, "in.flux");
        CHECK(m != NULL);
        if (!m) {
            fprintf(stderr, "%s:\n%s\n", cases[i].input, cf_last_error());
            continue;
        }
        cf_shape w = cf_model_param_shape(m, cf_model_param_index(m, "1.W"));
        CHECK(w.rank == 2 && w.d[0] == cases[i].in && w.d[1] == 5);
        if (w.d[0] != cases[i].in) fprintf(stderr, "after %s, in = %d, not %d\n", cases[i].input, w.d[0], cases[i].in);
        cf_shape a = cf_model_param_shape(m, cf_model_param_index(m, "3.W"));
        cf_shape x = cf_model_input_shape(m, 0);
        CHECK(a.rank == 2 && (size_t)a.d[0] == cf_shape_count(x) && a.d[1] == 2);
        cf_model_free(m);
    }
    /* a parameter per channel broadcasts over (B, C, H, W) only if `in` is C */
    cf_model *m = cf_model_parse("net ChannelScale(in) {\n"
                                 "  g = param(in, 1, 1, init = ones)\n"
                                 "  x -> x .* g\n"
                                 "}\n"
                                 "model = Chain(Input(3, 5, 8), ChannelScale())\n",
                                 "c.flux");
    CHECK(m != NULL);
    if (!m) fprintf(stderr, "%s\n", cf_last_error());
    cf_shape g = cf_model_param_shape(m, 0);
    CHECK(m && g.rank == 3 && g.d[0] == 3 && g.d[1] == 1 && g.d[2] == 1);
    cf_model_free(m);
}

/* The same MLP from the notation and from C calls: the same parameters (same names,
 * same seed), and bitwise the same outputs and gradients. */
static cf_model *mlp_in_c(void)
{
    cf_model *m = cf_model_new();
    cf_output(m, cf_softmax(m, mlp_logits(m)));
    return m;
}

TEST(notation_mlp_equals_c_mlp)
{
    cf_model *a = cf_model_load("models/mlp.flux"), *b = mlp_in_c();
    CHECK(a != NULL);
    if (!a) return;
    cf_model_set_seed(a, 3);
    cf_model_set_seed(b, 3);
    cf_exec *ea = cf_bind(a, 8, CF_INPUT_GRADS), *eb = cf_bind(b, 8, CF_INPUT_GRADS);
    CHECK(ea && eb);
    for (int p = 0; p < 6; p++) {
        size_t n = cf_shape_count(cf_model_param_shape(a, p));
        CHECK(strcmp(cf_model_param_name(a, p), cf_model_param_name(b, p)) == 0);
        CHECK(memcmp(cf_model_param_data(a, p), cf_model_param_data(b, p), n * sizeof(float)) == 0);
    }
    float *xa = cf_exec_input(ea, 0, NULL), *xb = cf_exec_input(eb, 0, NULL);
    float *ha = cf_exec_output_grad(ea, 0, NULL), *hb = cf_exec_output_grad(eb, 0, NULL);
    srand(9);
    for (int i = 0; i < 8 * 784; i++) xa[i] = xb[i] = (float)rand() / (float)RAND_MAX;
    for (int i = 0; i < 80; i++) ha[i] = hb[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    CHECK(cf_forward(ea, 1) == 0 && cf_forward(eb, 1) == 0);
    CHECK(cf_backward(ea) == 0 && cf_backward(eb) == 0);
    CHECK(memcmp(cf_exec_output(ea, 0, NULL), cf_exec_output(eb, 0, NULL), 80 * sizeof(float)) == 0);
    for (int p = 0; p < 6; p++) {
        size_t n = cf_shape_count(cf_model_param_shape(a, p));
        CHECK(memcmp(cf_model_param_grad(a, p), cf_model_param_grad(b, p), n * sizeof(float)) == 0);
    }
    CHECK(memcmp(cf_exec_input_grad(ea, 0, NULL), cf_exec_input_grad(eb, 0, NULL), 8 * 784 * sizeof(float)) == 0);
    cf_exec_free(ea);
    cf_exec_free(eb);
    cf_model_free(a);
    cf_model_free(b);
}

TEST(shapes_listing)
{
    FILE *f = tmpfile();
    CHECK(cf_model_print_shapes("models/mlp.flux", 5, f) == 0);
    char buf[8192];
    rewind(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    CHECK_HAS(buf, "(5, 784) * (784, 128) -> (5, 128)");
    CHECK_HAS(buf, "Affine  (called at models/mlp.flux:4:3)");
    CHECK_HAS(buf, "| Affine(64), relu,");
    CHECK_HAS(buf, "output 0");

    FILE *src = fopen("/tmp/cflux-tlp-bad.flux", "w");
    fputs(tlp_src, src);
    fclose(src);
    f = tmpfile();
    CHECK(cf_model_print_shapes("/tmp/cflux-tlp-bad.flux", 0, f) != 0);
    CHECK_HAS(cf_last_error(), "in TLP at /tmp/cflux-tlp-bad.flux:5:13");
    rewind(f);
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    remove("/tmp/cflux-tlp-bad.flux");
    CHECK_HAS(buf, "(B, 20) * (21, 15)");
    CHECK_HAS(buf, "^ shapes stop fitting here: matrix product shapes do not match");
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (t.tv_nsec - t0->tv_nsec) * 1e-9;
}

/* Tiny files that ask for huge things (found probing the attention pieces): nested
 * repeats and nets that each make several of another multiply into more models than a
 * compile makes (it used to run for many minutes, its memory growing); a model of
 * tens of thousands of parameters compiles in about a second (each new name was
 * compared with every name before it); joins and reshapes whose dimension would not
 * fit an int are refused (hcat overflowed; reshape(x, -1, 1) cut 10^10 to 1410065408). */
TEST(huge_counts_and_sizes_are_refused_quickly)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cf_model *m = cf_model_parse("model = Chain(Input(4), repeat(repeat(repeat(repeat(Affine(4), 64), 64), 64), 64))\n",
                                 "r.flux");
    CHECK(m == NULL);
    CHECK_HAS(cf_last_error(), "error: the model makes more than 100000 nets, Chains and functions");
    CHECK_HAS(cf_last_error(), "in model at r.flux:1:");
    cf_model_free(m);
    char src[2048] = "net A0(in) {\n  W = param(in, in)\n  x -> x * W\n}\n";
    for (int i = 1; i < 24; i++)   /* A23 makes 2^23 A0s */
        snprintf(src + strlen(src), sizeof src - strlen(src), "net A%d(in) {\n  p = A%d(in)\n  q = A%d(in)\n"
                 "  x -> q(p(x))\n}\n", i, i - 1, i - 1);
    strcat(src, "model = Chain(Input(2), A23())\n");
    m = cf_model_parse(src, "d.flux");
    CHECK(m == NULL);
    CHECK_HAS(cf_last_error(), "the model makes more than 100000 nets");
    cf_model_free(m);
    CHECK(seconds_since(&t0) < 20);

    clock_gettime(CLOCK_MONOTONIC, &t0);   /* 32768 Affines: 65536 parameters */
    m = cf_model_parse("model = Chain(Input(4), repeat(repeat(repeat(Affine(4), 64), 64), 8))\n", "p.flux");
    double took = seconds_since(&t0);
    CHECK(m != NULL && cf_model_param_count(m) == 65536);
    CHECK(took < 20);   /* about 0.5 s (3 s with ASan); 105 s when each name met all before it */
    if (took >= 20) fprintf(stderr, "  65536 parameters took %.1f s\n", took);
    cf_model_free(m);

    static const struct { const char *src, *msg; } errs[] = {
        {"model = Chain(Input(1000000000), x -> hcat(x, x, x))\n",
         "error: concat along dimension -1 of (B, 1000000000) and (B, 1000000000): the joined dimension would be "
         "more than 2147483647"},
        {"model = Chain(Input(100000, 100000), x -> reshape(x, -1, 1))\n",
         "error: reshape of (B, 100000, 100000) would make a dimension of 10000000000, and a dimension holds at most "
         "2147483647"},
        {"model = Chain(Input(100000, 100000), flatten)\n",
         "error: flatten of (B, 100000, 100000) would make a dimension of 10000000000"},
    };
    for (int i = 0; i < (int)(sizeof errs / sizeof errs[0]); i++) {
        m = cf_model_parse(errs[i].src, "big.flux");
        CHECK(m == NULL);
        CHECK_HAS(cf_last_error(), errs[i].msg);
        cf_model_free(m);
    }
}

/* Every built-in's call is held to its row of the table (builtins.c: where it belongs,
 * its keywords and their kinds, its arguments' count and kinds) by one check, whose
 * messages follow one pattern: the whole first line of each is compared. */
TEST(builtins_are_held_to_their_rows)
{
    static const struct { const char *src, *msg; } bad[] = {
        /* where it belongs */
        {"model = Chain(Input(4), x -> x * param(4, 4))\n",
         "error: param(...) belongs in a net body, before the forward function\n"},
        {"net N(in) {\n  T = transpose(in, 0, 1)\n  x -> x\n}\nmodel = Chain(Input(4), N(4))\n",
         "error: transpose(...) works on values inside a forward function\n"},
        {"model = Chain(Input(4), hcat(1))\n",
         "error: hcat(...) works on values inside a forward function; in a Chain write just hcat\n"},
        /* keywords: none taken, one meant, the ones taken */
        {"model = Chain(Input(4), x -> dropout(x, 0.5, p = 1))\n", "error: dropout has no argument named 'p'\n"},
        {"model = Chain(Input(1, 8, 8), x -> maxpool(x, 2, strid = 1))\n",
         "error: maxpool has no argument named 'strid' (did you mean 'stride'?)\n"},
        {"model = Chain(Input(1, 8, 8), x -> conv2d(x, x, shift = 1))\n",
         "error: conv2d has no argument named 'shift' (it takes stride, pad, dilation and groups)\n"},
        /* another framework's name for a keyword, a layer, a function; case aside */
        {"model = Chain(Input(1, 8, 8), x -> conv2d(x, x, padding = 1))\n",
         "error: conv2d has no argument named 'padding' (did you mean 'pad'? PyTorch's and Keras's padding is pad in "
         "cflux)\n"},
        {"model = Chain(Input(4), Linear(4, 3), softmax)\n",
         "error: unknown name 'Linear' (did you mean 'Affine'? PyTorch's Linear is Affine in cflux)\n"},
        {"model = Chain(Input(4), Affine(3), Sigmoid)\n",
         "error: unknown name 'Sigmoid' (did you mean 'sigmoid'? PyTorch's Sigmoid is sigmoid in cflux)\n"},
        {"model = Chain(Input(4), Affine(3), SOFTMAX)\n", "error: unknown name 'SOFTMAX' (did you mean 'softmax'?)\n"},
        {"net N(in) {\n  s = state(in, start = zeros)\n  x -> x\n}\nmodel = Chain(Input(4), N(4))\n",
         "error: state has no argument named 'start' (it takes init)\n"},
        /* each kind of keyword */
        {"model = Chain(Input(1, 8, 8), x -> avgpool(x, 2, pad = -1))\n",
         "error: avgpool's pad must be a whole number of at least 0\n"},
        {"model = Chain(Input(1, 8, 8), x -> avgpool(x, 2, stride = 1.5))\n",
         "error: avgpool's stride must be a whole number of at least 0 (0: the window's size)\n"},
        {"model = Chain(Input(4), unroll(Chain(Input(4), relu), 3, stateful = 2))\n",
         "error: unroll's stateful is true or false\n"},
        {"model = Chain(Input(4), x -> softmax(x, causal = relu))\n", "error: softmax's causal is true or false\n"},
        {"model = Chain(Input(4), BatchNorm(4, momentum = 0))\n",
         "error: batchnorm's momentum must be a number in (0, 1]\n"},
        {"net N(in) {\n  W = stat(in, init = 1)\n  x -> x\n}\nmodel = Chain(Input(4), N(4))\n",
         "error: init must be an initialiser (glorot, zeros, ones, normal(std), uniform(a)), not a number\n"},
        {"net N(in) {\n  s = state(in, init = glorot)\n  x -> x\n}\nmodel = Chain(Input(4), N(4))\n",
         "error: state's init must be zeros or ones\n"},
        /* the arguments' count and kinds */
        {"model = Chain(Input(4), x -> embedding(x, x, x))\n",
         "error: embedding takes indices and a table: embedding(x, E)\n"},
        {"model = Chain(Input(4), x -> softmax())\n", "error: softmax takes one value but was given 0 arguments\n"},
        {"model = Chain(Input(4), x -> reshape())\n",
         "error: reshape needs a value as its first argument: nothing was given\n"},
        {"model = Chain(Input(4), x -> chunk(2, 1, 2))\n",
         "error: chunk takes a value, a part and a number of parts: chunk(z, 2, 4)\n"},
        {"model = Chain(Input(4), x -> layernorm(x, 1, x))\n",
         "error: layernorm's argument 2 must be a value, not a number\n"},
        {"model = Chain(Input(4), x -> hcat(x, 3))\n", "error: hcat's argument 2 must be a value, not a number\n"},
        {"model = Chain(Input(4), unroll(relu, 3))\n",
         "error: unroll takes a model and a number of steps: unroll(m, 50, stateful = true)\n"},
        {"model = x -> dropout(x, 0.5)\n",
         "error: cannot tell the shape of the input 'x' from dropout: begin the model with Input(...)\n"},
    };
    for (int i = 0; i < (int)(sizeof bad / sizeof bad[0]); i++) {
        cf_model *m = cf_model_parse(bad[i].src, "b.flux");
        CHECK(m == NULL);
        CHECK_HAS(cf_last_error(), bad[i].msg);
        cf_model_free(m);
    }
}

/* How many "note:" lines notes holds. */
static int count_notes(const char *notes)
{
    int n = 0;
    for (const char *p = notes; (p = strstr(p, "note: ")); p++) n++;
    return n;
}

/* A net with state outside unroll compiles, with a note that names the net, where it
 * was written and the model rewritten; inside unroll, or with no state, none. */
TEST(state_outside_unroll_is_noted)
{
    cf_model *m = cf_model_parse("model = Chain(Input(65), GRU(128), Affine(65), softmax)\n", "m.flux");
    CHECK(m != NULL);
    const char *notes = cf_model_compile_notes(m);
    CHECK_HAS(notes, "note: GRU at m.flux:1:26 keeps a state but runs outside unroll: each batch is one step from "
                     "the state's start, so h{-1} is always zeros");
    CHECK_HAS(notes, "write model = unroll(Chain(Input(65), GRU(128), Affine(65), softmax), n), whose Input is "
                     "one step's\n");
    CHECK(count_notes(notes) == 1);
    cf_model_free(m);

    /* a state of one's own inside a net of one's own, and an LSTM (two states, one
       note); the model over lines, with a comment, rewritten on one */
    m = cf_model_parse("net Acc(in) {\n"
                       "  s = state(in)\n"
                       "  x -> { s = s{-1} + x }\n"
                       "}\n"
                       "net Wrap(in) {\n"
                       "  a = Acc(in)\n"
                       "  x -> a(x)\n"
                       "}\n"
                       "model = Chain(\n"
                       "  Input(3),   # three\n"
                       "  Wrap(), LSTM(4))\n", "m.flux");
    CHECK(m != NULL);
    notes = cf_model_compile_notes(m);
    CHECK_HAS(notes, "note: Acc at m.flux:6:7 keeps a state but runs outside unroll");
    CHECK_HAS(notes, "so s{-1} is always zeros");
    CHECK_HAS(notes, "note: LSTM at m.flux:11:11 keeps a state");
    CHECK_HAS(notes, "write model = unroll(Chain(Input(3), Wrap(), LSTM(4)), n), whose Input is one step's\n");
    CHECK(count_notes(notes) == 2);
    cf_model_free(m);

    /* a model that does not compile has the note after its error: here a GRU given a
       whole sequence at once, as if unrolled */
    m = cf_model_parse("model = Chain(Input(50), Embedding(76, 64), GRU(128), Affine(76), softmax)\n", "m.flux");
    CHECK(m == NULL);
    CHECK_HAS(cf_last_error(), "error: addition shapes do not broadcast: (B, 50, 128) and (B, 128)\n");
    CHECK_HAS(cf_last_error(), "  in model at m.flux:1:9\nnote: GRU at m.flux:1:45 keeps a state but runs outside "
                               "unroll: ");
    cf_model_free(m);

    /* none: inside unroll, stateful or not; a model of no state; a model built in C */
    const char *quiet[] = {
        "model = unroll(Chain(Input(65), GRU(128), Affine(65), softmax), 50)\n",
        "model = unroll(Chain(Input(3), Recurrent(4)), 5, stateful = false)\n",
        "model = Chain(Input(3), x -> unroll(Chain(Input(3), LSTM(4)), 1)(reshape(x, 1, 3)))\n",
        "model = Chain(Input(4), Affine(8), relu, Affine(3), softmax)\n",
    };
    for (size_t i = 0; i < sizeof quiet / sizeof *quiet; i++) {
        m = cf_model_parse(quiet[i], "m.flux");
        CHECK(m != NULL);
        if (m && *cf_model_compile_notes(m)) {
            CHECK(!*cf_model_compile_notes(m));
            fprintf(stderr, "%s: %s", quiet[i], cf_model_compile_notes(m));
        }
        cf_model_free(m);
    }
    /* as cflux sample loads a recurrent model: one step, still inside unroll */
    m = cf_model_load_steps("models/char-gru.flux", 1);
    CHECK(m != NULL && !*cf_model_compile_notes(m));
    cf_model_free(m);
    m = cf_model_new();
    CHECK(!strcmp(cf_model_compile_notes(m), "") && !strcmp(cf_model_compile_notes(NULL), ""));
    cf_model_free(m);
}

int main(void)
{
    RUN(tlp_trace_points_into_the_source);
    RUN(parameter_names);
    RUN(templates_arguments_and_arithmetic);
    RUN(several_inputs_and_outputs);
    RUN(lambdas_functions_and_reshape_in_chains);
    RUN(ops_are_functions_of_the_notation_by_their_table_rows);
    RUN(layernorm_and_gelu_in_the_notation);
    RUN(clamp_in_the_notation);
    RUN(conv2d_in_the_notation);
    RUN(chain_fills_in_channels_of_images_and_features_otherwise);
    RUN(conditionals_are_decided_when_compiling);
    RUN(notation_mlp_equals_c_mlp);
    RUN(shapes_listing);
    RUN(attention_in_the_notation);
    RUN(positions_are_the_tables_first_rows);
    RUN(huge_counts_and_sizes_are_refused_quickly);
    RUN(builtins_are_held_to_their_rows);
    RUN(state_outside_unroll_is_noted);
    return test_summary("notation");
}
