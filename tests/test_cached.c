/* test_cached.c - a GPT run one position at a time against its cache of keys and
 * values (cf_model_load_cached, src/lang/cached.c; ops/cache.c; ops/attention.c with
 * positions): the window model's outputs at every position, to rounding, at 1 and 2
 * threads and for samples at different places; the cache full, emptied and refilled;
 * and the models it refuses. */
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
    float *x = cf_exec_input(ew, 0, NULL);
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < 12; t++) x[b * 12 + t] = char_at(b, t);
    CHECK(cf_forward(ew, 0) == 0);
    const float *want = cf_exec_output(ew, 0, NULL);
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

TEST(what_cannot_be_cached)
{
    /* no attention */
    CHECK(cf_model_load_cached(write_model("mlp.flux", "model = Chain(Input(8), Embedding(5, 4), Affine(5), softmax)\n"))
          == NULL);
    CHECK_HAS(cf_last_error(), "mlp.flux: no causal attention to cache");
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
    RUN(what_cannot_be_cached);
    tmpdir_remove();
    return test_summary("cached");
}
