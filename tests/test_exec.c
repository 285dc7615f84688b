/* test_exec.c - binding and running: shape errors with the C line that built the
 * node, batch independence, shared parameters, gradient requests, several outputs,
 * memory planning. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "exec/exec.h"
#include "test.h"

static float frand(void) { return (float)rand() / (float)RAND_MAX * 2.0f - 1.0f; }

/* An MLP 6-5-4-3 with softmax and cross-entropy; outputs: probabilities, loss. */
static cf_model *small_mlp(void)
{
    cf_model *m = cf_model_new();
    cf_model_set_seed(m, 42);
    cf_node *h = cf_input(m, "x", CF_SHAPE(6));
    cf_node *y = cf_input(m, "y", CF_SCALAR);
    int sz[] = {6, 5, 4, 3};
    char path[8];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%d", 2 * i + 1);
        cf_scope_begin(m, "Affine", path);
        /* two statements: C leaves the order of arguments' evaluation open */
        cf_node *W = cf_param(m, "W", CF_SHAPE(sz[i], sz[i + 1]), CF_GLOROT);
        cf_node *b = cf_param(m, "b", CF_SHAPE(1, sz[i + 1]), CF_NORMAL(0.1f));
        h = cf_add(m, cf_matmul(m, h, W), b);
        cf_scope_end(m);
        if (i < 2) h = cf_tanh(m, h);
    }
    cf_node *loss = cf_softmax_xent(m, h, y);
    cf_output(m, cf_node_input(loss, 0));
    cf_output(m, loss);
    return m;
}

/* Views: a reshape is its input's memory, with no copy and no buffer; a slice is too
 * where the range is contiguous (a batch of 1), and a transpose where the floats keep
 * their order; the values are those the copies gave, forward and backward. */
TEST(views_share_memory)
{
    for (int batch = 1; batch <= 2; batch++) {
        cf_model *m = cf_model_new();
        cf_node *x = cf_input(m, "x", CF_SHAPE(2, 3));
        cf_node *y = cf_tanh(m, x);
        cf_node *r = cf_reshape(m, y, CF_SHAPE(6));                   /* (B, 6) */
        cf_node *s = cf_slice(m, r, 1, 2, 3);                           /* (B, 3): elements 2..4 */
        cf_node *t = cf_transpose(m, cf_reshape(m, s, CF_SHAPE(1, 3)), 1, 2);   /* (B, 3, 1) */
        cf_output(m, cf_tanh(m, t));
        /* r read long after y's step, past values that could take y's memory if it
           were free */
        cf_node *a = cf_tanh(m, cf_tanh(m, cf_tanh(m, cf_neg(m, x))));
        cf_output(m, cf_add(m, cf_reshape(m, a, CF_SHAPE(6)), r));
        cf_exec *e = cf_bind(m, batch, CF_INPUT_GRADS);
        CHECK(e != NULL);
        if (!e) continue;
        CHECK(e->vsrc[r->id] == y->id && e->val[r->id] == e->val[y->id]);
        CHECK((e->vsrc[s->id] >= 0) == (batch == 1));
        CHECK(e->vsrc[t->id] >= 0);
        size_t n;
        float *xv = cf_exec_input(e, 0, &n);
        for (size_t i = 0; i < n; i++) xv[i] = 0.3f * (float)i - 1.0f;
        float *head = cf_exec_output_grad(e, 0, NULL);
        for (size_t i = 0; i < 3 * (size_t)batch; i++) head[i] = 1.0f + (float)i;
        CHECK(cf_forward(e, 1) == 0 && cf_backward(e) == 0);
        const float *out = cf_exec_output(e, 0, NULL), *dx = cf_exec_input_grad(e, 0, NULL);
        const float *sum = cf_exec_output(e, 1, NULL);
        for (size_t i = 0; i < n; i++)
            CHECK_NEAR(sum[i], tanhf(tanhf(tanhf(-xv[i]))) + tanhf(xv[i]), 1e-6);
        for (int b = 0; b < batch; b++)
            for (int j = 0; j < 6; j++) {
                float a = tanhf(xv[6 * b + j]), want_dx = 0;
                if (j >= 2 && j < 5) {
                    float o = tanhf(a), g = 1.0f + (float)(3 * b + j - 2);
                    CHECK_NEAR(out[3 * b + j - 2], o, 1e-6);
                    want_dx = g * (1 - o * o) * (1 - a * a);
                }
                CHECK_NEAR(dx[6 * b + j], want_dx, 1e-5);
            }
        cf_exec_free(e);
        /* inference: nothing else keeps y's memory alive for r */
        e = cf_bind(m, batch, 0);
        CHECK(e != NULL);
        if (!e) continue;
        xv = cf_exec_input(e, 0, &n);
        for (size_t i = 0; i < n; i++) xv[i] = 0.3f * (float)i - 1.0f;
        CHECK(cf_forward(e, 0) == 0);
        sum = cf_exec_output(e, 1, NULL);
        for (size_t i = 0; i < n; i++)
            CHECK_NEAR(sum[i], tanhf(tanhf(tanhf(-xv[i]))) + tanhf(xv[i]), 1e-6);
        cf_exec_free(e);
        cf_model_free(m);
    }
}

TEST(shape_error_names_op_shapes_and_line)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(10));
    cf_scope_begin(m, "TLP", NULL);
    cf_node *h = cf_matmul(m, x, cf_param(m, "W1", CF_SHAPE(10, 20), CF_GLOROT));
    int line = __LINE__ + 1;
    cf_node *z = cf_matmul(m, h, cf_param(m, "W2", CF_SHAPE(21, 15), CF_GLOROT));
    cf_scope_end(m);
    cf_output(m, z);
    cf_exec *e = cf_bind(m, 4, 0);
    CHECK(e == NULL);
    const char *err = cf_last_error();
    CHECK_HAS(err, "error: matrix product shapes do not match: (B, 20) * (21, 15)");
    char at[128];
    snprintf(at, sizeof at, "in TLP at %s:%d", __FILE__, line);
    CHECK_HAS(err, at);
    CHECK(cf_bind(m, 4, CF_TRAIN) == NULL);   /* refused again, the same way */
    CHECK_HAS(cf_last_error(), at);
    cf_model_free(m);
}

/* A trace hundreds of frames deep: runs of one line fold into "the same N more
 * times", and past 30 runs the middle folds so that the outermost frame still shows. */
TEST(deep_traces_fold)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(10));
    char name[16];
    for (int i = 0; i < 40; i++) {
        snprintf(name, sizeof name, "L%d", i);
        cf_scope_begin_at(m, name, NULL, "deep.c", 100 + i, 0);
    }
    for (int i = 0; i < 200; i++) cf_scope_begin_at(m, "Rep", NULL, "deep.c", 500, 0);
    int line = __LINE__ + 1;
    cf_node *z = cf_matmul(m, x, cf_param(m, "W", CF_SHAPE(11, 2), CF_GLOROT));
    for (int i = 0; i < 240; i++) cf_scope_end(m);
    cf_output(m, z);
    CHECK(cf_bind(m, 4, 0) == NULL);
    char want[512];
    snprintf(want, sizeof want,
             "error: matrix product shapes do not match: (B, 10) * (11, 2)\n"
             "  in Rep at %s:%d\n"
             "  in Rep at deep.c:500\n"
             "  ... the same 198 more times\n"
             "  in L39 at deep.c:500\n"
             "  in L38 at deep.c:139\n", __FILE__, line);
    CHECK_HAS(cf_last_error(), want);
    CHECK_HAS(cf_last_error(), "\n  in L17 at deep.c:118\n  ... 14 more\n  in L2 at deep.c:103\n"
                               "  in L1 at deep.c:102\n  in L0 at deep.c:101\n  at deep.c:100");
    printf("%s\n", cf_last_error());
    cf_model_free(m);
}

/* A conv2d of x (B, C, H, W) by weights of shape ws with attributes ia (nia of them)
 * fails at bind with a message holding want and the line that built the node. */
static void conv_error(cf_shape xs, cf_shape ws, const int *ia, int nia, const char *want)
{
    cf_model *m = cf_model_new();
    cf_node *in[2];
    in[0] = cf_input(m, "x", xs);
    in[1] = cf_param(m, "w", ws, CF_GLOROT);
    int line = __LINE__ + 1;
    cf_output(m, cf_op_at(m, CF_OP_CONV2D, 2, in, ia, nia, NULL, 0, __FILE__, line, 0));
    CHECK(cf_bind(m, 2, CF_TRAIN) == NULL);
    CHECK_HAS(cf_last_error(), want);
    char at[128];
    snprintf(at, sizeof at, "at %s:%d", __FILE__, line);
    CHECK_HAS(cf_last_error(), at);
    printf("%s\n", cf_last_error());
    cf_model_free(m);
}

TEST(conv2d_shape_errors)
{
    static const int s1[1] = {1}, s2p1[4] = {2, 2, 1, 1}, g2[7] = {1, 1, 0, 0, 1, 1, 2};
    static const int neg[4] = {-1, 1, 0, 0}, dil3[6] = {1, 1, 0, 0, 3, 3};
    conv_error(CF_SHAPE(3, 8, 8), CF_SHAPE(4, 2, 3, 3), s1, 1,
               "error: conv2d channels do not match: x (B, 3, 8, 8) has 3 channels, weights (4, 2, 3, 3) take 2");
    conv_error(CF_SHAPE(4, 8, 8), CF_SHAPE(4, 3, 3, 3), g2, 7, "x (B, 4, 8, 8) has 4 channels, weights (4, 3, 3, 3) take 2 groups x 3 = 6");
    conv_error(CF_SHAPE(4, 8, 8), CF_SHAPE(5, 2, 3, 3), g2, 7,
               "error: conv2d: the 5 output channels of weights (5, 2, 3, 3) do not split into 2 groups");
    conv_error(CF_SHAPE(1, 4, 4), CF_SHAPE(2, 1, 5, 5), s1, 1,
               "error: conv2d kernel 5x5 is larger than the input 4x4: x");
    /* padding makes room for it; dilation takes it away again */
    conv_error(CF_SHAPE(1, 4, 4), CF_SHAPE(2, 1, 3, 3), dil3, 6,
               "error: conv2d kernel 3x3 (7x7 with dilation 3x3) is larger than the input 4x4: x");
    conv_error(CF_SHAPE(1, 3, 3), CF_SHAPE(2, 1, 6, 6), s2p1, 4,
               "conv2d kernel 6x6 is larger than the input 3x3 (5x5 with padding 1x1)");
    /* a positive stride always leaves an output once the kernel fits (the last window
       starts at 0 at worst); a negative one is refused */
    conv_error(CF_SHAPE(1, 8, 8), CF_SHAPE(2, 1, 3, 3), neg, 4,
               "error: conv2d of x (B, 1, 8, 8): stride -1x1, padding 0x0, dilation 1x1 and groups 1 cannot be negative");
    conv_error(CF_SHAPE(8, 8), CF_SHAPE(2, 1, 3, 3), s1, 1, "error: conv2d takes x as (B, C, H, W), not (B, 8, 8) (rank 3)");
    conv_error(CF_SHAPE(1, 8, 8), CF_SHAPE(2, 3, 3), s1, 1,
               "error: conv2d takes weights as (O, C/groups, KH, KW) without the batch dimension, not (2, 3, 3)");

    /* and the shape it infers: stride 2, pad 1 on 9x8 with 3x3 gives 5x4 */
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(2, 9, 8));
    cf_node *w = cf_param(m, "w", CF_SHAPE(6, 2, 3, 3), CF_GLOROT);
    cf_output(m, cf_conv2d(m, x, w, 2, 1));
    cf_exec *e = cf_bind(m, 3, 0);
    CHECK(e != NULL);
    if (e) {
        cf_shape s = cf_exec_output_shape(e, 0);
        CHECK(s.rank == 4 && s.d[0] == 3 && s.d[1] == 6 && s.d[2] == 5 && s.d[3] == 4);
        cf_exec_free(e);
    }
    cf_model_free(m);
}

TEST(broadcast_error_and_batch_rules)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(3));
    cf_output(m, cf_add(m, x, cf_param(m, "p", CF_SHAPE(4), CF_ZEROS)));
    CHECK(cf_bind(m, 3, 0) == NULL);
    CHECK_HAS(cf_last_error(), "addition shapes do not broadcast: (B, 3) and (4)");
    cf_model_free(m);

    /* B never stretches to meet a number, even when the batch happens to equal it */
    m = cf_model_new();
    x = cf_input(m, "x", CF_SHAPE(3));
    cf_output(m, cf_add(m, x, cf_param(m, "p", CF_SHAPE(3, 3), CF_ZEROS)));
    CHECK(cf_bind(m, 3, 0) == NULL);
    CHECK_HAS(cf_last_error(), "(B, 3) and (3, 3)");
    cf_model_free(m);

    m = cf_model_new();
    x = cf_input(m, "x", CF_SHAPE(4, 3));
    cf_output(m, cf_slice(m, x, 0, 0, 1));
    CHECK(cf_bind(m, 2, 0) == NULL);
    CHECK_HAS(cf_last_error(), "slice cannot cut the batch dimension");
    cf_model_free(m);

    m = cf_model_new();
    x = cf_input(m, "x", CF_SHAPE(4, 3));
    cf_output(m, cf_reshape(m, x, CF_SHAPE(5, -1)));
    CHECK(cf_bind(m, 2, 0) == NULL);
    CHECK_HAS(cf_last_error(), "reshape cannot change the number of elements: (B, 4, 3) (12 per sample) to (B, 5, -1)");
    cf_model_free(m);
}

TEST(build_errors_are_kept_for_bind)
{
    cf_model *m = cf_model_new();
    int line = __LINE__ + 1;
    cf_node *bad = cf_param(m, "W", CF_SHAPE(3, 0), CF_GLOROT);
    CHECK(bad == NULL);
    cf_node *x = cf_input(m, "x", CF_SHAPE(3));
    cf_node *z = cf_matmul(m, x, bad);   /* NULL in, NULL out */
    CHECK(z == NULL);
    CHECK(cf_output(m, z) < 0);
    CHECK(cf_bind(m, 1, 0) == NULL);
    char at[128];
    snprintf(at, sizeof at, "%s:%d", __FILE__, line);
    CHECK_HAS(cf_last_error(), "parameter 'W': dimension 2 is 0");
    CHECK_HAS(cf_last_error(), at);
    cf_model_free(m);

    m = cf_model_new();
    cf_param(m, "W", CF_SHAPE(2), CF_ZEROS);
    CHECK(cf_param(m, "W", CF_SHAPE(2), CF_ZEROS) == NULL);
    CHECK_HAS(cf_last_error(), "already a parameter named 'W'");
    cf_model_free(m);

    m = cf_model_new();
    cf_input(m, "x", CF_SHAPE(2));
    CHECK(cf_bind(m, 1, 0) == NULL);
    CHECK_HAS(cf_last_error(), "no outputs");
    CHECK(cf_bind(NULL, 1, 0) == NULL);
    cf_model_free(m);

    m = small_mlp();
    CHECK(cf_bind(m, 0, 0) == NULL);
    CHECK_HAS(cf_last_error(), "batch size 0");
    cf_exec *e = cf_bind(m, 2, 0);
    CHECK(e != NULL);
    CHECK(cf_backward(e) != 0);                 /* not bound for training */
    CHECK_HAS(cf_last_error(), "without CF_TRAIN");
    CHECK(cf_param(m, "late", CF_SHAPE(1), CF_ZEROS) == NULL);   /* sealed */
    CHECK_HAS(cf_last_error(), "sealed");
    cf_exec_free(e);
    cf_model_free(m);
}

TEST(bad_label_is_an_error_not_a_crash)
{
    cf_model *m = small_mlp();
    cf_exec *e = cf_bind(m, 2, CF_TRAIN);
    float *x = cf_exec_input(e, 0, NULL), *y = cf_exec_input(e, 1, NULL);
    for (int i = 0; i < 12; i++) x[i] = frand();
    y[0] = 1;
    y[1] = 3;   /* 3 classes: 0..2 */
    CHECK(cf_forward(e, 1) != 0);
    CHECK_HAS(cf_last_error(), "label 3 of row 1 is not a class index in 0..2");
    CHECK_HAS(cf_last_error(), "test_exec.c:");
    y[1] = 0.5f;
    CHECK(cf_forward(e, 1) != 0);
    y[1] = NAN;
    CHECK(cf_forward(e, 1) != 0);
    y[1] = 2;
    CHECK(cf_forward(e, 1) == 0);
    cf_exec_free(e);
    cf_model_free(m);
}

TEST(batch_of_64_equals_64_single_calls)
{
    cf_model *m = small_mlp();
    cf_exec *big = cf_bind(m, 64, 0), *one = cf_bind(m, 1, 0);
    CHECK(big && one);
    size_t n;
    float *x = cf_exec_input(big, 0, &n);
    CHECK(n == 64 * 6);
    float *y = cf_exec_input(big, 1, NULL);
    for (size_t i = 0; i < n; i++) x[i] = frand();
    for (int i = 0; i < 64; i++) y[i] = (float)(i % 3);
    CHECK(cf_forward(big, 0) == 0);
    const float *pb = cf_exec_output(big, 0, &n);
    CHECK(n == 64 * 3);
    double loss = 0;
    int bad = 0;
    for (int s = 0; s < 64; s++) {
        float *x1 = cf_exec_input(one, 0, NULL);
        for (int j = 0; j < 6; j++) x1[j] = x[s * 6 + j];
        cf_exec_input(one, 1, NULL)[0] = (float)(s % 3);
        CHECK(cf_forward(one, 0) == 0);
        const float *p1 = cf_exec_output(one, 0, NULL);
        for (int j = 0; j < 3; j++)
            if (fabsf(p1[j] - pb[s * 3 + j]) > 1e-6f * fabsf(p1[j]) + 1e-7f) bad++;
        loss += cf_exec_output(one, 1, NULL)[0];
    }
    CHECK(bad == 0);
    CHECK_NEAR(cf_exec_output(big, 1, NULL)[0], loss / 64, 1e-5);
    cf_exec_free(big);
    cf_exec_free(one);
    cf_model_free(m);
}

TEST(executors_share_parameters)
{
    cf_model *m = small_mlp();
    cf_exec *a = cf_bind(m, 64, CF_TRAIN), *b = cf_bind(m, 1, 0);
    float *W = cf_model_param_data(m, 0);
    /* binding again moved nothing: the parameters are where they were */
    CHECK(W == cf_model_param_data(m, 0));
    float *x = cf_exec_input(b, 0, NULL);
    for (int j = 0; j < 6; j++) x[j] = frand();
    cf_exec_input(b, 1, NULL)[0] = 0;
    cf_forward(b, 0);
    float before = cf_exec_output(b, 1, NULL)[0];
    /* train on the big executor: the small one sees the new parameters at once */
    float *xa = cf_exec_input(a, 0, NULL), *ya = cf_exec_input(a, 1, NULL);
    for (int i = 0; i < 64; i++) {
        for (int j = 0; j < 6; j++) xa[i * 6 + j] = x[j];
        ya[i] = 0;
    }
    for (int step = 0; step < 20; step++) {
        cf_forward(a, 1);
        cf_backward(a);
        cf_update_sgd(a, 0.5f);
    }
    cf_forward(b, 0);
    float after = cf_exec_output(b, 1, NULL)[0];
    CHECK(after < before * 0.5f);
    cf_exec_free(a);
    cf_exec_free(b);
    cf_model_free(m);
}

TEST(grad_requests)
{
    /* add: two backward calls give twice the gradient; write: once; none: frozen */
    float g1[30], g2[30];
    for (int mode = 0; mode < 3; mode++) {
        cf_model *m = small_mlp();
        if (mode == 1) CHECK(cf_model_set_grad_req(m, NULL, CF_GRAD_WRITE) == 0);
        if (mode == 2) CHECK(cf_model_set_grad_req(m, "1.W", CF_GRAD_NONE) == 0);
        CHECK(cf_model_set_grad_req(m, "nope", CF_GRAD_NONE) != 0);
        cf_exec *e = cf_bind(m, 4, CF_TRAIN);
        srand(5);
        float *x = cf_exec_input(e, 0, NULL), *y = cf_exec_input(e, 1, NULL);
        for (int i = 0; i < 24; i++) x[i] = frand();
        for (int i = 0; i < 4; i++) y[i] = (float)(i % 3);
        cf_forward(e, 1);
        cf_backward(e);
        float *g = cf_model_param_grad(m, 0);
        if (mode == 0) for (int i = 0; i < 30; i++) g1[i] = g[i];
        cf_forward(e, 1);
        cf_backward(e);
        if (mode == 0) {
            int bad = 0;
            for (int i = 0; i < 30; i++) bad += fabsf(g[i] - 2 * g1[i]) > 1e-6f;
            CHECK(bad == 0);
            CHECK(cf_set_gemm("builtin") == 0);   /* the other engine agrees */
            cf_model_zero_grad(m);
            cf_forward(e, 1);
            cf_backward(e);
            for (int i = 0; i < 30; i++) g2[i] = g[i];
            bad = 0;
            for (int i = 0; i < 30; i++) bad += fabsf(g2[i] - g1[i]) > 1e-6f;
            CHECK(bad == 0);
            cf_set_gemm(getenv("CFLUX_GEMM") ? getenv("CFLUX_GEMM") : "openblas");
        } else if (mode == 1) {
            int bad = 0;
            for (int i = 0; i < 30; i++) bad += fabsf(g[i] - g1[i]) > 1e-6f;
            CHECK(bad == 0);
        } else {
            CHECK(cf_model_param_grad(m, 0) != NULL);
            float W0 = cf_model_param_data(m, 0)[0], b0 = cf_model_param_data(m, 1)[0];
            cf_update_sgd(e, 0.1f);
            CHECK(cf_model_param_data(m, 0)[0] == W0);    /* frozen */
            CHECK(cf_model_param_data(m, 1)[0] != b0);    /* trained */
        }
        cf_exec_free(e);
        cf_model_free(m);
    }
}

TEST(update_zeroes_gradients)
{
    cf_model *m = small_mlp();
    cf_exec *e = cf_bind(m, 2, CF_TRAIN);
    float *x = cf_exec_input(e, 0, NULL);
    for (int i = 0; i < 12; i++) x[i] = frand();
    cf_forward(e, 1);
    cf_backward(e);
    float nz = 0;
    for (int p = 0; p < cf_model_param_count(m); p++) nz += fabsf(cf_model_param_grad(m, p)[0]);
    CHECK(nz > 0);
    cf_update_sgd(e, 0.1f);
    for (int p = 0; p < cf_model_param_count(m); p++) {
        size_t n = cf_shape_count(cf_model_param_shape(m, p));
        for (size_t i = 0; i < n; i++) CHECK(cf_model_param_grad(m, p)[i] == 0);
    }
    cf_exec_free(e);
    cf_model_free(m);
}

TEST(head_gradients_and_input_gradients)
{
    /* y = 3 x: with head gradient h, dx = 3 h; a second output of the same node adds */
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(2));
    cf_node *y = cf_mul(m, x, cf_scalar(m, 3));
    CHECK(cf_output(m, y) == 0);
    CHECK(cf_output(m, y) == 1);
    cf_exec *e = cf_bind(m, 2, CF_INPUT_GRADS);
    CHECK(cf_exec_output_grad(e, 0, NULL)[0] == 0);   /* not a scalar: head starts at 0 */
    float *in = cf_exec_input(e, 0, NULL);
    for (int i = 0; i < 4; i++) in[i] = (float)i;
    float *h0 = cf_exec_output_grad(e, 0, NULL), *h1 = cf_exec_output_grad(e, 1, NULL);
    for (int i = 0; i < 4; i++) h0[i] = (float)(i + 1), h1[i] = 10;
    CHECK(cf_forward(e, 1) == 0);
    CHECK(cf_backward(e) == 0);
    size_t n;
    const float *gx = cf_exec_input_grad(e, 0, &n);
    CHECK(n == 4);
    for (int i = 0; i < 4; i++) CHECK_NEAR(gx[i], 3.0f * (i + 1 + 10), 1e-5);
    CHECK(cf_exec_output(e, 2, NULL) == NULL);      /* out of range */
    CHECK(cf_exec_input(e, -1, NULL) == NULL);
    CHECK(cf_exec_input_index(e, "x") == 0 && cf_exec_input_index(e, "z") == -1);
    cf_shape s = cf_exec_output_shape(e, 0);
    CHECK(s.rank == 2 && s.d[0] == 2 && s.d[1] == 2);
    cf_exec_free(e);
    cf_model_free(m);
}

TEST(memory_plan_reuses_buffers)
{
    /* a deep chain of wide layers: activations that are dead are reused */
    cf_model *m = cf_model_new();
    cf_node *h = cf_input(m, "x", CF_SHAPE(256));
    for (int i = 0; i < 12; i++) h = cf_tanh(m, cf_relu(m, cf_mul(m, h, cf_scalar(m, 0.5f))));
    cf_output(m, h);
    cf_exec *e = cf_bind(m, 32, 0);
    size_t unplanned, used = cf_exec_arena_bytes(e, &unplanned);
    CHECK(used * 8 < unplanned);
    float *x = cf_exec_input(e, 0, NULL);
    for (int i = 0; i < 32 * 256; i++) x[i] = frand();
    CHECK(cf_forward(e, 0) == 0);
    /* the same values through a training bind, which keeps more alive */
    cf_exec *t = cf_bind(m, 32, CF_INPUT_GRADS);
    float *xt = cf_exec_input(t, 0, NULL);
    for (int i = 0; i < 32 * 256; i++) xt[i] = x[i];
    CHECK(cf_forward(t, 1) == 0);
    const float *a = cf_exec_output(e, 0, NULL), *b = cf_exec_output(t, 0, NULL);
    int same = 1;
    for (int i = 0; i < 32 * 256; i++) same &= a[i] == b[i];
    CHECK(same);
    CHECK(cf_backward(t) == 0);
    cf_exec_free(e);
    cf_exec_free(t);
    cf_model_free(m);
}

TEST(seed_decides_initialisation)
{
    cf_model *a = small_mlp(), *b = small_mlp(), *c = small_mlp();
    cf_model_set_seed(c, 43);
    cf_model_init_params(a);
    cf_model_init_params(b);
    cf_model_init_params(c);
    size_t n = cf_shape_count(cf_model_param_shape(a, 0));
    CHECK(memcmp(cf_model_param_data(a, 0), cf_model_param_data(b, 0), n * sizeof(float)) == 0);
    CHECK(memcmp(cf_model_param_data(a, 0), cf_model_param_data(c, 0), n * sizeof(float)) != 0);
    /* glorot bound for (6, 5): sqrt(6 / 11) */
    float lim = sqrtf(6.0f / 11.0f), mx = 0;
    for (size_t i = 0; i < n; i++) mx = fmaxf(mx, fabsf(cf_model_param_data(a, 0)[i]));
    CHECK(mx <= lim && mx > 0.5f * lim);
    CHECK(cf_model_weight_count(a) == 6 * 5 + 5 + 5 * 4 + 4 + 4 * 3 + 3);
    CHECK(strcmp(cf_model_param_name(a, 2), "3.W") == 0);
    cf_model_free(a);
    cf_model_free(b);
    cf_model_free(c);
}

TEST(nan_trap_names_the_op)
{
    setenv("CFLUX_NANTRAP", "1", 1);
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(2));
    cf_node *h = cf_exp(m, x);
    int line = __LINE__ + 1;
    cf_node *l = cf_log(m, cf_sub(m, h, cf_scalar(m, 1)));
    cf_output(m, cf_tanh(m, l));
    cf_exec *e = cf_bind(m, 1, 0);
    unsetenv("CFLUX_NANTRAP");
    float *in = cf_exec_input(e, 0, NULL);
    in[0] = 1, in[1] = 2;
    CHECK(cf_forward(e, 0) == 0);
    in[1] = -1;   /* log of a negative number */
    CHECK(cf_forward(e, 0) != 0);
    CHECK_HAS(cf_last_error(), "log made a non-finite value (");
    CHECK_HAS(cf_last_error(), "nan at element 1)");
    char at[128];
    snprintf(at, sizeof at, "%s:%d", __FILE__, line);
    CHECK_HAS(cf_last_error(), at);
    cf_exec_free(e);
    cf_model_free(m);
}

/* Same seed, same data, same thread count: bitwise the same parameters. */
static void train_copy(int threads, float *out, size_t n)
{
    cf_set_threads(threads);
    cf_model *m = cf_model_new();
    cf_model_set_seed(m, 7);
    cf_node *x = cf_input(m, "x", CF_SHAPE(300));
    cf_node *y = cf_input(m, "y", CF_SCALAR);
    cf_node *W = cf_param(m, "W", CF_SHAPE(300, 200), CF_GLOROT);
    cf_node *V = cf_param(m, "V", CF_SHAPE(200, 10), CF_GLOROT);
    cf_output(m, cf_softmax_xent(m, cf_matmul(m, cf_tanh(m, cf_matmul(m, x, W)), V), y));
    cf_exec *e = cf_bind(m, 100, CF_TRAIN);
    srand(3);
    for (int step = 0; step < 5; step++) {
        float *in = cf_exec_input(e, 0, NULL), *lab = cf_exec_input(e, 1, NULL);
        for (int i = 0; i < 100 * 300; i++) in[i] = frand();
        for (int i = 0; i < 100; i++) lab[i] = (float)(rand() % 10);
        cf_forward(e, 1);
        cf_backward(e);
        cf_update_sgd(e, 0.1f);
    }
    memcpy(out, cf_model_param_data(m, 0), n * sizeof *out);
    cf_exec_free(e);
    cf_model_free(m);
    cf_set_threads(0);
}

TEST(same_seed_same_bits)
{
    size_t n = 300 * 200;
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    train_copy(2, a, n);
    train_copy(2, b, n);
    CHECK(memcmp(a, b, n * sizeof *a) == 0);
    train_copy(1, b, n);   /* another thread count may round differently, but not by much */
    double d = 0;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs(a[i] - b[i]));
    CHECK(d < 1e-5);
    free(a);
    free(b);
}

/* Cross-entropy from large logits: log 3 for three equal ones, not 0 (which adding
 * log s to a max of 1e30 first gave), for index and probability labels. */
TEST(cross_entropy_of_large_logits)
{
    for (int soft = 0; soft < 2; soft++) {
        cf_model *m = cf_model_new();
        cf_node *x = cf_input(m, "x", CF_SHAPE(3));
        cf_node *y = soft ? cf_input(m, "y", CF_SHAPE(3)) : cf_input(m, "y", CF_SCALAR);
        cf_output(m, cf_softmax_xent(m, x, y));
        cf_exec *e = cf_bind(m, 2, 0);
        CHECK(e != NULL);
        if (!e) continue;
        float *in = cf_exec_input(e, 0, NULL), *lab = cf_exec_input(e, 1, NULL);
        for (int i = 0; i < 6; i++) in[i] = i < 3 ? 1e30f : -1e30f;
        if (soft)
            for (int i = 0; i < 6; i++) lab[i] = i % 3 == 1;
        else
            lab[0] = 1, lab[1] = 2;
        in[5] = -1e30f + 1e24f;   /* row 2: class 2 wins by far */
        CHECK(cf_forward(e, 0) == 0);
        /* row 1: log 3; row 2: the label's logit is 1e24 below the best */
        double want = (log(3.0) + (soft ? (double)in[5] - (double)in[4] : 0)) / 2;
        CHECK_NEAR(*cf_exec_output(e, 0, NULL), want, 1e-6 * want);
        cf_exec_free(e);
        cf_model_free(m);
    }
}

/* An input read in place from the caller's memory gives what a copy gives, in
 * forward and backward, leaves that memory as it was, and can be handed back. */
TEST(input_in_place)
{
    cf_model *m = small_mlp();
    CHECK(cf_model_init_params(m) == 0);
    cf_exec *e = cf_bind(m, 8, CF_TRAIN | CF_INPUT_GRADS);
    CHECK(e != NULL);
    if (!e) return;
    float mine[48], keep[48], labels[8];
    for (int i = 0; i < 48; i++) keep[i] = mine[i] = frand();
    for (int i = 0; i < 8; i++) labels[i] = (float)(i % 3);
    size_t nx, ny;
    float *own = cf_exec_input(e, 0, &nx);
    memcpy(own, mine, sizeof mine);
    memcpy(cf_exec_input(e, 1, &ny), labels, sizeof labels);
    CHECK(nx == 48 && ny == 8);
    CHECK(cf_forward(e, 1) == 0 && cf_backward(e) == 0);
    float want[24], gwant[48];
    memcpy(want, cf_exec_output(e, 0, NULL), sizeof want);
    memcpy(gwant, cf_exec_input_grad(e, 0, NULL), sizeof gwant);
    memset(own, 0, sizeof mine);                     /* the copy is no longer read */
    CHECK(cf_exec_set_input(e, 0, mine) == 0);
    CHECK(cf_exec_input(e, 0, NULL) == mine);
    CHECK(cf_forward(e, 1) == 0 && cf_backward(e) == 0);
    CHECK(memcmp(cf_exec_output(e, 0, NULL), want, sizeof want) == 0);
    CHECK(memcmp(cf_exec_input_grad(e, 0, NULL), gwant, sizeof gwant) == 0);
    CHECK(memcmp(mine, keep, sizeof mine) == 0);     /* never written */
    CHECK(cf_exec_set_input(e, 0, NULL) == 0);       /* back to the executor's buffer */
    CHECK(cf_exec_input(e, 0, NULL) == own);
    CHECK(cf_forward(e, 1) == 0);
    CHECK(memcmp(cf_exec_output(e, 0, NULL), want, sizeof want) != 0);   /* it reads the zeros */
    CHECK(cf_exec_set_input(e, 2, mine) != 0 && strstr(cf_last_error(), "input 2 of an executor with 2 inputs"));
    CHECK(cf_exec_set_input(NULL, 0, mine) != 0);
    cf_exec_free(e);
    cf_model_free(m);
}

/* x (300) -> b + x W (bias on the left) -> relu -> x W2 + b2 -> relu, a second output
 * reading the first product when tap is 1; when tap is 2, the second bias is tanh(b2),
 * computed after its product. 300 inputs cross the GEMM's K blocks. */
static cf_model *chain_model(int tap)
{
    cf_model *m = cf_model_new();
    cf_model_set_seed(m, 7);
    cf_node *x = cf_input(m, "x", CF_SHAPE(300));
    cf_node *W = cf_param(m, "W", CF_SHAPE(300, 40), CF_GLOROT), *b = cf_param(m, "b", CF_SHAPE(1, 40), CF_NORMAL(0.5f));
    cf_node *W2 = cf_param(m, "W2", CF_SHAPE(40, 17), CF_GLOROT), *b2 = cf_param(m, "b2", CF_SHAPE(17), CF_NORMAL(0.5f));
    cf_node *p = cf_matmul(m, x, W);
    cf_node *h = cf_relu(m, cf_add(m, b, p));
    cf_node *p2 = cf_matmul(m, h, W2);
    cf_output(m, cf_relu(m, cf_add(m, p2, tap == 2 ? cf_tanh(m, b2) : b2)));
    if (tap == 1) cf_output(m, p);
    return m;
}

/* Running x W + b -> relu as one product with an epilogue (the executor's fusion) gives
 * bitwise what the separate ops give, forward and backward, at 1 and 2 threads, with
 * the bias on either side; it shares one buffer (a smaller arena), and it is not done
 * where another op reads the product. CFLUX_NANTRAP turns fusion off: the reference. */
TEST(fused_bias_relu_equals_separate_ops)
{
    for (int tap = 0; tap < 3; tap++)
        for (int threads = 1; threads <= 2; threads++) {
            cf_set_threads(threads);
            float out[2][70 * 17], grad[2][300 * 40], gx[2][70 * 300];
            size_t arena[2];
            for (int fused = 0; fused < 2; fused++) {
                if (!fused) setenv("CFLUX_NANTRAP", "1", 1);
                cf_model *m = chain_model(tap);
                CHECK(cf_model_init_params(m) == 0);
                cf_exec *inf = cf_bind(m, 70, 0);
                cf_exec *e = cf_bind(m, 70, CF_INPUT_GRADS);
                unsetenv("CFLUX_NANTRAP");
                CHECK(inf && e);
                if (!inf || !e) return;
                arena[fused] = cf_exec_arena_bytes(inf, NULL);
                srand(5);
                float *x = cf_exec_input(e, 0, NULL);
                for (int i = 0; i < 70 * 300; i++) x[i] = frand();
                memcpy(cf_exec_input(inf, 0, NULL), x, 70 * 300 * sizeof *x);
                float *head = cf_exec_output_grad(e, 0, NULL);
                for (int i = 0; i < 70 * 17; i++) head[i] = frand();
                CHECK(cf_forward(inf, 0) == 0 && cf_forward(e, 1) == 0 && cf_backward(e) == 0);
                memcpy(out[fused], cf_exec_output(inf, 0, NULL), sizeof out[0]);
                CHECK(memcmp(out[fused], cf_exec_output(e, 0, NULL), sizeof out[0]) == 0);
                memcpy(grad[fused], cf_model_param_grad(m, cf_model_param_index(m, "W")), sizeof grad[0]);
                memcpy(gx[fused], cf_exec_input_grad(e, 0, NULL), sizeof gx[0]);
                cf_exec_free(inf);
                cf_exec_free(e);
                cf_model_free(m);
            }
            CHECK(memcmp(out[0], out[1], sizeof out[0]) == 0);
            CHECK(memcmp(grad[0], grad[1], sizeof grad[0]) == 0);
            CHECK(memcmp(gx[0], gx[1], sizeof gx[0]) == 0);
            int zeros = 0;   /* relu did cut: the comparison covers both sides of it */
            for (int i = 0; i < 70 * 17; i++) zeros += out[1][i] == 0;
            CHECK(zeros > 50 && zeros < 70 * 17 - 50);
            /* fused, the chains' values share buffers; with a tap or a late bias, only
               one chain fuses, and the arena is no larger */
            CHECK(tap ? arena[1] <= arena[0] : arena[1] < arena[0]);
        }
    cf_set_threads(0);
}

/* The notation's Affine makes its bias after its product (x * W + b, b a parameter
 * made at its first use): the chain fuses all the same, giving the separate ops' bits
 * forward and backward in a smaller arena. */
TEST(notation_affine_relu_fuses)
{
    static const char *src = "model = Chain(Input(300), Affine(40), relu, Affine(17), relu)\n";
    float out[2][70 * 17], gx[2][70 * 300];
    size_t arena[2];
    for (int fused = 0; fused < 2; fused++) {
        if (!fused) setenv("CFLUX_NANTRAP", "1", 1);
        cf_model *m = cf_model_parse(src, "mlp.flux");
        cf_exec *inf = m && cf_model_init_params(m) == 0 ? cf_bind(m, 70, 0) : NULL;
        cf_exec *e = inf ? cf_bind(m, 70, CF_INPUT_GRADS) : NULL;
        unsetenv("CFLUX_NANTRAP");
        CHECK(inf && e);
        if (!inf || !e) {
            cf_exec_free(inf);
            cf_model_free(m);
            return;
        }
        arena[fused] = cf_exec_arena_bytes(inf, NULL);
        srand(5);
        float *x = cf_exec_input(e, 0, NULL), *head = cf_exec_output_grad(e, 0, NULL);
        for (int i = 0; i < 70 * 300; i++) x[i] = frand();
        for (int i = 0; i < 70 * 17; i++) head[i] = frand();
        memcpy(cf_exec_input(inf, 0, NULL), x, 70 * 300 * sizeof *x);
        CHECK(cf_forward(inf, 0) == 0 && cf_forward(e, 1) == 0 && cf_backward(e) == 0);
        memcpy(out[fused], cf_exec_output(inf, 0, NULL), sizeof out[0]);
        memcpy(gx[fused], cf_exec_input_grad(e, 0, NULL), sizeof gx[0]);
        cf_exec_free(inf);
        cf_exec_free(e);
        cf_model_free(m);
    }
    CHECK(memcmp(out[0], out[1], sizeof out[0]) == 0);
    CHECK(memcmp(gx[0], gx[1], sizeof gx[0]) == 0);
    if (arena[1] >= arena[0]) fprintf(stderr, "  arena %zu fused, %zu not\n", arena[1], arena[0]);
    CHECK(arena[1] < arena[0]);
}

/* The same rule through the notation: an Affine's pre-activation z read by relu and by
 * something else (y = relu(z) + z .* 0.5) must not have relu fused into its product,
 * which would leave relu(z) in the buffer the other reader shares. y and the
 * gradients of sum(y r) for x, W and b against the definition in double. */
TEST(no_fusion_where_the_sum_has_another_reader)
{
    enum { B = 9, IN = 7, OUT = 5 };
    static const char *src = "net Tap(in, out) {\n"
                             "  a = Affine(in, out)\n"
                             "  x -> {\n"
                             "    z = a(x)\n"
                             "    relu(z) + z .* 0.5\n"
                             "  }\n"
                             "}\n"
                             "model = Chain(Input(7), Tap(7, 5))\n";
    cf_model *m = cf_model_parse(src, "tap.flux");
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "%s\n", cf_last_error());
        return;
    }
    cf_model_set_seed(m, 3);
    cf_exec *e = cf_model_init_params(m) == 0 ? cf_bind(m, B, CF_INPUT_GRADS) : NULL;
    CHECK(e != NULL);
    int iw = cf_model_param_index(m, "1.a.W"), ib = cf_model_param_index(m, "1.a.b");
    CHECK(iw >= 0 && ib >= 0);
    if (!e || iw < 0 || ib < 0) {
        cf_exec_free(e);
        cf_model_free(m);
        return;
    }
    srand(17);
    float *W = cf_model_param_data(m, iw), *b = cf_model_param_data(m, ib), *x = cf_exec_input(e, 0, NULL);
    float *r = cf_exec_output_grad(e, 0, NULL);
    for (int j = 0; j < OUT; j++) b[j] = frand();
    for (int i = 0; i < B * IN; i++) x[i] = frand();
    for (int i = 0; i < B * OUT; i++) r[i] = frand();
    cf_model_zero_grad(m);
    CHECK(cf_forward(e, 1) == 0 && cf_backward(e) == 0);
    const float *y = cf_exec_output(e, 0, NULL), *gx = cf_exec_input_grad(e, 0, NULL);
    const float *gW = cf_model_param_grad(m, iw), *gb = cf_model_param_grad(m, ib);
    double dx[B * IN] = {0}, dW[IN * OUT] = {0}, db[OUT] = {0};
    int bad = 0, negative = 0;
    for (int s = 0; s < B; s++)
        for (int j = 0; j < OUT; j++) {
            double z = b[j];
            for (int k = 0; k < IN; k++) z += (double)x[s * IN + k] * W[k * OUT + j];
            double want = (z > 0 ? z : 0) + 0.5 * z, dz = r[s * OUT + j] * ((z > 0) + 0.5);
            negative += z < 0;
            bad += !(fabs(y[s * OUT + j] - want) <= 1e-5 * (fabs(want) + 1));
            db[j] += dz;
            for (int k = 0; k < IN; k++) {
                dW[k * OUT + j] += x[s * IN + k] * dz;
                dx[s * IN + k] += W[k * OUT + j] * dz;
            }
        }
    if (bad) fprintf(stderr, "  y: %d of %d differ (%d pre-activations negative)\n", bad, B * OUT, negative);
    CHECK(bad == 0);
    CHECK(negative > 5 && negative < B * OUT - 5);   /* relu cuts: both sides are compared */
    bad = 0;
    for (int i = 0; i < B * IN; i++) bad += !(fabs(gx[i] - dx[i]) <= 1e-5 * (fabs(dx[i]) + 1));
    for (int i = 0; i < IN * OUT; i++) bad += !(fabs(gW[i] - dW[i]) <= 1e-5 * (fabs(dW[i]) + 1));
    for (int i = 0; i < OUT; i++) bad += !(fabs(gb[i] - db[i]) <= 1e-5 * (fabs(db[i]) + 1));
    if (bad) fprintf(stderr, "  gradients: %d of %d differ\n", bad, B * IN + IN * OUT + OUT);
    CHECK(bad == 0);
    cf_exec_free(e);
    cf_model_free(m);
}

int main(void)
{
    RUN(views_share_memory);
    RUN(shape_error_names_op_shapes_and_line);
    RUN(deep_traces_fold);
    RUN(conv2d_shape_errors);
    RUN(broadcast_error_and_batch_rules);
    RUN(build_errors_are_kept_for_bind);
    RUN(bad_label_is_an_error_not_a_crash);
    RUN(batch_of_64_equals_64_single_calls);
    RUN(executors_share_parameters);
    RUN(grad_requests);
    RUN(update_zeroes_gradients);
    RUN(head_gradients_and_input_gradients);
    RUN(memory_plan_reuses_buffers);
    RUN(seed_decides_initialisation);
    RUN(nan_trap_names_the_op);
    RUN(same_seed_same_bits);
    RUN(cross_entropy_of_large_logits);
    RUN(input_in_place);
    RUN(fused_bias_relu_equals_separate_ops);
    RUN(notation_affine_relu_fuses);
    RUN(no_fusion_where_the_sum_has_another_reader);
    return test_summary("exec");
}
