/* test_opcontract.c - what the executor gives an op beyond its inputs: the `aux`
 * floats its forward saves for its backward, `ws` scratch in each step, and the run
 * context (training or evaluation, the step, a random key). A planted op, softplus
 * computed through all three, must give bitwise what the real softplus gives, in a
 * chain long enough that buffers are reused, with its scratch filled with NaN. And
 * the builders that read the table: cf_op_at, and cf_call with its numbers. */
#include <math.h>
#include <string.h>

#include "core/graph.h"
#include "core/rng.h"
#include "ops/op.h"
#include "test.h"

static int seen_train = -1;
static long seen_step = -1;
static uint64_t seen_key;

static size_t count(const cf_inst *k) { return cf_shape_count_b(k->ys, 1); }

static size_t planted_aux(const cf_inst *k) { return count(k); }
static size_t planted_ws(const cf_inst *k) { return 2 * count(k); }

/* y = softplus(x); aux = sigmoid(x), which backward needs; ws is trampled. */
static int planted_forward(const cf_inst *k)
{
    size_t n = count(k);
    const float *x = k->x[0];
    for (size_t i = 0; i < 2 * n; i++) k->ws[i] = NAN;
    for (size_t i = 0; i < n; i++) {
        k->y[i] = fmaxf(x[i], 0) + log1pf(expf(-fabsf(x[i])));
        k->aux[i] = 1.0f / (1.0f + expf(-x[i]));
    }
    seen_train = k->ctx->train;
    seen_step = k->ctx->step;
    seen_key = k->ctx->key;
    return 0;
}

/* dx = dy * sigmoid(x), from aux alone (x is not read). */
static void planted_backward(const cf_inst *k)
{
    size_t n = count(k);
    for (size_t i = 0; i < 2 * n; i++) k->ws[i] = NAN;
    for (size_t i = 0; i < n; i++) {
        float g = k->dy[i] / (1.0f + expf(-k->x[0][i]));   /* what the real op computes */
        float h = k->dy[i] * k->aux[i];
        k->dx[0][i] = k->acc[0] ? k->dx[0][i] + g : g;
        if (h != k->dy[i] * (1.0f / (1.0f + expf(-k->x[0][i])))) k->dx[0][i] = NAN;   /* aux was lost */
    }
}

static cf_model *chain(void)
{
    cf_model *m = cf_model_new();
    cf_model_set_seed(m, 3);
    cf_node *x = cf_input(m, "x", CF_SHAPE(37));
    cf_node *w = cf_param(m, "w", CF_SHAPE(37), CF_UNIFORM(1.0f));
    cf_node *h = cf_mul(m, x, w);
    for (int i = 0; i < 6; i++) h = cf_softplus(m, cf_mul(m, h, w));
    cf_output(m, h);
    return m;
}

/* Output and w's gradient of the chain, with softplus as it is in the table. */
static void run(float *out, float *grad, int train, long *step)
{
    cf_model *m = chain();
    CHECK(cf_model_init_params(m) == 0);
    cf_exec *e = cf_bind(m, 5, CF_TRAIN);
    CHECK(e != NULL);
    if (!e) return;
    float *x = cf_exec_input(e, 0, NULL);
    for (int i = 0; i < 5 * 37; i++) x[i] = (float)((i * 37) % 23) / 7.0f - 1.5f;
    float *head = cf_exec_output_grad(e, 0, NULL);
    for (int i = 0; i < 5 * 37; i++) head[i] = (float)(i % 5) - 2.0f;
    for (int r = 0; r < 3; r++) CHECK(cf_forward(e, train) == 0);
    CHECK(cf_backward(e) == 0);
    memcpy(out, cf_exec_output(e, 0, NULL), 5 * 37 * sizeof *out);
    memcpy(grad, cf_model_param_grad(m, 0), 37 * sizeof *grad);
    *step = 3;
    cf_exec_free(e);
    cf_model_free(m);
}

TEST(aux_workspace_and_context_reach_the_op)
{
    static const cf_opdef *real;
    real = cf_ops[CF_OP_SOFTPLUS];
    cf_opdef planted = *real;
    planted.aux = planted_aux;
    planted.workspace = planted_ws;
    planted.forward = planted_forward;
    planted.backward = planted_backward;
    float want[5 * 37], wgrad[37], got[5 * 37], ggrad[37];
    long steps;
    run(want, wgrad, 1, &steps);
    cf_ops[CF_OP_SOFTPLUS] = &planted;
    run(got, ggrad, 1, &steps);
    CHECK(seen_train == 1 && seen_step == 3);
    uint64_t key3 = seen_key;
    run(got, ggrad, 1, &steps);
    CHECK(seen_key == key3);   /* same seed, same step: the same random key */
    run(got, ggrad, 0, &steps);
    CHECK(seen_train == 0);
    cf_ops[CF_OP_SOFTPLUS] = real;
    CHECK(memcmp(want, got, sizeof want) == 0);
    CHECK(memcmp(wgrad, ggrad, sizeof wgrad) == 0);
    for (int i = 0; i < 37; i++) CHECK(!isnan(ggrad[i]));
}

/* The counter-based stream: one number per (key, index), whatever the order. */
TEST(random_numbers_by_index)
{
    float a[1000], b[1000];
    for (int i = 0; i < 1000; i++) a[i] = cf_rng_at(42, (uint64_t)i);
    for (int i = 999; i >= 0; i--) b[i] = cf_rng_at(42, (uint64_t)i);
    CHECK(memcmp(a, b, sizeof a) == 0);
    double mean = 0;
    int differ = 0;
    for (int i = 0; i < 1000; i++) {
        CHECK(a[i] >= 0 && a[i] < 1);
        mean += a[i] / 1000;
        differ += cf_rng_at(43, (uint64_t)i) != a[i];
    }
    CHECK(fabs(mean - 0.5) < 0.05 && differ > 990);
}

/* cf_op_at makes any op from its code, checking the input count against the table
 * and refusing leaves and ops with constructors of their own. */
TEST(op_at_checks_against_the_table)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(3)), *w = cf_param(m, "w", CF_SHAPE(3), CF_ZEROS);
    cf_node *two[2] = {x, w};
    float slope = 0.25f;
    cf_node *n = cf_op_at(m, CF_OP_LEAKYRELU, 1, &x, NULL, 0, &slope, 1, "f.c", 7, 0);
    CHECK(n != NULL && n->attr.f[0] == 0.25f);
    CHECK(cf_op_at(m, CF_OP_ADD, 2, two, NULL, 0, NULL, 0, "f.c", 8, 0) != NULL);
    cf_model_free(m);
    m = cf_model_new();
    x = cf_input(m, "x", CF_SHAPE(3));
    cf_node *xs[2] = {x, x};
    CHECK(cf_op_at(m, CF_OP_RELU, 2, xs, NULL, 0, NULL, 0, "f.c", 9, 0) == NULL);
    CHECK(strstr(cf_last_error(), "relu takes 1 input, not 2") && strstr(cf_last_error(), "f.c:9"));
    CHECK(cf_op_at(m, CF_OP_RESHAPE, 1, &x, NULL, 0, NULL, 0, "f.c", 10, 0) == NULL);
    CHECK(cf_op_at(m, CF_OP_PARAM, 1, &x, NULL, 0, NULL, 0, "f.c", 11, 0) == NULL);
    CHECK(cf_op_at(m, CF_OP_RELU, 1, &x, NULL, 17, NULL, 0, "f.c", 12, 0) == NULL);
    CHECK(cf_op_at(m, (cf_opcode)999, 1, &x, NULL, 0, NULL, 0, "f.c", 13, 0) == NULL);
    cf_model_free(m);
}

/* cf_call makes a function of the notation from its code and the numbers after the
 * value, decoded by the op's row: defaults for those left out, a required one
 * missing, a fraction for a whole number, a number too many, an op that is no such
 * function. A planted row declares a whole number k (required) before a slope. */
TEST(call_takes_the_numbers_its_row_declares)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(3));
    cf_node *n = cf_call(m, CF_OP_RELU, x);
    CHECK(n && n->op == CF_OP_RELU && n->in[0] == x);
    n = cf_call(m, CF_OP_LEAKYRELU, x);
    CHECK(n && n->attr.f[0] == 0.01f);   /* the row's default */
    n = cf_call(m, CF_OP_LEAKYRELU, x, 0.2);
    CHECK(n && n->attr.f[0] == 0.2f);
    int line = __LINE__ + 1;
    CHECK(cf_call(m, CF_OP_LEAKYRELU, x, 0.2, 3) == NULL);
    CHECK_HAS(cf_last_error(), "leakyrelu takes a value and at most 1 number, not 2");
    char at[64];
    snprintf(at, sizeof at, "test_opcontract.c:%d", line);
    CHECK_HAS(cf_last_error(), at);
    cf_model_free(m);
    m = cf_model_new();
    x = cf_input(m, "x", CF_SHAPE(3));
    CHECK(cf_call(m, CF_OP_MATMUL, x) == NULL);
    CHECK_HAS(cf_last_error(), "is not a function of one value");
    cf_model_free(m);

    const cf_opdef *real = cf_ops[CF_OP_LEAKYRELU];
    cf_opdef planted = *real;
    planted.attrs[0] = (cf_attrdef){.name = "k", .kind = 'i', .slot = 1, .def = NAN};
    planted.attrs[1] = (cf_attrdef){.name = "slope", .kind = 'f', .slot = 0, .def = 0.5f};
    cf_ops[CF_OP_LEAKYRELU] = &planted;
    m = cf_model_new();
    x = cf_input(m, "x", CF_SHAPE(3));
    n = cf_call(m, CF_OP_LEAKYRELU, x, 3);
    CHECK(n && n->attr.i[1] == 3 && n->attr.f[0] == 0.5f);
    n = cf_call(m, CF_OP_LEAKYRELU, x, -4, 0.125);
    CHECK(n && n->attr.i[1] == -4 && n->attr.f[0] == 0.125f);
    cf_model_free(m);
    m = cf_model_new();
    x = cf_input(m, "x", CF_SHAPE(3));
    CHECK(cf_call(m, CF_OP_LEAKYRELU, x) == NULL);
    CHECK_HAS(cf_last_error(), "leakyrelu needs its k (number 1 after the value)");
    cf_model_free(m);
    m = cf_model_new();
    x = cf_input(m, "x", CF_SHAPE(3));
    CHECK(cf_call(m, CF_OP_LEAKYRELU, x, 2.5) == NULL);
    CHECK_HAS(cf_last_error(), "the k of leakyrelu must be a whole number, not 2.5");
    cf_model_free(m);
    cf_ops[CF_OP_LEAKYRELU] = real;
}

int main(void)
{
    RUN(aux_workspace_and_context_reach_the_op);
    RUN(random_numbers_by_index);
    RUN(op_at_checks_against_the_table);
    RUN(call_takes_the_numbers_its_row_declares);
    return test_summary("opcontract");
}
