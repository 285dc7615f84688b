/* test_embedding.c - embedding(x, E): the rows it picks, the error for an index that is
 * not one (through the library and the notation, with the model's line), the same bits
 * of dE at any thread count, cf_model_input_classes, and the notation's Embedding.
 * (Its numerical gradient check is in test_grad.c.) */
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "test.h"

/* y = E[x] exactly, for x (B, T) and x (B); the forward of a (2, 3) batch. */
TEST(picks_rows)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(3));
    cf_node *s = cf_input(m, "s", CF_SCALAR);
    cf_node *E = cf_param(m, "E", CF_SHAPE(5, 4), CF_NORMAL(1));
    cf_output(m, cf_embedding(m, x, E));
    cf_output(m, cf_embedding(m, s, E));
    cf_exec *e = cf_bind(m, 2, 0);
    CHECK(e != NULL);
    if (!e) return;
    cf_shape ys = cf_model_output_shape(m, 0), ss = cf_model_output_shape(m, 1);
    CHECK(ys.rank == 3 && ys.d[0] == CF_BATCH && ys.d[1] == 3 && ys.d[2] == 4);
    CHECK(ss.rank == 2 && ss.d[0] == CF_BATCH && ss.d[1] == 4);
    static const float xi[6] = {4, 0, 2, 2, 3, 1}, si[2] = {1, 4};
    memcpy(cf_exec_input(e, 0, NULL), xi, sizeof xi);
    memcpy(cf_exec_input(e, 1, NULL), si, sizeof si);
    CHECK(cf_forward(e, 0) == 0);
    const float *w = cf_model_param_data(m, 0), *y = cf_exec_output(e, 0, NULL), *z = cf_exec_output(e, 1, NULL);
    for (int r = 0; r < 6; r++) CHECK(memcmp(y + 4 * r, w + 4 * (int)xi[r], 4 * sizeof *w) == 0);
    for (int r = 0; r < 2; r++) CHECK(memcmp(z + 4 * r, w + 4 * (int)si[r], 4 * sizeof *w) == 0);
    cf_exec_free(e);
    cf_model_free(m);
}

/* Each bad index fails forward with its value, its place and V; a good batch after a
 * bad one runs. */
TEST(bad_index_is_an_error)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(3));
    cf_output(m, cf_embedding(m, x, cf_param(m, "E", CF_SHAPE(5, 2), CF_NORMAL(1))));
    cf_exec *e = cf_bind(m, 2, CF_TRAIN);
    CHECK(e != NULL);
    if (!e) return;
    static const float bad[] = {5, -1, 1.5f, NAN, 1e9f};
    static const char *want[] = {"x[1, 2] is 5, not an index in 0..4 (the table E has 5 rows; x is (2, 3))",
                                 "x[1, 2] is -1,", "x[1, 2] is 1.5,", "x[1, 2] is nan,", "x[1, 2] is 1e+09,"};
    float *in = cf_exec_input(e, 0, NULL);
    for (int i = 0; i < 5; i++) {
        for (int j = 0; j < 6; j++) in[j] = (float)(j % 5);
        in[5] = bad[i];
        CHECK(cf_forward(e, 1) == -1);
        CHECK_HAS(cf_last_error(), "error: embedding: ");
        CHECK_HAS(cf_last_error(), want[i]);
        CHECK_HAS(cf_last_error(), "test_embedding.c:");   /* the line that built it */
    }
    in[5] = 4;
    CHECK(cf_forward(e, 1) == 0 && cf_backward(e) == 0);
    cf_exec_free(e);
    cf_model_free(m);

    /* through the notation: the trace names the template and the model's line */
    m = cf_model_parse("model = Chain(Input(4), Embedding(3, 2))\n", "emb.flux");
    CHECK(m != NULL);
    if (!m) return;
    e = cf_bind(m, 1, 0);
    CHECK(e != NULL);
    if (!e) return;
    in = cf_exec_input(e, 0, NULL);
    in[0] = 0, in[1] = 2, in[2] = 3, in[3] = 1;
    CHECK(cf_forward(e, 0) == -1);
    CHECK_HAS(cf_last_error(), "error: embedding: x[0, 2] is 3, not an index in 0..2 (the table E has 3 rows");
    CHECK_HAS(cf_last_error(), "\n  in Embedding at <stdlib>/embedding.flux:4:8\n  in Chain at emb.flux:1:25");
    cf_exec_free(e);
    cf_model_free(m);

    /* unrolled, the Embedding is folded into the LSTM: the index is still its to blame
     * (the trace once named the LSTM) */
    m = cf_model_parse("model = unroll(Chain(Input(), Embedding(10, 8), LSTM(16), Affine(30), softmax), 4)\n", "ul.flux");
    CHECK(m != NULL);
    if (!m) return;
    e = cf_bind(m, 2, CF_TRAIN);
    CHECK(e != NULL);
    if (!e) return;
    in = cf_exec_input(e, 0, NULL);
    for (int j = 0; j < 8; j++) in[j] = (float)j;
    in[5] = 12;
    CHECK(cf_forward(e, 1) == -1);
    CHECK_HAS(cf_last_error(), "error: embedding: x[1, 1] is 12, not an index in 0..9 (the table E has 10 rows");
    CHECK_HAS(cf_last_error(), "\n  in Embedding at <stdlib>/embedding.flux:4:8\n  in unroll at ul.flux:1:31\n");
    CHECK(!strstr(cf_last_error(), "LSTM"));
    in[5] = 9;
    CHECK(cf_forward(e, 1) == 0);
    cf_exec_free(e);
    cf_model_free(m);
}

/* dE of a (64, 50) batch of indices into a (76, 64) table, with repeats, at 1, 2 and 3
 * threads (chunks of columns that differ): the same bits; and accumulated over two
 * backwards. */
static float *grad_at(int threads, const float *idx, size_t n)
{
    cf_set_threads(threads);
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(50));
    cf_output(m, cf_embedding(m, x, cf_param(m, "E", CF_SHAPE(76, 64), CF_NORMAL(1))));
    cf_exec *e = cf_bind(m, 64, CF_TRAIN);
    float *g = malloc(76 * 64 * sizeof *g);
    if (!e || !g) {
        fprintf(stderr, "bind: %s\n", cf_last_error());
        free(g);
        cf_model_free(m);
        return NULL;
    }
    memcpy(cf_exec_input(e, 0, NULL), idx, n * sizeof *idx);
    size_t nh;
    float *head = cf_exec_output_grad(e, 0, &nh);
    for (size_t i = 0; i < nh; i++) head[i] = (float)((i * 2654435761u) % 1000) / 997.0f - 0.5f;
    for (int k = 0; k < 2; k++) CHECK(cf_forward(e, 1) == 0 && cf_backward(e) == 0);
    memcpy(g, cf_model_param_grad(m, 0), 76 * 64 * sizeof *g);
    cf_exec_free(e);
    cf_model_free(m);
    cf_set_threads(0);
    return g;
}

TEST(same_bits_at_any_thread_count)
{
    size_t n = 64 * 50;
    float *idx = malloc(n * sizeof *idx);
    uint64_t r = 88172645463325252ull;
    for (size_t i = 0; i < n; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        idx[i] = (float)(r % 7 == 0 ? 32 : r % 76);   /* one frequent index, as a space in text */
    }
    float *g1 = grad_at(1, idx, n), *g2 = grad_at(2, idx, n), *g3 = grad_at(3, idx, n);
    CHECK(g1 && g2 && g3);
    if (g1 && g2 && g3) {
        CHECK(memcmp(g1, g2, 76 * 64 * sizeof *g1) == 0);
        CHECK(memcmp(g1, g3, 76 * 64 * sizeof *g1) == 0);
        /* two backwards of the same batch: twice one, each row's sum in index order */
        double want = 0;
        size_t nh = n * 64;
        for (size_t i = 0; i < nh; i++)
            if (idx[i / 64] == 5 && i % 64 == 7) want += 2 * ((float)((i * 2654435761u) % 1000) / 997.0f - 0.5f);
        CHECK_NEAR(g1[5 * 64 + 7], want, 1e-4);
    }
    free(g1), free(g2), free(g3), free(idx);
}

TEST(input_classes)
{
    cf_model *m = cf_model_new();
    cf_node *a = cf_input(m, "a", CF_SHAPE(6));           /* straight in */
    cf_node *b = cf_input(m, "b", CF_SHAPE(2, 3));        /* through reshape and slice, two tables */
    cf_node *c = cf_input(m, "c", CF_SHAPE(4));           /* ordinary values */
    cf_node *E = cf_param(m, "E", CF_SHAPE(9, 2), CF_NORMAL(1));
    cf_node *F = cf_param(m, "F", CF_SHAPE(7, 2), CF_NORMAL(1));
    cf_output(m, cf_embedding(m, a, E));
    cf_node *bs = cf_slice(m, cf_reshape(m, b, CF_SHAPE(6)), 1, 0, 4);
    cf_output(m, cf_add(m, cf_embedding(m, bs, E), cf_embedding(m, bs, F)));
    cf_output(m, cf_embedding(m, cf_tanh(m, c), F));   /* computed: not an input's indices */
    CHECK(cf_model_input_classes(m, 0) == 9);
    CHECK(cf_model_input_classes(m, 1) == 7);
    CHECK(cf_model_input_classes(m, 2) == 0);
    CHECK(cf_model_input_classes(m, 3) == 0);
    CHECK(cf_model_input_classes(NULL, 0) == 0);
    cf_model_free(m);

    m = cf_model_parse("model = Chain(Input(50), Embedding(76, 16), Affine(16, 5), softmax)\n", "c.flux");
    CHECK(m != NULL);
    CHECK(cf_model_input_classes(m, 0) == 76);
    cf_model_free(m);
}

/* The notation: embedding(x, E) in a net, and Embedding(vocab, dim) from the library,
 * whose table starts N(0, 1) and is named like any parameter. */
TEST(notation)
{
    cf_model *m = cf_model_parse("net Emb(v, d) {\n"
                                 "  T = param(v, d)\n"
                                 "  x -> embedding(x, T)\n"
                                 "}\n"
                                 "model = Chain(Input(5), Emb(10, 3))\n",
                                 "n.flux");
    CHECK(m != NULL);
    if (m) {
        cf_shape os = cf_model_output_shape(m, 0);
        CHECK(os.rank == 3 && os.d[1] == 5 && os.d[2] == 3);
        CHECK(cf_model_input_classes(m, 0) == 10);
        cf_model_free(m);
    }

    m = cf_model_parse("model = Chain(Input(5), Embedding(1000, 8))\n", "e.flux");
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "%s\n", cf_last_error());
        return;
    }
    CHECK(cf_model_param_count(m) == 1 && strcmp(cf_model_param_name(m, 0), "1.E") == 0);
    cf_shape os = cf_model_output_shape(m, 0);
    CHECK(os.rank == 3 && os.d[1] == 5 && os.d[2] == 8);
    CHECK(cf_model_init_params(m) == 0);
    const float *w = cf_model_param_data(m, 0);
    double s = 0, s2 = 0;
    for (int i = 0; i < 8000; i++) s += w[i], s2 += (double)w[i] * w[i];
    CHECK_NEAR(s / 8000, 0, 0.05);
    CHECK_NEAR(sqrt(s2 / 8000), 1, 0.05);
    cf_model_free(m);

    CHECK(cf_model_parse("net N() {\n  E = param(4, 2)\n  x -> embedding(x)\n}\nmodel = Chain(Input(3), N())\n",
                         "a.flux") == NULL);
    CHECK_HAS(cf_last_error(), "error: embedding takes indices and a table: embedding(x, E)\n  in N at a.flux:3:8");
    CHECK(cf_model_parse("net N() {\n  E = param(4, 2, 1)\n  x -> embedding(x, E)\n}\nmodel = Chain(Input(3), N())\n",
                         "b.flux") == NULL);
    CHECK_HAS(cf_last_error(), "error: embedding takes the table E as (V, D) without the batch dimension, not (4, 2, 1)");
}

int main(void)
{
    RUN(picks_rows);
    RUN(bad_index_is_an_error);
    RUN(same_bits_at_any_thread_count);
    RUN(input_classes);
    RUN(notation);
    return test_summary("embedding");
}
