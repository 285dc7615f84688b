/* test_golden_label_smoothing.c - cross-entropy with label smoothing against PyTorch's
 * CrossEntropyLoss(label_smoothing = X) (tests/golden/gen_label_smoothing.py): the loss
 * and its gradient with respect to the logits, for K = 5 and 10 classes, X = 0.1 and
 * 0.3, a sequence (B, T, K) and target probabilities; in training (cf_forward(e, 1)),
 * while evaluation gives the plain cross-entropy. Each case runs twice: fused with
 * the softmax (the loss from the logits, its gradient p - t'), and on probabilities
 * that do not come straight from a softmax (exp(logsoftmax(z))), whose gradient flows
 * back through them. */
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/safetensors.h"
#include "golden.h"
#include "test.h"

#define GOLDEN "tests/golden/label_smoothing_golden.safetensors"

/* The table of gen_label_smoothing.py: the logits' shape (B first), X, soft targets */
static const struct {
    const char *name;
    int rank, d[3];
    float x;
    int soft;
} cases[] = {
    {"k5x01", 2, {7, 5}, 0.1f, 0},  {"k5x03", 2, {7, 5}, 0.3f, 0}, {"k10x01", 2, {6, 10}, 0.1f, 0},
    {"k10x03", 2, {6, 10}, 0.3f, 0}, {"seq", 3, {3, 4, 5}, 0.2f, 0}, {"soft", 2, {5, 5}, 0.3f, 1},
};

static const cf_st_tensor *gold_of(const cf_st_file *gold, const char *name, const char *what)
{
    char key[64];
    snprintf(key, sizeof key, "%s.%s", name, what);
    return cf_st_find(gold, key);
}

/* Case c with the loss fused with its softmax, or on exp(logsoftmax(z)). */
static void run_case(const cf_st_file *gold, int c, int fused)
{
    const char *name = cases[c].name;
    int B = cases[c].d[0], K = cases[c].d[cases[c].rank - 1];
    cf_shape zs = {cases[c].rank - 1, {cases[c].d[1], cases[c].d[2]}}, ys = zs;
    if (!cases[c].soft) ys.rank--;   /* class indices: the logits' shape less the classes */
    cf_model *m = cf_model_new();
    cf_node *z = cf_input(m, "z", zs), *y = cf_input(m, "y", ys);
    cf_node *p = fused ? cf_softmax(m, z)
                       : cf_unary_at(m, CF_OP_EXP, cf_unary_at(m, CF_OP_LOGSOFTMAX, z, 0, __FILE__, __LINE__, 0), 0,
                                     __FILE__, __LINE__, 0);
    cf_node *loss = cf_op_at(m, CF_OP_XENT, 2, (cf_node *const[]){p, y}, NULL, 0, (const float[]){cases[c].x}, 1,
                             __FILE__, __LINE__, 0);
    CHECK(cf_output(m, p) == 0 && cf_output(m, loss) == 1);
    cf_exec *e = cf_bind(m, B, CF_INPUT_GRADS);
    CHECK(e != NULL);
    if (!e) {
        fprintf(stderr, "%s: %s\n", name, cf_last_error());
        cf_model_free(m);
        return;
    }
    const cf_st_tensor *zg = gold_of(gold, name, "z"), *yg = gold_of(gold, name, "y");
    size_t nz, ny;
    float *zin = cf_exec_input(e, 0, &nz), *yin = cf_exec_input(e, 1, &ny);
    CHECK(zg && yg && zg->count == nz && yg->count == ny && nz % (size_t)K == 0);
    if (!zg || !yg || zg->count != nz || yg->count != ny) goto out;
    memcpy(zin, zg->data, nz * sizeof *zin);
    memcpy(yin, yg->data, ny * sizeof *yin);
    char what[64];
    CHECK(cf_forward(e, 1) == 0);
    snprintf(what, sizeof what, "%s.loss (%s)", name, fused ? "fused" : "on p");
    CHECK(golden_compare(what, cf_exec_output(e, 1, NULL), gold_of(gold, name, "loss"), 1, 1e-5, 1e-6) == 0);
    CHECK(cf_backward(e) == 0);
    snprintf(what, sizeof what, "%s.dz (%s)", name, fused ? "fused" : "on p");
    CHECK(golden_compare(what, cf_exec_input_grad(e, 0, NULL), gold_of(gold, name, "dz"), nz, 1e-4, 1e-6) == 0);
    CHECK(cf_forward(e, 0) == 0);   /* evaluation: no smoothing */
    snprintf(what, sizeof what, "%s.plain (%s)", name, fused ? "fused" : "on p");
    CHECK(golden_compare(what, cf_exec_output(e, 1, NULL), gold_of(gold, name, "plain"), 1, 1e-5, 1e-6) == 0);
out:
    cf_exec_free(e);
    cf_model_free(m);
}

TEST(golden_fused_and_on_probabilities)
{
    cf_st_file *gold = golden_open(GOLDEN);
    CHECK(gold != NULL);
    if (!gold) return;
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        run_case(gold, c, 1);
        run_case(gold, c, 0);
    }
    cf_st_free(gold);
}

/* The comparison can fail: the smoothed loss is not the plain one, and a planted
 * error in one gradient element is reported. */
TEST(golden_compare_fails_on_a_wrong_value)
{
    cf_st_file *gold = golden_open(GOLDEN);
    CHECK(gold != NULL);
    if (!gold) return;
    const cf_st_tensor *a = cf_st_find(gold, "k5x03.loss"), *b = cf_st_find(gold, "k5x03.plain");
    CHECK(a && b && golden_compare("smoothed against plain", a->data, b, 1, 1e-5, 1e-6) == 1);
    const cf_st_tensor *t = cf_st_find(gold, "k10x01.dz");
    CHECK(t != NULL && golden_catches_a_planted_error(t, 7, 1e-4, 1e-6));
    cf_st_free(gold);
}

int main(void)
{
    RUN(golden_fused_and_on_probabilities);
    RUN(golden_compare_fails_on_a_wrong_value);
    return test_summary("golden_label_smoothing");
}
