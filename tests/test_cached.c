/* test_cached.c - a GPT run one position at a time against its cache of keys and
 * values (cf_model_load_cached, src/lang/cached.c; ops/cache.c; ops/attention.c with
 * positions): the window model's outputs at every position, to rounding, at 1 and 2
 * threads and for samples at different places; the cache full, emptied and refilled;
 * several positions read at once (cf_model_load_cached_n) and the caches moved to the
 * one-position model; and the models it refuses. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cflux.h"
#include "test.h"
#include "tmpdir.h"

/* A table of positions longer than the window (a slice of it is read) and just as long
 * (the table itself). */
static const char *const gpts[2] = {
    "model = Chain(Input(12), GPT(9, 16, layers = 2, heads = 2, context = 16, drop = 0.2))\n",
    "model = Chain(Input(12), GPT(9, 16, layers = 1, heads = 4, context = 12))\n",
};

static const char *write_model(const char *name, const char *src)
{
    const char *path = tmp(name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(src, f);
        fclose(f);
    }
    return path;
}

/* Sample b's character at position t. */
static float char_at(int b, int t) { return (float)((t * (b + 2) + 3 * b + 1) % 9); }

/* The window model's outputs (B 2, T 12, 9) on the characters of char_at. */
static const float *window_outputs(cf_exec *ew)
{
    float *x = cf_exec_input(ew, 0, NULL);
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < 12; t++) x[b * 12 + t] = char_at(b, t);
    CHECK(cf_forward(ew, 0) == 0);
    return cf_exec_output(ew, 0, NULL);
}

static void steps_give_the_window_outputs(const char *src)
{
    const char *path = write_model("gpt.flux", src);
    cf_model *w = cf_model_load(path);
    cf_exec *ew = w ? cf_bind(w, 2, 0) : NULL;
    CHECK(ew != NULL && cf_model_save_params(w, tmp("gpt.st")) == 0);
    cf_model *c = cf_model_load_cached(path);
    CHECK(c != NULL);
    if (!ew || !c) {
        fprintf(stderr, "%s\n", cf_last_error());
        cf_exec_free(ew), cf_model_free(w), cf_model_free(c);
        return;
    }
    CHECK(cf_model_cache_size(c) == 12 && cf_model_cache_size(w) == 0);
    cf_shape in = cf_model_input_shape(c, 0), out = cf_model_output_shape(c, 0);
    CHECK(in.rank == 2 && in.d[1] == 1 && out.rank == 3 && out.d[1] == 1 && out.d[2] == 9);
    CHECK(cf_model_load_params(c, tmp("gpt.st")) == 0);   /* the window model's names */
    const float *want = window_outputs(ew);
    for (int threads = 1; threads <= 2; threads++) {
        cf_set_threads(threads);
        cf_exec *ec = cf_bind(c, 2, 0);
        CHECK(ec != NULL);
        if (!ec) break;
        for (int round = 0; round < 2; round++) {   /* a second time after emptying the cache */
            double worst = 0;
            for (int t = 0; t < 12; t++) {
                float *xc = cf_exec_input(ec, 0, NULL);
                xc[0] = char_at(0, t), xc[1] = char_at(1, t);
                CHECK(cf_forward(ec, 0) == 0);
                const float *got = cf_exec_output(ec, 0, NULL);
                for (int b = 0; b < 2; b++)
                    for (int v = 0; v < 9; v++) {
                        double d = fabs((double)got[b * 9 + v] - (double)want[(b * 12 + t) * 9 + v]);
                        worst = d > worst ? d : worst;
                    }
            }
            CHECK(worst < 1e-5);
            if (worst >= 1e-5) fprintf(stderr, "threads %d round %d: differs by %g\n", threads, round, worst);
            /* full: the next forward fails, naming the cache */
            CHECK(cf_forward(ec, 0) == -1);
            CHECK_HAS(cf_last_error(), "sample 0 is at position 12, and the cache holds 12 positions: it is full "
                                       "(cf_exec_reset_state empties it)");
            CHECK_HAS(cf_last_error(), "<stdlib>/transformer.flux:");
            cf_exec_reset_state(ec);
        }
        cf_exec_free(ec);
    }
    cf_set_threads(0);
    cf_exec_free(ew);
    cf_model_free(w);
    cf_model_free(c);
}

TEST(cached_steps_give_the_window_outputs)
{
    for (int i = 0; i < 2; i++) steps_give_the_window_outputs(gpts[i]);
}

/* The caches moved from executor `from` to `to` (the same states, in the same order). */
static void move_states(cf_exec *from, cf_exec *to) { CHECK(cf_exec_state_copy(from, to) == 0); }

/* Positions [t0, t0 + n) read by e, compared with the window model's outputs: the
 * largest difference. */
static double read_positions(cf_exec *e, int n, int t0, const float *want)
{
    float *x = cf_exec_input(e, 0, NULL);
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < n; t++) x[b * n + t] = char_at(b, t0 + t);
    if (cf_forward(e, 0)) {
        fprintf(stderr, "%s\n", cf_last_error());
        return INFINITY;
    }
    const float *got = cf_exec_output(e, 0, NULL);
    double worst = 0;
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < n; t++)
            for (int v = 0; v < 9; v++) {
                double d = fabs((double)got[(b * n + t) * 9 + v] - (double)want[(b * 12 + t0 + t) * 9 + v]);
                worst = d > worst ? d : worst;
            }
    return worst;
}

/* Read five positions at once (a prompt), then one at a time, then five at once again,
 * the caches moved between the two executors: the window model's outputs throughout;
 * and the whole window in one forward. */
TEST(prefill_then_steps)
{
    for (int g = 0; g < 2; g++) {
        const char *path = write_model("gpt.flux", gpts[g]);
        cf_model *w = cf_model_load(path), *c1 = cf_model_load_cached(path), *c5 = cf_model_load_cached_n(path, 5),
                 *c12 = cf_model_load_cached_n(path, 12);
        cf_exec *ew = w ? cf_bind(w, 2, 0) : NULL;
        CHECK(ew && c1 && c5 && c12 && cf_model_save_params(w, tmp("gpt.st")) == 0);
        if (!ew || !c1 || !c5 || !c12) {
            fprintf(stderr, "%s\n", cf_last_error());
            cf_exec_free(ew), cf_model_free(w), cf_model_free(c1), cf_model_free(c5), cf_model_free(c12);
            continue;
        }
        cf_shape in = cf_model_input_shape(c5, 0), out = cf_model_output_shape(c5, 0);
        CHECK(in.d[1] == 5 && out.d[1] == 5 && cf_model_cache_size(c5) == 12);
        CHECK(cf_model_load_params(c1, tmp("gpt.st")) == 0 && cf_model_load_params(c5, tmp("gpt.st")) == 0 &&
              cf_model_load_params(c12, tmp("gpt.st")) == 0);
        const float *want = window_outputs(ew);
        for (int threads = 1; threads <= 2; threads++) {
            cf_set_threads(threads);
            cf_exec *e1 = cf_bind(c1, 2, 0), *e5 = cf_bind(c5, 2, 0), *e12 = cf_bind(c12, 2, 0);
            CHECK(e1 && e5 && e12);
            if (e1 && e5 && e12) {
                double worst = read_positions(e5, 5, 0, want);   /* 0 .. 4 at once */
                move_states(e5, e1);
                worst = fmax(worst, read_positions(e1, 1, 5, want));   /* 5, 6 one at a time */
                worst = fmax(worst, read_positions(e1, 1, 6, want));
                move_states(e1, e5);
                worst = fmax(worst, read_positions(e5, 5, 7, want));   /* 7 .. 11 at once */
                worst = fmax(worst, read_positions(e12, 12, 0, want));
                if (!(worst < 1e-5)) fprintf(stderr, "gpt %d, threads %d: differs by %g\n", g, threads, worst);
                CHECK(worst < 1e-5);
                CHECK(cf_exec_state_copy(e5, ew) == -1);   /* the window model carries nothing */
                CHECK_HAS(cf_last_error(), "carried states, and 0 to copy them into");
                CHECK(cf_forward(e5, 0) == -1);   /* full */
                CHECK_HAS(cf_last_error(), "sample 0 is at position 12, and the cache holds 12 positions");
            }
            cf_exec_free(e1), cf_exec_free(e5), cf_exec_free(e12);
        }
        cf_set_threads(0);
        cf_exec_free(ew);
        cf_model_free(w), cf_model_free(c1), cf_model_free(c5), cf_model_free(c12);
    }
    const char *path = write_model("gpt.flux", gpts[1]);
    CHECK(cf_model_load_cached_n(path, 0) == NULL);
    CHECK_HAS(cf_last_error(), "gpt.flux: a cached model reads from 1 to T = 12 positions a forward, not 0");
    CHECK(cf_model_load_cached_n(path, 13) == NULL);
    CHECK_HAS(cf_last_error(), "not 13");
}

TEST(what_cannot_be_cached)
{
    /* no attention */
    CHECK(cf_model_load_cached(write_model("mlp.flux", "model = Chain(Input(8), Embedding(5, 4), Affine(5), softmax)\n"))
          == NULL);
    CHECK_HAS(cf_last_error(), "mlp.flux: no causal attention to cache");
    /* an image model: no attention, and an input that is no sequence; the first is said
       (cflux bench asks every model, and takes that answer as "nothing to time") */
    CHECK(cf_model_load_cached(write_model("cnn.flux", "model = Chain(Input(1, 8, 8), Conv2D(1, 2, 3), flatten, "
                                                      "Affine(5), softmax)\n")) == NULL);
    CHECK_HAS(cf_last_error(), "cnn.flux: no causal attention to cache");
    /* a recurrent net unrolled */
    CHECK(cf_model_load_cached(write_model("rnn.flux", "model = unroll(Chain(Input(), Embedding(5, 4), GRU(8), "
                                                      "Affine(5), softmax), 6)\n")) == NULL);
    CHECK_HAS(cf_last_error(), "rnn.flux: no causal attention to cache");
    /* a product over the positions: its shape is fixed at T */
    CHECK(cf_model_load_cached(write_model("mix.flux", "model = Chain(Input(8), GPT(5, 8, layers = 1, heads = 2, "
                                                      "context = 8), x -> transpose(x, 1, 2), Affine(8, 8), "
                                                      "x -> transpose(x, 1, 2), softmax)\n")) == NULL);
    CHECK_HAS(cf_last_error(), "mix.flux: the model does not run one position at a time (T = 1 instead of 8): ");
    /* attention that is not causal sees the positions after: nothing to cache */
    CHECK(cf_model_load_cached(write_model("plain.flux", "net A(d) {\n  W = param(d, d)\n"
                                                        "  x -> softmax((x * W) * transpose(x, 1, 2)) * x\n}\n"
                                                        "model = Chain(Input(6), Embedding(5, 4), A(4), Affine(5), "
                                                        "softmax)\n")) == NULL);
    CHECK_HAS(cf_last_error(), "no causal attention to cache");
    CHECK(cf_model_load_cached(tmp("missing.flux")) == NULL);
    CHECK_HAS(cf_last_error(), "missing.flux: cannot open");
}

int main(void)
{
    if (tmpdir_make("cached")) return 1;
    RUN(cached_steps_give_the_window_outputs);
    RUN(prefill_then_steps);
    RUN(what_cannot_be_cached);
    tmpdir_remove();
    return test_summary("cached");
}
