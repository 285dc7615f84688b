/* test_passes.c - the passes between compiling and binding (src/exec/passes.c): each
 * leaves the results as they were, and CFLUX_PASSES switches each off.
 *
 * fuse_affine runs the kernels of the ops it replaces in their order, and fuse_bn_relu
 * and fuse_bn_add_relu the same operations, so training with each and without it must agree to the bit: the
 * losses of every step, and the weights and running statistics after them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/graph.h"
#include "exec/exec.h"
#include "test.h"

/* Nodes of op `op` in the graph e runs (CF_OP_AFFINE: of either fused product). */
static int count_op(const cf_exec *e, cf_opcode op)
{
    int n = 0;
    for (int i = 0; i < e->nn; i++) {
        const cf_node *x = e->g->node[i];
        n += x && (x->op == op || (op == CF_OP_AFFINE && x->op == CF_OP_AFFINE_RELU));
    }
    return n;
}

/* The model `src` bound at batch 5 for training with cross-entropy (or for inference),
 * under CFLUX_PASSES `passes` (NULL: unset). */
static cf_exec *bind_with(cf_model **m, const char *src, const char *passes, unsigned flags)
{
    if (passes) setenv("CFLUX_PASSES", passes, 1);
    else unsetenv("CFLUX_PASSES");
    *m = cf_model_parse(src, "passes.flux");
    if (*m && (flags & CF_TRAIN) && cf_model_add_loss(*m, CF_LOSS_XENT)) fprintf(stderr, "loss: %s\n", cf_last_error());
    cf_exec *e = *m ? cf_bind(*m, 5, flags) : NULL;
    unsetenv("CFLUX_PASSES");
    if (!e) fprintf(stderr, "bind: %s\n", cf_last_error());
    return e;
}

/* Four SGD steps on fixed data: each step's loss into loss[0..3] and an evaluation's
 * on the last batch into loss[4], then the weights and the states into *w (malloc'd,
 * *nw floats). The nodes of op `fused` found into *fused. 0 or -1. */
static int train(const char *src, const char *passes, cf_opcode op, float *loss, float **w, size_t *nw, int *fused)
{
    cf_model *m;
    cf_exec *e = bind_with(&m, src, passes, CF_TRAIN);
    if (!e) return cf_model_free(m), -1;
    *fused = count_op(e, op);
    for (int step = 0; step < 4; step++) {
        for (int i = 0; i < cf_exec_input_count(e); i++) {
            size_t n;
            float *x = cf_exec_input(e, i, &n);
            int labels = i == cf_exec_input_count(e) - 1;
            for (size_t j = 0; j < n; j++)
                x[j] = labels ? (float)((j + step) % 3) : (float)((j * 7 + i * 3 + step) % 11) / 5.0f - 1.0f;
        }
        int rc = cf_forward(e, 1) || cf_backward(e) || cf_update_sgd(e, 0.1f);
        loss[step] = cf_exec_loss(e);
        if (rc || (step == 3 && cf_forward(e, 0))) {
            fprintf(stderr, "step: %s\n", cf_last_error());
            cf_exec_free(e);
            cf_model_free(m);
            return -1;
        }
    }
    loss[4] = cf_exec_loss(e);
    *nw = m->nweights + m->nstatefloats;   /* the parameters' and states' blocks, as the model carves them */
    if ((*w = malloc(*nw * sizeof **w))) {
        memcpy(*w, m->pdata, m->nweights * sizeof **w);
        if (m->nstatefloats) memcpy(*w + m->nweights, m->sdata, m->nstatefloats * sizeof **w);
    }
    cf_exec_free(e);
    cf_model_free(m);
    return 0;
}

/* Trained with the passes and with `off` (CFLUX_PASSES: one switched off), into l1,
 * w1 and l2, w2 (malloc'd, *n floats each): `want` nodes of op with the passes, none
 * without. tol 0: the same bits; else the losses and weights within tol of each other
 * (relative to their size). */
static void compare_passes(const char *src, const char *off, cf_opcode op, int want, float tol)
{
    float l1[5], l2[5], *w1 = NULL, *w2 = NULL;
    size_t n1 = 0, n2 = 0;
    int f1 = -1, f2 = -1;
    CHECK(train(src, NULL, op, l1, &w1, &n1, &f1) == 0);
    CHECK(train(src, off, op, l2, &w2, &n2, &f2) == 0);
    CHECK(f1 == want);
    CHECK(f2 == 0);
    CHECK(n1 == n2 && n1 > 0 && w1 && w2);
    if (tol == 0) {
        CHECK(memcmp(l1, l2, sizeof l1) == 0);
        CHECK(w1 && w2 && n1 == n2 && memcmp(w1, w2, n1 * sizeof *w1) == 0);
    } else {
        for (int i = 0; i < 5; i++)
            if (!(fabsf(l1[i] - l2[i]) <= tol * (1 + fabsf(l2[i])))) {
                CHECK(!"losses within tol");
                fprintf(stderr, "loss %d: %g against %g\n", i, l1[i], l2[i]);
            }
        float worst = 0;
        for (size_t i = 0; n1 == n2 && w1 && w2 && i < n1; i++) {
            float d = fabsf(w1[i] - w2[i]) / (1 + fabsf(w2[i]));
            worst = d > worst ? d : worst;
        }
        CHECK(worst <= tol);
        if (worst > tol) fprintf(stderr, "weights differ by %g\n", (double)worst);
    }
    free(w1);
    free(w2);
}

static void same_bits(const char *src, const char *off, cf_opcode op, int want)
{
    compare_passes(src, off, op, want, 0);
}

TEST(fuse_affine_keeps_the_bits)
{
    /* two products with relu, one without (a softmax follows the last) */
    same_bits("model = Chain(Input(6), Affine(8), relu, Affine(7), relu, Affine(3), softmax)\n", "-fuse_affine",
              CF_OP_AFFINE, 3);
    /* the bias on the left of the addition, and sequences (B, 4, 6) */
    same_bits("net Left(in, out) {\n  W = param(in, out)\n  b = param(1, out)\n  x -> relu(b + x * W)\n}\n"
              "model = Chain(Input(4, 6), Left(5), Left(3), softmax)\n",
              "-fuse_affine", CF_OP_AFFINE, 2);
}

TEST(fuse_bn_relu_keeps_the_bits)
{
    /* images: planes of 25 and 9 (whole vectors of partial sums and a remainder) */
    same_bits("model = Chain(Input(2, 5, 5), Conv2D(3, 3, pad = 1), BatchNorm(), relu, Conv2D(4, 3, stride = 2),\n"
              "  BatchNorm(), relu, flatten, Affine(3), softmax)\n",
              "-fuse_bn_relu", CF_OP_BATCHNORM_RELU, 2);
    /* features, after a product that fuse_affine makes one node first */
    same_bits("model = Chain(Input(6), Affine(8), BatchNorm(), relu, Affine(3), softmax)\n", "-fuse_bn_relu",
              CF_OP_BATCHNORM_RELU, 1);
}

TEST(fuse_bn_add_relu_keeps_the_bits)
{
    /* residual blocks, one with the identity shortcut and one with a projection (two
       normalised values added: the left one fuses, the right one fuses with nothing);
       planes of 36 and 9 (whole vectors of partial sums and remainders) */
    same_bits("model = Chain(Input(2, 6, 6), Conv2D(4, 3, pad = 1, bias = false), BatchNorm(), relu,\n"
              "  ResidualBlock(4), ResidualBlock(6, stride = 2), GlobalAvgPool(), Affine(3), softmax)\n",
              "-fuse_bn_add_relu", CF_OP_BATCHNORM_ADD_RELU, 2);
    /* the value added on the right; a normalisation of the model's input (no gradient
       for its x, one for the value added); x added to its own normalisation, which does
       not fuse (one gradient buffer for both); and a value added that is read again
       after (its gradient is added to, not written) */
    same_bits("net R(c) {\n  n = BatchNorm(c)\n  k = Conv2D(c, c, 3, pad = 1)\n  x -> relu(k(x) + n(x))\n}\n"
              "net L(c) {\n  n = BatchNorm(c)\n  x -> relu(n(x) + x)\n}\n"
              "net M(c) {\n  n = BatchNorm(c)\n  k = Conv2D(c, c, 3, pad = 1)\n  x -> { r = k(x)\n  relu(n(x) + r) .* r }\n}\n"
              "model = Chain(Input(2, 5, 5), R(2), L(2), M(2), flatten, Affine(3), softmax)\n",
              "-fuse_bn_add_relu", CF_OP_BATCHNORM_ADD_RELU, 2);
}

/* Attention in one node (a causal GPT block, with and without dropout on the
 * probabilities, and plain attention written out by hand): what the ops it replaces
 * compute, to rounding, the dropout's mask the same. */
TEST(fuse_attention_agrees)
{
    compare_passes("model = Chain(Input(7, 8), TransformerBlock(8, 2), TransformerBlock(8, 2), flatten, Affine(3), softmax)\n",
         "-fuse_attention", CF_OP_ATTENTION, 2, 1e-5f);
    compare_passes("model = Chain(Input(20, 8), TransformerBlock(8, 2, drop = 0.3), flatten, Affine(3), softmax)\n",
         "-fuse_attention", CF_OP_ATTENTION, 1, 1e-5f);
    /* more keys than a tile holds (128): the online softmax's rescaling (sums of 300
       exponentials in another order, through four steps at lr 0.1 to a loss of 9) */
    compare_passes("model = Chain(Input(300, 4), TransformerBlock(4, 1, drop = 0.1), flatten, Affine(3), softmax)\n",
         "-fuse_attention", CF_OP_ATTENTION, 1, 1e-4f);
    compare_passes("net Att(d) {\n  Wq = param(d, d)\n  Wk = param(d, d)\n  Wv = param(d, 5)\n"
         "  x -> softmax((x * Wq) * transpose(x * Wk, 2, 3)) * (x * Wv)\n}\n"
         "model = Chain(Input(3, 19, 4), Att(4), flatten, Affine(3), softmax)\n", "-fuse_attention", CF_OP_ATTENTION, 1,
         1e-5f);
}

TEST(fuse_bn_add_relu_leaves_a_value_that_is_read)
{
    /* the sum is read by the relu and by the product after; a sum that broadcasts */
    cf_model *m;
    const char *src = "net R(c) {\n  n = BatchNorm(c)\n  x -> { s = n(x) + x\n  relu(s) + s }\n}\n"
                      "net S(c) {\n  n = BatchNorm(c)\n  b = param(1, c)\n  x -> relu(n(x) + b)\n}\n"
                      "model = Chain(Input(6), R(6), S(6), Affine(3), softmax)\n";
    cf_exec *e = bind_with(&m, src, NULL, CF_TRAIN);
    CHECK(e && count_op(e, CF_OP_BATCHNORM_ADD_RELU) == 0 && count_op(e, CF_OP_BATCHNORM) == 2 &&
          count_op(e, CF_OP_RELU) == 2);
    cf_exec_free(e);
    cf_model_free(m);
}

TEST(fusion_leaves_a_value_that_is_read)
{
    /* the product is an output too: its value must stay, so nothing is fused; the
       sum is read twice: the product and bias fuse, the relu stays */
    cf_model *m;
    const char *src = "net Two(in, out) {\n  W = param(in, out)\n  b = param(1, out)\n"
                      "  x -> { p = x * W\n  (softmax(relu(p + b)), p) }\n}\nmodel = Chain(Input(4), Two(3))\n";
    cf_exec *e = bind_with(&m, src, NULL, CF_TRAIN);
    CHECK(e && count_op(e, CF_OP_AFFINE) == 0 && count_op(e, CF_OP_MATMUL) == 1);
    cf_exec_free(e);
    cf_model_free(m);
    src = "net Two(in, out) {\n  W = param(in, out)\n  b = param(1, out)\n"
          "  x -> { s = x * W + b\n  softmax(relu(s) + s) }\n}\nmodel = Chain(Input(4), Two(3))\n";
    e = bind_with(&m, src, NULL, 0);
    CHECK(e && count_op(e, CF_OP_AFFINE) == 1 && count_op(e, CF_OP_RELU) == 1 && count_op(e, CF_OP_MATMUL) == 0);
    CHECK(e && e->g->node[e->nn - 1] && e->g->node[e->nn - 1]->op == CF_OP_SOFTMAX);
    cf_exec_free(e);
    cf_model_free(m);
}

TEST(fuse_bn_relu_leaves_a_value_that_is_read)
{
    /* the normalisation's value is read by the relu and by the sum: it must stay */
    cf_model *m;
    const char *src = "net R(c) {\n  n = BatchNorm(c)\n  x -> { y = n(x)\n  relu(y) + y }\n}\n"
                      "model = Chain(Input(6), R(6), Affine(3), softmax)\n";
    cf_exec *e = bind_with(&m, src, NULL, CF_TRAIN);
    CHECK(e && count_op(e, CF_OP_BATCHNORM_RELU) == 0 && count_op(e, CF_OP_BATCHNORM) == 1 &&
          count_op(e, CF_OP_RELU) == 1);
    cf_exec_free(e);
    cf_model_free(m);
}

/* A fused product keeps no more memory than the ops it replaces: x W + b without relu
 * need not keep its output for the backward (the addition's backward reads nothing). */
TEST(fusion_keeps_no_more_memory)
{
    const char *src = "model = Chain(Input(64), Affine(256), tanh, Affine(256), tanh, Affine(10), softmax)\n";
    size_t bytes[2];
    for (int fuse = 0; fuse < 2; fuse++) {
        cf_model *m;
        cf_exec *e = bind_with(&m, src, fuse ? NULL : "-fuse_affine", CF_TRAIN);
        CHECK(e && count_op(e, CF_OP_AFFINE) == (fuse ? 3 : 0));
        bytes[fuse] = e ? cf_exec_arena_bytes(e, NULL) : 0;
        cf_exec_free(e);
        cf_model_free(m);
    }
    CHECK(bytes[1] <= bytes[0]);
}

TEST(cflux_passes_switches_them)
{
    const char *src = "model = Chain(Input(6), Affine(8), relu, Affine(3), softmax)\n";
    cf_model *m;
    cf_exec *e = bind_with(&m, src, "none", 0);
    CHECK(e && count_op(e, CF_OP_AFFINE) == 0);
    cf_exec_free(e);
    cf_model_free(m);
    e = bind_with(&m, src, "none,+fuse_affine", 0);
    CHECK(e && count_op(e, CF_OP_AFFINE) == 2);
    cf_exec_free(e);
    cf_model_free(m);
    e = bind_with(&m, src, "-fuse_afine", 0);
    CHECK(e == NULL);
    CHECK_HAS(cf_last_error(), "error: CFLUX_PASSES: no pass is called 'fuse_afine' "
                               "(the passes: fuse_lstm, fuse_attention, fuse_affine, fuse_bn_add_relu, fuse_bn_relu, quantize; write -NAME");
    cf_model_free(m);
    /* CFLUX_NANTRAP names the op that made a NaN: nothing is fused under it */
    setenv("CFLUX_NANTRAP", "1", 1);
    e = bind_with(&m, src, NULL, 0);
    unsetenv("CFLUX_NANTRAP");
    CHECK(e && count_op(e, CF_OP_AFFINE) == 0);
    cf_exec_free(e);
    cf_model_free(m);
}

int main(void)
{
    RUN(fuse_affine_keeps_the_bits);
    RUN(fusion_leaves_a_value_that_is_read);
    RUN(fuse_bn_relu_keeps_the_bits);
    RUN(fuse_bn_relu_leaves_a_value_that_is_read);
    RUN(fuse_bn_add_relu_keeps_the_bits);
    RUN(fuse_bn_add_relu_leaves_a_value_that_is_read);
    RUN(fuse_attention_agrees);
    RUN(fusion_keeps_no_more_memory);
    RUN(cflux_passes_switches_them);
    return test_summary("passes");
}
