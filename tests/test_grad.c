/* test_grad.c - every op's backward against central differences, through the whole
 * engine (bind, forward, backward), and the checker's own test: a planted wrong
 * backward must be caught. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/graph.h"
#include "gradcheck.h"
#include "ops/op.h"
#include "test.h"

/* The ops whose gradients a check below passed, for every_op_has_a_check. */
static unsigned char checked[CF_OP_COUNT_];

/* gradcheck_exec, recording the model's ops when their gradients all agree. */
static int gradcheck_ops(cf_exec *e, cf_model *m, unsigned seed)
{
    int bad = gradcheck_exec(e, m, seed, NULL);
    if (bad == 0)
        for (int i = 0; i < m->nnodes; i++) checked[m->nodes[i]->op] = 1;
    return bad;
}

/* Fill every input with uniform values in [lo, hi], away from 0 by `gap`. */
static void fill_inputs(cf_exec *e, float lo, float hi, float gap, unsigned seed)
{
    srand(seed);
    for (int i = 0; i < cf_exec_input_count(e); i++) {
        size_t n;
        float *x = cf_exec_input(e, i, &n);
        for (size_t j = 0; j < n; j++) {
            float v;
            do v = lo + (hi - lo) * (float)rand() / (float)RAND_MAX;
            while (v > -gap && v < gap);
            x[j] = v;
        }
    }
}

/* Bind for batch 3, fill, check; returns mismatches. Frees the model. */
static int check_model(cf_model *m, float lo, float hi, float gap)
{
    cf_exec *e = cf_bind(m, 3, CF_INPUT_GRADS);
    if (!e) {
        fprintf(stderr, "bind: %s\n", cf_last_error());
        cf_model_free(m);
        return -1;
    }
    fill_inputs(e, lo, hi, gap, 7);
    /* parameters too: glorot values are fine, but keep them off the kinks */
    int bad = gradcheck_ops(e, m, 11);
    cf_exec_free(e);
    cf_model_free(m);
    return bad;
}

/* y = f(x .* p) for a unary op f: the parameter puts a gradient on both sides. */
static int check_unary(cf_opcode op, float a, float lo, float hi, float gap)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(2, 4));
    cf_node *p = cf_param(m, "p", CF_SHAPE(4), CF_UNIFORM(1.0f));
    cf_output(m, cf_unary_at(m, op, cf_mul(m, x, cf_add(m, p, cf_scalar(m, 1.5f))), a, __FILE__, __LINE__, 0));
    return check_model(m, lo, hi, gap);
}

TEST(unary_ops)
{
    CHECK(check_unary(CF_OP_NEG, 0, -2, 2, 0) == 0);
    CHECK(check_unary(CF_OP_SIGMOID, 0, -2, 2, 0) == 0);
    CHECK(check_unary(CF_OP_TANH, 0, -2, 2, 0) == 0);
    CHECK(check_unary(CF_OP_RELU, 0, -2, 2, 0.2f) == 0);
    CHECK(check_unary(CF_OP_LEAKYRELU, 0.1f, -2, 2, 0.2f) == 0);
    CHECK(check_unary(CF_OP_EXP, 0, -1, 1, 0) == 0);
    CHECK(check_unary(CF_OP_LOG, 0, 0.5f, 2, 0) == 0);
    CHECK(check_unary(CF_OP_SOFTMAX, 0, -2, 2, 0) == 0);
    CHECK(check_unary(CF_OP_LOGSOFTMAX, 0, -2, 2, 0) == 0);
    CHECK(check_unary(CF_OP_SUM, 0, -2, 2, 0) == 0);
    CHECK(check_unary(CF_OP_MEAN, 0, -2, 2, 0) == 0);
    CHECK(check_unary(CF_OP_FLATTEN, 0, -2, 2, 0) == 0);
    CHECK(check_unary(CF_OP_SOFTPLUS, 0, -3, 3, 0) == 0);
}

/* a OP b for inputs of the given per-sample shapes and a parameter of shape ps. */
static int check_binary(cf_opcode op, cf_shape as, cf_shape ps, float lo, float hi)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", as);
    cf_node *p = cf_param(m, "p", ps, CF_UNIFORM(1.0f));
    if (op == CF_OP_DIV) p = cf_add(m, cf_relu(m, p), cf_scalar(m, 1.0f)); /* away from 0 */
    cf_output(m, cf_binary_at(m, op, x, p, __FILE__, __LINE__, 0));
    cf_output(m, cf_binary_at(m, op, p, x, __FILE__, __LINE__, 0));
    return check_model(m, lo, hi, 0.3f);
}

TEST(arithmetic_broadcasting)
{
    cf_opcode ops[] = {CF_OP_ADD, CF_OP_SUB, CF_OP_MUL, CF_OP_DIV};
    for (int i = 0; i < 4; i++) {
        cf_opcode op = ops[i];
        float lo = op == CF_OP_DIV ? 0.5f : -2, hi = 2;
        CHECK(check_binary(op, CF_SHAPE(2, 3), CF_SHAPE(2, 3), lo, hi) == 0);   /* per-sample equal */
        CHECK(check_binary(op, CF_SHAPE(2, 3), CF_SHAPE(3), lo, hi) == 0);      /* row vector */
        CHECK(check_binary(op, CF_SHAPE(2, 3), CF_SHAPE(1, 3), lo, hi) == 0);
        CHECK(check_binary(op, CF_SHAPE(2, 3), CF_SHAPE(2, 1), lo, hi) == 0);   /* column */
        CHECK(check_binary(op, CF_SHAPE(4), CF_SHAPE(1), lo, hi) == 0);         /* scalar-like */
        CHECK(check_binary(op, CF_SHAPE(2, 1, 3), CF_SHAPE(4, 1), lo, hi) == 0); /* both stretch */
    }
    /* a value meeting itself: d(x .* x) = 2x, d(x - x) = 0 */
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(3));
    cf_output(m, cf_mul(m, x, x));
    cf_output(m, cf_sub(m, x, x));
    CHECK(check_model(m, -2, 2, 0) == 0);
}

TEST(matmul_shapes)
{
    /* (B, 4) * (4, 5) */
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(4));
    cf_output(m, cf_matmul(m, x, cf_param(m, "W", CF_SHAPE(4, 5), CF_GLOROT)));
    CHECK(check_model(m, -1, 1, 0) == 0);
    /* (B, 2, 4) * (4, 3): leading dims fold */
    m = cf_model_new();
    x = cf_input(m, "x", CF_SHAPE(2, 4));
    cf_output(m, cf_matmul(m, x, cf_param(m, "W", CF_SHAPE(4, 3), CF_GLOROT)));
    CHECK(check_model(m, -1, 1, 0) == 0);
    /* (B, 2, 4) * (B, 4, 3): batched */
    m = cf_model_new();
    x = cf_input(m, "x", CF_SHAPE(2, 4));
    cf_node *y = cf_input(m, "y", CF_SHAPE(4, 3));
    cf_output(m, cf_matmul(m, x, y));
    CHECK(check_model(m, -1, 1, 0) == 0);
    /* (3, 2) * (B, 2, 4): a parameter broadcast over the batch */
    m = cf_model_new();
    y = cf_input(m, "y", CF_SHAPE(2, 4));
    cf_output(m, cf_matmul(m, cf_param(m, "W", CF_SHAPE(3, 2), CF_GLOROT), y));
    CHECK(check_model(m, -1, 1, 0) == 0);
}

/* The fused product of the passes (ops/affine.c), made directly: with and without
 * relu, x of rank 2 and 3. */
TEST(affine)
{
    for (int relu = 0; relu < 2; relu++)
        for (int rank3 = 0; rank3 < 2; rank3++) {
            cf_model *m = cf_model_new();
            cf_node *x = cf_input(m, "x", rank3 ? CF_SHAPE(2, 4) : CF_SHAPE(4));
            cf_node *in[3] = {x, cf_param(m, "W", CF_SHAPE(4, 5), CF_GLOROT), cf_param(m, "b", CF_SHAPE(1, 5), CF_UNIFORM(1))};
            cf_opcode op = relu ? CF_OP_AFFINE_RELU : CF_OP_AFFINE;
            cf_output(m, cf_op_at(m, op, 3, in, NULL, 0, NULL, 0, __FILE__, __LINE__, 0));
            CHECK(check_model(m, -1, 1, 0) == 0);
        }
}

/* Attention in one node (ops/attention.c), made directly: causal with as many keys
 * as queries, causal with more keys (a step against a cache: bottom-right aligned),
 * and plain; 20 queries span two blocks of them. */
TEST(attention)
{
    static const int shapes[3][4] = {{20, 20, 4, 3}, {3, 7, 4, 4}, {5, 6, 2, 3}};   /* T, S, D, Dv */
    for (int c = 0; c < 3; c++) {
        const int *d = shapes[c];
        cf_model *m = cf_model_new();
        cf_node *in[3] = {cf_input(m, "q", CF_SHAPE(2, d[0], d[2])), cf_input(m, "k", CF_SHAPE(2, d[1], d[2])),
                          cf_input(m, "v", CF_SHAPE(2, d[1], d[3]))};
        float fa[2] = {c < 2 ? 1.0f : 0.0f, 0};
        cf_output(m, cf_op_at(m, CF_OP_ATTENTION, 3, in, (const int[]){0}, 1, fa, 2, __FILE__, __LINE__, 0));
        CHECK(check_model(m, -1, 1, 0) == 0);
    }
}

TEST(layout_ops)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(2, 3));
    cf_node *p = cf_param(m, "p", CF_SHAPE(6), CF_UNIFORM(1));
    cf_node *r = cf_reshape(m, x, CF_SHAPE(3, -1));                      /* (B, 3, 2) */
    cf_node *f = cf_mul(m, cf_flatten(m, r), p);                           /* (B, 6) */
    cf_node *parts[3] = {f, cf_slice(m, f, 1, 2, 3), x};
    cf_output(m, cf_concat(m, -1, 2, parts));                              /* (B, 9) */
    cf_output(m, cf_concat(m, 1, 1, parts + 2));                           /* (B, 2, 3) */
    cf_node *two[2] = {x, cf_tanh(m, x)};
    cf_output(m, cf_concat(m, 1, 2, two));                                 /* (B, 4, 3) */
    cf_output(m, cf_slice(m, x, -1, 1, 2));                                /* (B, 2, 2) */
    CHECK(check_model(m, -1, 1, 0) == 0);
    /* images: concat along the channels, as a CNN joins feature maps, then flatten */
    m = cf_model_new();
    cf_node *img = cf_input(m, "img", CF_SHAPE(2, 3, 4));
    cf_node *k = cf_param(m, "k", CF_SHAPE(1, 3, 4), CF_UNIFORM(1));
    cf_node *maps[3] = {img, cf_mul(m, cf_slice(m, img, 1, 1, 1), k), cf_tanh(m, img)};
    cf_node *joined = cf_concat(m, 1, 3, maps);                             /* (B, 5, 3, 4) */
    cf_output(m, cf_flatten(m, joined));                                    /* (B, 60) */
    CHECK(check_model(m, -1, 1, 0) == 0);
}

TEST(losses)
{
    /* fused softmax + cross-entropy with class indices */
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(4));
    cf_node *y = cf_input(m, "y", CF_SCALAR);
    cf_node *z = cf_matmul(m, x, cf_param(m, "W", CF_SHAPE(4, 5), CF_GLOROT));
    cf_output(m, cf_softmax_xent(m, z, y));
    cf_exec *e = cf_bind(m, 3, CF_INPUT_GRADS);
    CHECK(e != NULL);
    fill_inputs(e, -1, 1, 0, 3);
    float *lab = cf_exec_input(e, 1, NULL);
    lab[0] = 0, lab[1] = 4, lab[2] = 2;
    CHECK(cf_exec_input_grad(e, 1, NULL) == NULL);   /* labels have no gradient */
    CHECK(gradcheck_ops(e, m, 5) == 0);
    cf_exec_free(e);
    cf_model_free(m);

    /* soft targets, fused; and the same loss unfused (a softmax the loss cannot see
     * through because the probabilities are squared first... no: through logsoftmax) */
    m = cf_model_new();
    x = cf_input(m, "x", CF_SHAPE(2, 4));
    cf_node *t = cf_input(m, "t", CF_SHAPE(2, 4));
    cf_node *p = cf_softmax(m, cf_mul(m, x, cf_param(m, "w", CF_SHAPE(4), CF_UNIFORM(1))));
    cf_output(m, cf_cross_entropy(m, p, cf_softmax(m, t)));                /* fused, soft */
    cf_output(m, cf_cross_entropy(m, cf_exp(m, cf_logsoftmax(m, x)), cf_softmax(m, t))); /* unfused */
    cf_output(m, p);                                                        /* p used twice */
    CHECK(check_model(m, -1, 1, 0) == 0);

    /* unfused with indices, and mean squared error */
    m = cf_model_new();
    x = cf_input(m, "x", CF_SHAPE(3));
    cf_node *q = cf_param(m, "q", CF_SHAPE(3), CF_UNIFORM(1));
    cf_output(m, cf_mse(m, x, cf_tanh(m, cf_add(m, x, q))));
    cf_output(m, cf_mse(m, cf_mul(m, x, q), x));
    CHECK(check_model(m, -1, 1, 0) == 0);
}

TEST(reduce_over_batch)
{
    /* sum of a (B) value reduces the batch: mean(sum(x .* p)) */
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(3));
    cf_node *p = cf_param(m, "p", CF_SHAPE(3), CF_UNIFORM(1));
    cf_node *s = cf_mean(m, cf_sum(m, cf_mul(m, x, p)));
    cf_output(m, s);
    CHECK(check_model(m, -1, 1, 0) == 0);
}

/* conv2d of x (B, C, H, W) by a parameter w (O, C/groups, KH, KW) with attributes
 * stride, padding, dilation (each h, w) and groups; tanh after it so that the head
 * gradient is not all the backward sees. Both inputs get gradients. */
static int check_conv(int C, int H, int W, int O, int KH, int KW, int sh, int sw, int ph, int pw, int dh, int dw,
                      int groups)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(C, H, W));
    cf_node *w = cf_param(m, "w", CF_SHAPE(O, C / groups, KH, KW), CF_UNIFORM(0.5f));
    int ia[7] = {sh, sw, ph, pw, dh, dw, groups};
    cf_node *in[2] = {x, w};
    cf_output(m, cf_tanh(m, cf_op_at(m, CF_OP_CONV2D, 2, in, ia, 7, NULL, 0, __FILE__, __LINE__, 0)));
    return check_model(m, -1, 1, 0);
}

TEST(conv2d)
{
    CHECK(check_conv(2, 5, 5, 3, 3, 3, 1, 1, 0, 0, 1, 1, 1) == 0);   /* plain 3x3 */
    CHECK(check_conv(2, 6, 5, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1) == 0);   /* stride 2, pad 1 */
    CHECK(check_conv(1, 7, 6, 2, 3, 2, 1, 1, 1, 0, 2, 2, 1) == 0);   /* dilation 2 */
    CHECK(check_conv(4, 4, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 2) == 0);   /* groups 2 */
    CHECK(check_conv(3, 4, 5, 2, 1, 1, 1, 1, 0, 0, 1, 1, 1) == 0);   /* 1x1 kernel */
    CHECK(check_conv(2, 5, 7, 3, 2, 4, 1, 2, 0, 1, 1, 1, 1) == 0);   /* non-square kernel and input */
    CHECK(check_conv(3, 6, 6, 3, 2, 2, 3, 2, 2, 1, 2, 1, 3) == 0);   /* depthwise, mixed */
    /* the convenience macro: stride 1, pad 1, and a (O, 1, 1) bias broadcast over it */
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(2, 4, 4));
    cf_node *w = cf_param(m, "w", CF_SHAPE(3, 2, 3, 3), CF_UNIFORM(0.5f));
    cf_node *b = cf_param(m, "b", CF_SHAPE(3, 1, 1), CF_UNIFORM(0.5f));
    cf_output(m, cf_add(m, cf_conv2d(m, x, w, 1, 1), b));
    CHECK(check_model(m, -1, 1, 0) == 0);
}

/* Pooling through cf_op_at: kernel kh x kw, stride sh x sw, padding ph x pw. */
static cf_node *pool(cf_model *m, cf_opcode op, cf_node *x, int kh, int kw, int sh, int sw, int ph, int pw)
{
    const int a[6] = {kh, kw, sh, sw, ph, pw};
    return cf_op_at(m, op, 1, &x, a, 6, NULL, 0, __FILE__, __LINE__, 0);
}

/* Bind for batch 3; fill every input with a shuffle of distinct values 0.05 apart
 * (far more than twice the checker's h, so that no perturbation moves a window's
 * maximum); check. Frees the model. */
static int check_model_distinct(cf_model *m)
{
    cf_exec *e = cf_bind(m, 3, CF_INPUT_GRADS);
    if (!e) {
        fprintf(stderr, "bind: %s\n", cf_last_error());
        cf_model_free(m);
        return -1;
    }
    srand(17);
    for (int i = 0; i < cf_exec_input_count(e); i++) {
        size_t n;
        float *x = cf_exec_input(e, i, &n);
        for (size_t j = 0; j < n; j++) x[j] = 0.05f * (float)j - 0.025f * (float)n;
        for (size_t j = n - 1; j > 0; j--) {
            size_t r = (size_t)rand() % (j + 1);
            float t = x[j];
            x[j] = x[r], x[r] = t;
        }
    }
    int bad = gradcheck_ops(e, m, 13);
    cf_exec_free(e);
    cf_model_free(m);
    return bad;
}

TEST(pooling)
{
    /* maxpool: odd sizes, stride below the kernel (overlapping windows), an uneven
     * kernel with padding; used twice and beside avgpool, so that its backward both
     * overwrites and adds */
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(2, 7, 5));
    cf_output(m, cf_maxpool(m, x, 3, 2));                               /* (B, 2, 3, 2) */
    cf_output(m, pool(m, CF_OP_AVGPOOL, x, 2, 2, 1, 1, 1, 0));          /* (B, 2, 8, 4) */
    cf_output(m, pool(m, CF_OP_MAXPOOL, x, 3, 2, 2, 1, 1, 1));          /* (B, 2, 4, 6) */
    CHECK(check_model_distinct(m) == 0);
    /* maxpool alone, stride above the kernel (gaps between windows) */
    m = cf_model_new();
    x = cf_input(m, "x", CF_SHAPE(3, 9, 7));
    cf_output(m, pool(m, CF_OP_MAXPOOL, x, 2, 3, 3, 2, 0, 1));          /* (B, 3, 3, 4) */
    CHECK(check_model_distinct(m) == 0);

    /* avgpool after a parameter, with padding; stride 0 is the kernel */
    m = cf_model_new();
    x = cf_input(m, "x", CF_SHAPE(2, 7, 5));
    cf_node *p = cf_param(m, "p", CF_SHAPE(5), CF_UNIFORM(1.0f));
    cf_node *h = cf_mul(m, x, p);
    cf_output(m, pool(m, CF_OP_AVGPOOL, h, 3, 3, 2, 2, 1, 1));          /* (B, 2, 4, 3) */
    cf_output(m, cf_avgpool(m, h, 2, 0));                               /* (B, 2, 3, 2) */
    CHECK(check_model(m, -2, 2, 0) == 0);

    /* globalavgpool of an odd plane, alone and beside a maxpool */
    m = cf_model_new();
    x = cf_input(m, "x", CF_SHAPE(3, 5, 3));
    cf_output(m, cf_globalavgpool(m, cf_mul(m, x, cf_param(m, "p", CF_SHAPE(3), CF_UNIFORM(1.0f)))));
    CHECK(check_model(m, -2, 2, 0) == 0);
    m = cf_model_new();
    x = cf_input(m, "x", CF_SHAPE(3, 5, 3));
    cf_output(m, cf_globalavgpool(m, x));
    cf_output(m, cf_maxpool(m, x, 2, 1));
    CHECK(check_model_distinct(m) == 0);
}

/* Dropout. The numerical check forwards in evaluation mode (gradcheck.h), where
 * dropout is the identity; in training the mask changes with every forward, so the
 * training gradient is checked exactly instead: dx = dy * factor, factor 0 where the
 * output is 0 and 1 / (1 - p) where x was kept (y = x / (1 - p)). The op counts as
 * checked when both pass. */
TEST(dropout)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(2, 4));
    cf_node *p = cf_param(m, "p", CF_SHAPE(4), CF_UNIFORM(1.0f));
    cf_output(m, cf_dropout(m, cf_mul(m, x, cf_add(m, p, cf_scalar(m, 1.5f))), 0.3f));
    cf_exec *e = cf_bind(m, 3, CF_INPUT_GRADS);
    CHECK(e != NULL);
    if (!e) return;
    fill_inputs(e, -2, 2, 0, 7);
    int eval_bad = gradcheck_exec(e, m, 11, NULL);
    CHECK(eval_bad == 0);
    cf_exec_free(e);
    cf_model_free(m);

    const float rate = 0.3f, scale = 1.0f / (1.0f - rate);
    m = cf_model_new();
    x = cf_input(m, "x", CF_SHAPE(50));
    cf_output(m, cf_dropout(m, x, rate));
    e = cf_bind(m, 4, CF_INPUT_GRADS);
    CHECK(e != NULL);
    if (!e) return;
    int train_bad = 0, kept = 0;
    fill_inputs(e, -2, 2, 0.1f, 3);
    size_t n;
    const float *xv = cf_exec_input(e, 0, &n);
    float *head = cf_exec_output_grad(e, 0, NULL);
    for (size_t i = 0; i < n; i++) head[i] = (float)((i * 7) % 11) - 5.0f;
    for (int round = 0; round < 3; round++) {   /* a new mask each time */
        CHECK(cf_forward(e, 1) == 0 && cf_backward(e) == 0);
        const float *y = cf_exec_output(e, 0, NULL), *dx = cf_exec_input_grad(e, 0, NULL);
        for (size_t i = 0; i < n; i++) {
            int keep = y[i] != 0;
            kept += keep;
            if (keep ? y[i] != xv[i] * scale || dx[i] != head[i] * scale : dx[i] != 0) {
                if (train_bad++ < 5)
                    fprintf(stderr, "  dropout x %g: y %g, dx %g (head %g)\n", (double)xv[i], (double)y[i],
                            (double)dx[i], (double)head[i]);
            }
        }
    }
    CHECK(train_bad == 0);
    CHECK(kept > 0 && kept < 3 * (int)n);   /* it dropped some and kept some */
    cf_exec_free(e);
    cf_model_free(m);
    if (eval_bad == 0 && train_bad == 0) checked[CF_OP_DROPOUT] = 1;
}

/* Batch normalisation, in both modes: in training the statistics are the batch's
 * (functions of x: the check must see through them), in evaluation the running ones
 * (constants). A tanh after it gives a non-trivial head; x's values are kept apart so
 * the variance is not tiny. Images (B, C, H, W) and features (B, C); op is batchnorm or
 * the fused batchnorm_relu or batchnorm_add_relu of the passes (ops/batchnorm.c, the
 * last with a second input of x's shape added), made directly, on images alone: of three features a channel, one lands near relu's kink, where central
 * differences fail (the same for relu(batchnorm) unfused; test_passes holds the fused
 * op to the bits of the two, features included). */
static int check_batchnorm(cf_opcode op, cf_shape xs, int train)
{
    int C = xs.d[0];
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", xs);
    cf_node *g = cf_param(m, "g", CF_SHAPE(C), CF_UNIFORM(1.0f));
    cf_node *b = cf_param(m, "b", CF_SHAPE(C), CF_UNIFORM(1.0f));
    cf_node *mean = cf_state(m, "mean", CF_SHAPE(C), CF_UNIFORM(0.5f));
    cf_node *var = cf_state(m, "var", CF_SHAPE(C), CF_CONST(0.7f));
    cf_node *in[6] = {x, g, b, mean, var, NULL};
    int nin = 5;
    if (op == CF_OP_BATCHNORM_ADD_RELU) in[nin++] = cf_input(m, "r", xs);
    cf_output(m, cf_tanh(m, cf_op_at(m, op, nin, in, NULL, 0, NULL, 0, __FILE__, __LINE__, 0)));
    cf_exec *e = cf_bind(m, 3, CF_INPUT_GRADS);
    if (!e) {
        fprintf(stderr, "bind: %s\n", cf_last_error());
        cf_model_free(m);
        return -1;
    }
    fill_inputs(e, -2, 2, 0, 5);
    gc_opts o = {1e-2, 2e-2, 2e-3, 0, train};
    int bad = gradcheck_exec(e, m, 13, &o);
    cf_exec_free(e);
    cf_model_free(m);
    return bad;
}

TEST(batchnorm)
{
    static const cf_opcode ops[3] = {CF_OP_BATCHNORM, CF_OP_BATCHNORM_RELU, CF_OP_BATCHNORM_ADD_RELU};
    for (int i = 0; i < 3; i++) {
        int bad = 0;
        for (int train = 0; train < 2; train++) {
            int b4 = check_batchnorm(ops[i], CF_SHAPE(2, 3, 2), train);
            int b2 = ops[i] == CF_OP_BATCHNORM ? check_batchnorm(ops[i], CF_SHAPE(4), train) : 0;
            CHECK(b4 == 0);
            CHECK(b2 == 0);
            bad += b4 != 0 || b2 != 0;
        }
        if (bad == 0) checked[ops[i]] = 1;
    }
}

/* Layer normalisation over the last dimension of x (B, ..., d), with eps; a tanh after
 * it so that the head gradient is not all the backward sees. With `twice`, a second
 * layernorm of the same x shares gamma and beta and gives a squared output: each
 * gradient, of x, gamma and beta, is then both written and added to. */
static int check_layernorm(cf_shape xs, float eps, int twice)
{
    int d = xs.d[xs.rank - 1];
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", xs);
    cf_node *g = cf_param(m, "g", CF_SHAPE(d), CF_UNIFORM(1.0f));
    cf_node *b = cf_param(m, "b", CF_SHAPE(d), CF_UNIFORM(1.0f));
    cf_output(m, cf_tanh(m, cf_layernorm(m, x, g, b, eps)));
    if (twice) {
        cf_node *y = cf_layernorm(m, x, g, b, eps);
        cf_output(m, cf_mul(m, y, y));
    }
    return check_model(m, -2, 2, 0);
}

TEST(layernorm)
{
    CHECK(check_layernorm(CF_SHAPE(5), 0, 0) == 0);            /* (B, d) */
    CHECK(check_layernorm(CF_SHAPE(4, 6), 0, 0) == 0);         /* (B, T, d) */
    CHECK(check_layernorm(CF_SHAPE(2, 3, 7), 1e-2f, 0) == 0);  /* rank 4, a large eps */
    CHECK(check_layernorm(CF_SHAPE(3, 19), 0, 1) == 0);        /* d past the 8-lane sums; written and added */
    CHECK(check_layernorm(CF_SHAPE(2, 1), 0, 0) == 0);         /* d = 1: y = beta */
    /* rows split into chunks: 32 chunks of 3 x 12 rows */
    CHECK(check_layernorm(CF_SHAPE(12, 8), 0, 1) == 0);
}

/* GELU of x .* (p + 1.5) for x of shape xs in [lo, hi], both forms. */
static int check_gelu(cf_shape xs, int exact, float lo, float hi)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", xs);
    cf_node *p = cf_param(m, "p", CF_SHAPE(xs.d[xs.rank - 1]), CF_UNIFORM(1.0f));
    cf_node *h = cf_mul(m, x, cf_add(m, p, cf_scalar(m, 1.5f)));
    cf_output(m, exact ? cf_gelu_exact(m, h) : cf_gelu(m, h));
    return check_model(m, lo, hi, 0);
}

TEST(gelu)
{
    for (int exact = 0; exact < 2; exact++) {
        CHECK(check_gelu(CF_SHAPE(7), exact, -3, 3) == 0);         /* (B, d): 21, a tail past the lanes */
        CHECK(check_gelu(CF_SHAPE(2, 4), exact, -3, 3) == 0);      /* (B, T, d) */
        CHECK(check_gelu(CF_SHAPE(2, 3, 5), exact, -1, 1) == 0);   /* rank 4, near 0 */
        CHECK(check_gelu(CF_SHAPE(9), exact, -6, 6) == 0);         /* the tails */
    }
    /* used twice: its gradient is written, then added to */
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(3, 4));
    cf_node *p = cf_param(m, "p", CF_SHAPE(4), CF_UNIFORM(1.0f));
    cf_node *h = cf_mul(m, x, p);
    cf_output(m, cf_gelu(m, h));
    cf_output(m, cf_gelu_exact(m, cf_tanh(m, h)));
    cf_output(m, cf_mul(m, cf_gelu_exact(m, h), h));
    CHECK(check_model(m, -2, 2, 0) == 0);
}

/* Causal softmax over (..., T, T): row i sees columns 0..i; what it cannot see is 0,
 * and gradients flow only through what it sees. */
TEST(causal_softmax)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(2, 4, 4));    /* (B, heads, T, T) */
    cf_node *p = cf_param(m, "p", CF_SHAPE(4), CF_UNIFORM(1.0f));
    cf_node *y = cf_softmax_causal(m, cf_mul(m, x, p));
    cf_output(m, cf_mul(m, y, cf_tanh(m, x)));
    CHECK(check_model(m, -2, 2, 0) == 0);   /* frees m */
    m = cf_model_new();
    x = cf_input(m, "x", CF_SHAPE(2, 4, 4));
    p = cf_param(m, "p", CF_SHAPE(4), CF_UNIFORM(1.0f));
    y = cf_softmax_causal(m, cf_mul(m, x, p));
    cf_output(m, cf_mul(m, y, cf_tanh(m, x)));
    cf_exec *e = cf_bind(m, 2, 0);
    CHECK(e != NULL);
    if (!e) return;
    float *in = cf_exec_input(e, 0, NULL);
    for (int i = 0; i < 2 * 2 * 16; i++) in[i] = (float)((i * 7) % 11) * 0.3f - 1.5f;
    float *pp = cf_model_param_data(m, 0);
    for (int i = 0; i < 4; i++) pp[i] = 1;
    CHECK(cf_forward(e, 0) == 0);
    /* row r of a 4 x 4: softmax over its first r + 1 columns, by hand */
    int bad = 0;
    for (int row = 0; row < 2 * 2 * 4; row++) {
        const float *xr = in + row * 4;
        int seen = row % 4 + 1;
        double z = 0, mx = xr[0];
        for (int j = 1; j < seen; j++) mx = fmax(mx, xr[j]);
        for (int j = 0; j < seen; j++) z += exp(xr[j] - mx);
        for (int j = 0; j < 4; j++) {
            double want = j < seen ? exp(xr[j] - mx) / z : 0, got = 0;
            /* output = y .* tanh(x) */
            got = cf_exec_output(e, 0, NULL)[row * 4 + j];
            bad += fabs(got - want * tanh(xr[j])) > 1e-6;
        }
    }
    CHECK(bad == 0);
    cf_exec_free(e);
    cf_model_free(m);
    /* not square: refused when the model is checked */
    m = cf_model_new();
    x = cf_input(m, "x", CF_SHAPE(3, 4));
    cf_node *bad_sm = cf_softmax_causal(m, x);
    if (bad_sm) cf_output(m, bad_sm);
    CHECK(bad_sm == NULL || cf_bind(m, 2, 0) == NULL);
    CHECK_HAS(cf_last_error(), "causal softmax needs square matrices in its last two dimensions");
    cf_model_free(m);
}

/* transpose: the values moved by hand, the gradient by central differences whether
 * whole rows move (inner > 1) or single numbers (a last dimension), and an attention's
 * shape of graph: q k^T over (B, heads, T, d), the causal softmax, times v. */
TEST(transpose)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(3, 4, 5));   /* (B, 3, 4, 5) */
    cf_node *y = cf_transpose(m, x, 1, -1);             /* (B, 5, 4, 3) */
    cf_output(m, y);
    cf_exec *e = cf_bind(m, 2, 0);
    CHECK(e != NULL);
    if (!e) return;
    float *in = cf_exec_input(e, 0, NULL);
    for (int i = 0; i < 2 * 60; i++) in[i] = (float)i;
    CHECK(cf_forward(e, 0) == 0);
    const float *out = cf_exec_output(e, 0, NULL);
    int bad = 0;
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++)
                for (int k = 0; k < 5; k++) bad += out[b * 60 + k * 12 + j * 3 + i] != in[b * 60 + i * 20 + j * 5 + k];
    CHECK(bad == 0);
    cf_shape ys = cf_model_output_shape(m, 0);
    CHECK(ys.rank == 4 && ys.d[1] == 5 && ys.d[2] == 4 && ys.d[3] == 3);
    cf_exec_free(e);
    cf_model_free(m);

    for (int last = 0; last < 2; last++) {   /* rows of 6 move, then single numbers */
        m = cf_model_new();
        x = cf_input(m, "x", CF_SHAPE(3, 4, 6));
        cf_node *p = cf_param(m, "p", CF_SHAPE(6), CF_UNIFORM(1.0f));
        y = last ? cf_transpose(m, cf_mul(m, x, p), 3, 2) : cf_transpose(m, cf_mul(m, x, p), 1, 2);
        cf_output(m, cf_mul(m, cf_tanh(m, y), y));   /* y read twice */
        CHECK(check_model(m, -2, 2, 0) == 0);
    }

    /* x read by a transpose of its last dimension (the 8 x 8 blocks: 13 x 11 leaves
       partial ones) and by tanh, in the notation: the transpose's backward runs last and
       must add to what tanh's wrote */
    m = cf_model_parse("model = Chain(Input(13, 11), x -> transpose(x, 1, 2) * tanh(x))\n", "t.flux");
    CHECK(m != NULL);
    if (m) CHECK(check_model(m, -2, 2, 0) == 0);

    m = cf_model_new();   /* attention: (B, T, heads, d) in, heads 2, T 4, d 3 */
    cf_node *q = cf_transpose(m, cf_input(m, "q", CF_SHAPE(4, 2, 3)), 1, 2);
    cf_node *k = cf_transpose(m, cf_input(m, "k", CF_SHAPE(4, 2, 3)), 1, 2);
    cf_node *v = cf_transpose(m, cf_input(m, "v", CF_SHAPE(4, 2, 3)), 1, 2);
    cf_node *a = cf_softmax_causal(m, cf_matmul(m, q, cf_transpose(m, k, 2, 3)));
    cf_output(m, cf_transpose(m, cf_matmul(m, a, v), 1, 2));
    CHECK(check_model(m, -2, 2, 0) == 0);

    m = cf_model_new();   /* the batch stays where it is */
    x = cf_input(m, "x", CF_SHAPE(3, 4));
    y = cf_transpose(m, x, 0, 1);
    if (y) cf_output(m, y);
    CHECK(y == NULL || cf_bind(m, 2, 0) == NULL);
    CHECK_HAS(cf_last_error(), "transpose cannot move the batch dimension");
    cf_model_free(m);
}

/* A whole small GPT of the standard library, through its parameters (the indices
 * take no gradient): the positions' table used whole (T = context) and cut (T <
 * context), attention, layer norms, GELU, the residuals. */
TEST(gpt_parameters)
{
    const char *src[] = {"model = Chain(Input(3), GPT(5, 4, layers = 1, heads = 2, context = 3))\n",
                         "model = Chain(Input(2), GPT(5, 4, layers = 1, heads = 2, context = 3))\n"};
    for (int i = 0; i < 2; i++) {
        cf_model *m = cf_model_parse(src[i], "gpt.flux");
        CHECK(m != NULL);
        if (!m) continue;
        cf_exec *e = cf_model_init_params(m) == 0 ? cf_bind(m, 3, CF_INPUT_GRADS) : NULL;
        CHECK(e != NULL);
        if (e) {
            size_t n;
            float *x = cf_exec_input(e, 0, &n);
            for (size_t j = 0; j < n; j++) x[j] = (float)(j * 3 % 5);
            /* the tables start at N(0, 0.02): the first layer norm would see values of
               that size, too curved for the finite differences; give them size 1 */
            static const char *const tables[2] = {"1.embed.E", "1.P"};
            for (int t = 0; t < 2; t++) {
                int k = cf_model_param_index(m, tables[t]);
                CHECK(k >= 0);
                float *v = k >= 0 ? cf_model_param_data(m, k) : NULL;
                size_t count = k >= 0 ? cf_shape_count(cf_model_param_shape(m, k)) : 0;
                for (size_t j = 0; v && j < count; j++) v[j] *= 50;
            }
            CHECK(gradcheck_ops(e, m, 5) == 0);
            cf_exec_free(e);
        }
        cf_model_free(m);
    }
}

/* At the kink, where central differences cannot tell: PyTorch's leaky_relu backward
 * is x > 0 ? g : g * slope (aten/src/ATen/native/cpu/Activation.cpp), so at 0 and -0
 * the gradient is the slope's; relu's is 0 there (threshold_backward). Exact values,
 * through bind, forward and backward. */
TEST(kinks_at_zero)
{
    static const float xs[6] = {0.0f, -0.0f, 1e-30f, -1e-30f, 2.0f, -2.0f};
    static const float heads[6] = {3, 5, 7, 11, 13, 17};
    const float slope = 0.1f;
    for (int relu = 0; relu < 2; relu++) {
        cf_model *m = cf_model_new();
        cf_node *x = cf_input(m, "x", CF_SHAPE(6));
        cf_output(m, relu ? cf_relu(m, x) : cf_leakyrelu(m, x, slope));
        cf_exec *e = cf_bind(m, 1, CF_INPUT_GRADS);
        CHECK(e != NULL);
        if (!e) continue;
        memcpy(cf_exec_input(e, 0, NULL), xs, sizeof xs);
        memcpy(cf_exec_output_grad(e, 0, NULL), heads, sizeof heads);
        CHECK(cf_forward(e, 1) == 0 && cf_backward(e) == 0);
        const float *y = cf_exec_output(e, 0, NULL), *dx = cf_exec_input_grad(e, 0, NULL);
        for (int i = 0; i < 6; i++) {
            int pos = xs[i] > 0;
            float want_y = pos ? xs[i] : relu ? 0.0f : slope * xs[i];
            float want_dx = pos ? heads[i] : relu ? 0.0f : slope * heads[i];
            if (y[i] != want_y || dx[i] != want_dx)
                fprintf(stderr, "  %s(%g): y %g (want %g), dx %g (want %g)\n", relu ? "relu" : "leakyrelu",
                        (double)xs[i], (double)y[i], (double)want_y, (double)dx[i], (double)want_dx);
            CHECK(y[i] == want_y);
            CHECK(dx[i] == want_dx);
        }
        cf_exec_free(e);
        cf_model_free(m);
    }
}

/* clamp(x, lo, hi) .* p against central differences, x 0.1 or more from the bounds
 * (where the derivative jumps): inside them and beyond each; then with lo alone (hi
 * +inf, its default). */
TEST(clamp)
{
    static const float xs[24] = {-2.5f, -1.6f, -1.2f, -0.8f, -0.3f, 0.2f, 0.6f, 0.9f, 1.2f, 1.7f, 2.4f, -0.05f,
                                 0.35f, -1.9f, 1.1f, -0.6f, 3.0f, -3.0f, 0.75f, -1.35f, 0.1f, 1.45f, -0.85f, 0.0f};
    for (int one_sided = 0; one_sided < 2; one_sided++) {
        cf_model *m = cf_model_new();
        cf_node *x = cf_input(m, "x", CF_SHAPE(8));
        cf_node *p = cf_param(m, "p", CF_SHAPE(8), CF_UNIFORM(1.0f));
        cf_node *y = one_sided ? cf_call(m, CF_OP_CLAMP, x, -1) : cf_call(m, CF_OP_CLAMP, x, -1, 1);
        cf_output(m, cf_mul(m, y, p));
        cf_exec *e = cf_bind(m, 3, CF_INPUT_GRADS);
        CHECK(e != NULL);
        if (e) {
            memcpy(cf_exec_input(e, 0, NULL), xs, sizeof xs);
            CHECK(gradcheck_ops(e, m, 11) == 0);
            cf_exec_free(e);
        }
        cf_model_free(m);
    }
}

/* clamp at and beyond its bounds, exactly: the bounds themselves pass no gradient
 * (as in PyTorch), NaN stays NaN with none, lo > hi gives hi (NaN aside) and no
 * gradient, and a clamp with neither bound is refused at bind. */
TEST(clamp_at_its_bounds)
{
    static const float xs[6] = {-1.0f, 1.0f, -1.5f, 1.5f, 0.25f, NAN};
    static const float heads[6] = {3, 5, 7, 11, 13, 17};
    static const float want[2][2][6] = {{{-1, 1, -1, 1, 0.25f, NAN}, {0, 0, 0, 0, 13, 0}},   /* lo -1, hi 1 */
                                        {{-1, -1, -1, -1, -1, NAN}, {0, 0, 0, 0, 0, 0}}};   /* lo 1, hi -1 */
    for (int crossed = 0; crossed < 2; crossed++) {
        cf_model *m = cf_model_new();
        cf_node *x = cf_input(m, "x", CF_SHAPE(6));
        cf_output(m, crossed ? cf_call(m, CF_OP_CLAMP, x, 1, -1) : cf_call(m, CF_OP_CLAMP, x, -1, 1));
        cf_exec *e = cf_bind(m, 1, CF_INPUT_GRADS);
        CHECK(e != NULL);
        if (!e) continue;
        memcpy(cf_exec_input(e, 0, NULL), xs, sizeof xs);
        memcpy(cf_exec_output_grad(e, 0, NULL), heads, sizeof heads);
        CHECK(cf_forward(e, 1) == 0 && cf_backward(e) == 0);
        const float *y = cf_exec_output(e, 0, NULL), *dx = cf_exec_input_grad(e, 0, NULL);
        for (int i = 0; i < 6; i++) {
            const float wy = want[crossed][0][i], wdx = want[crossed][1][i];
            int ok = (y[i] == wy || (isnan(y[i]) && isnan(wy))) && dx[i] == wdx;
            if (!ok)
                fprintf(stderr, "  clamp(%g, %d, %d): y %g (want %g), dx %g (want %g)\n", (double)xs[i],
                        crossed ? 1 : -1, crossed ? -1 : 1, (double)y[i], (double)wy, (double)dx[i], (double)wdx);
            CHECK(ok);
        }
        cf_exec_free(e);
        cf_model_free(m);
    }
    cf_model *m = cf_model_new();
    cf_output(m, cf_call(m, CF_OP_CLAMP, cf_input(m, "x", CF_SHAPE(6))));
    CHECK(cf_bind(m, 1, 0) == NULL);
    CHECK_HAS(cf_last_error(), "clamp with neither lo nor hi changes nothing");
    cf_model_free(m);
}

/* Embedding: x holds indices, with repeats (their rows' gradients add up) and a row
 * that no index picks (its gradient stays 0). x gets no gradient: the checker skips it
 * (cf_exec_input_grad is NULL) and perturbs only the table. The table feeds two
 * embeddings, so its gradient is both written and added to. */
TEST(embedding)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(4));       /* (B, T) indices */
    cf_node *s = cf_input(m, "s", CF_SCALAR);         /* (B) indices */
    cf_node *E = cf_param(m, "E", CF_SHAPE(6, 3), CF_UNIFORM(1.0f));
    cf_node *q = cf_param(m, "q", CF_SHAPE(3), CF_UNIFORM(1.0f));
    cf_output(m, cf_tanh(m, cf_embedding(m, x, E)));                 /* (B, 4, 3) */
    cf_output(m, cf_mul(m, cf_embedding(m, s, E), q));              /* (B, 3) */
    cf_exec *e = cf_bind(m, 3, CF_INPUT_GRADS);
    CHECK(e != NULL);
    if (!e) {
        fprintf(stderr, "bind: %s\n", cf_last_error());
        cf_model_free(m);
        return;
    }
    static const float xi[12] = {0, 2, 2, 5, 1, 0, 3, 2, 5, 5, 1, 0}, si[3] = {3, 0, 2};   /* row 4 unused */
    memcpy(cf_exec_input(e, 0, NULL), xi, sizeof xi);
    memcpy(cf_exec_input(e, 1, NULL), si, sizeof si);
    CHECK(cf_exec_input_grad(e, 0, NULL) == NULL && cf_exec_input_grad(e, 1, NULL) == NULL);
    CHECK(gradcheck_ops(e, m, 19) == 0);
    const float *g = cf_model_param_grad(m, cf_model_param_index(m, "E"));
    CHECK(g && g[12] == 0 && g[13] == 0 && g[14] == 0);
    cf_exec_free(e);
    cf_model_free(m);
}

/* The fused LSTM layer (ops/lstm.c), on sequences and on indices into a table, the
 * table's product folded in (V < B T) or its rows gathered (V >= B T). Its states
 * start from carried leaves holding non-zero values; they take no gradient. Both
 * halves of y (h and c at every step) reach the output, so both are checked. */
static int check_lstm(int H, int V)
{
    enum { T = 4, I = 3 };
    cf_model *m = cf_model_new();
    cf_node *h0 = cf_carry_at(m, "h0", CF_SHAPE(H), CF_CONST(0.3f), __FILE__, __LINE__, 0);
    cf_node *c0 = cf_carry_at(m, "c0", CF_SHAPE(H), CF_CONST(-0.5f), __FILE__, __LINE__, 0);
    cf_node *W = cf_param(m, "W", CF_SHAPE(I, 4 * H), CF_UNIFORM(0.8f));
    cf_node *U = cf_param(m, "U", CF_SHAPE(H, 4 * H), CF_UNIFORM(0.8f));
    cf_node *b = cf_param(m, "b", CF_SHAPE(1, 4 * H), CF_UNIFORM(0.5f));
    cf_node *in[7] = {h0, c0, W, U, b};
    int nin = 6;
    if (V) {
        in[5] = cf_param(m, "E", CF_SHAPE(V, I), CF_UNIFORM(1.0f));
        in[6] = cf_input(m, "x", CF_SHAPE(T));
        nin = 7;
    } else {
        in[5] = cf_input(m, "x", CF_SHAPE(T, I));
    }
    cf_output(m, cf_op_at(m, CF_OP_LSTM, nin, in, NULL, 0, NULL, 0, __FILE__, __LINE__, 0));
    cf_exec *e = cf_bind(m, 3, CF_INPUT_GRADS);
    if (!e) {
        fprintf(stderr, "bind: %s\n", cf_last_error());
        cf_model_free(m);
        return -1;
    }
    size_t n;
    float *x = cf_exec_input(e, 0, &n);
    srand(5);
    for (size_t i = 0; i < n; i++) x[i] = V ? (float)(i * 7 % (size_t)V) : 2.0f * (float)rand() / (float)RAND_MAX - 1;
    int bad = gradcheck_ops(e, m, 13);
    if (V && cf_exec_input_grad(e, 0, NULL) != NULL) bad++;   /* indices take no gradient */
    cf_exec_free(e);
    cf_model_free(m);
    return bad;
}

TEST(lstm)
{
    CHECK(check_lstm(5, 0) == 0);    /* a block of 5 units (8 does not divide 5) */
    CHECK(check_lstm(8, 0) == 0);    /* blocks of 8 */
    CHECK(check_lstm(8, 4) == 0);    /* indices, E W folded: 4 rows < 12 */
    CHECK(check_lstm(5, 20) == 0);   /* indices, rows gathered: 20 >= 12 */
}

/* A sigmoid whose backward forgets the factor (1 - y). */
static void wrong_sigmoid_backward(const cf_inst *k)
{
    size_t n = cf_shape_count_b(k->ys, 1);
    for (size_t i = 0; i < n; i++) {
        float g = k->dy[i] * k->y[i];
        k->dx[0][i] = k->acc[0] ? k->dx[0][i] + g : g;
    }
}

TEST(checker_catches_wrong_backward)
{
    const cf_opdef *good = cf_ops[CF_OP_SIGMOID];
    cf_opdef planted = *good;
    planted.backward = wrong_sigmoid_backward;
    cf_ops[CF_OP_SIGMOID] = &planted;
    int bad = check_unary(CF_OP_SIGMOID, 0, -2, 2, 0);
    cf_ops[CF_OP_SIGMOID] = good;
    CHECK(bad > 0);
    CHECK(check_unary(CF_OP_SIGMOID, 0, -2, 2, 0) == 0);
}

/* The op contract: every opcode has its row in the table, a name and a description,
 * an input count, and, when it has a backward, a gradient check above that passed.
 * Adding an op without its check fails here. Runs last. */
TEST(every_op_has_a_row_a_name_and_a_check)
{
    for (int op = 0; op < CF_OP_COUNT_; op++) {
        const cf_opdef *d = cf_ops[op];
        CHECK(d != NULL);
        if (!d) {
            fprintf(stderr, "  opcode %d has no row in src/ops/table.c\n", op);
            continue;
        }
        CHECK(d->name && d->name[0] && d->what && d->what[0]);
        CHECK(d->nin == CF_NIN_ANY || (d->nin >= 0 && d->nin <= CF_MAX_INPUTS));
        int leaf = op == CF_OP_INPUT || op == CF_OP_PARAM || op == CF_OP_STATE || op == CF_OP_CONST;
        CHECK(leaf == (d->nin == 0) && leaf == (d->forward == NULL));
        if (!leaf && d->backward && !checked[op]) {
            fprintf(stderr, "  op %s (%d) has a backward but no passing gradient check in test_grad.c\n", d->name, op);
            CHECK(checked[op]);
        }
        if (!d->flops == !(d->flags & CF_NO_FLOPS)) {   /* cflux summary would show 0 FLOPs unawares */
            fprintf(stderr, "  op %s (%d) needs exactly one of a flops function and CF_NO_FLOPS\n", d->name, op);
            CHECK(!d->flops != !(d->flags & CF_NO_FLOPS));
        }
        if (d->flags & CF_CALL) CHECK(d->nin == 1);
        for (int a = 0; a < CF_OP_ATTRS && d->attrs[a].name; a++)   /* numbers only after a value */
            CHECK((d->flags & CF_CALL) && (d->attrs[a].kind == 'f' || d->attrs[a].kind == 'i'));
    }
}

int main(void)
{
    RUN(unary_ops);
    RUN(arithmetic_broadcasting);
    RUN(matmul_shapes);
    RUN(affine);
    RUN(attention);
    RUN(layout_ops);
    RUN(losses);
    RUN(reduce_over_batch);
    RUN(conv2d);
    RUN(pooling);
    RUN(dropout);
    RUN(batchnorm);
    RUN(embedding);
    RUN(lstm);
    RUN(layernorm);
    RUN(causal_softmax);
    RUN(gelu);
    RUN(transpose);
    RUN(gpt_parameters);
    RUN(kinks_at_zero);
    RUN(clamp);
    RUN(clamp_at_its_bounds);
    RUN(checker_catches_wrong_backward);
    RUN(every_op_has_a_row_a_name_and_a_check);
    return test_summary("grad");
}
