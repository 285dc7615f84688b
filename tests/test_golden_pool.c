/* test_golden_pool.c - maxpool, avgpool and globalavgpool against PyTorch: outputs
 * and the gradients of sum(y * r) for odd sizes, strides other than the kernel, with
 * and without padding, and windows whose maximum is tied (the first one wins).
 * Fixtures: tests/golden/pool_golden.safetensors, made by tests/golden/gen_pool.py.
 * With 1 and 2 threads; forward and backward run twice, so that a backward that
 * adds where it should overwrite is seen. */
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/safetensors.h"
#include "golden.h"
#include "ops/op.h"
#include "test.h"

#define GOLDEN "tests/golden/pool_golden.safetensors"

typedef struct pcase {
    const char *name;
    cf_opcode op;
    int a[6];      /* kernel h, w, stride h, w, padding h, w */
    const char *x; /* the input's name in the fixture */
} pcase;

static const pcase cases[] = {
    {"max_k3s2", CF_OP_MAXPOOL, {3, 3, 2, 2, 0, 0}, "x"},
    {"max_k32s21p11", CF_OP_MAXPOOL, {3, 2, 2, 1, 1, 1}, "x"},
    {"avg_k3s2", CF_OP_AVGPOOL, {3, 3, 2, 2, 0, 0}, "x"},
    {"avg_k3s2p1", CF_OP_AVGPOOL, {3, 3, 2, 2, 1, 1}, "x"},
    {"avg_k23s12p11", CF_OP_AVGPOOL, {2, 3, 1, 2, 1, 1}, "x"},
    {"gap", CF_OP_GLOBALAVGPOOL, {0}, "x"},
    {"ties", CF_OP_MAXPOOL, {3, 3, 2, 2, 1, 1}, "ties.x"},
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

static int compare(const char *what, const float *got, const cf_st_tensor *want, size_t n)
{
    return golden_compare(what, got, want, n, 1e-5, 1e-7);
}

/* One case through bind, forward and backward; returns the mismatching elements of
 * y and dx (or 1000 when something failed). */
static int run_case(const cf_st_file *gold, const pcase *c)
{
    char name[64];
    const cf_st_tensor *x = cf_st_find(gold, c->x);
    snprintf(name, sizeof name, "%s.r", c->name);
    const cf_st_tensor *r = cf_st_find(gold, name);
    if (!x || x->rank != 4 || !r) {
        fprintf(stderr, "%s: input or head gradient missing from the fixture\n", c->name);
        return 1000;
    }
    cf_model *m = cf_model_new();
    cf_node *in = cf_input(m, "x", CF_SHAPE((int)x->shape[1], (int)x->shape[2], (int)x->shape[3]));
    cf_output(m, c->op == CF_OP_GLOBALAVGPOOL ? cf_globalavgpool(m, in)
                                              : cf_op_at(m, c->op, 1, &in, c->a, 6, NULL, 0, __FILE__, __LINE__, 0));
    cf_exec *e = cf_bind(m, (int)x->shape[0], CF_INPUT_GRADS);
    int bad = 1000;
    if (!e) {
        fprintf(stderr, "%s: %s\n", c->name, cf_last_error());
        goto out;
    }
    size_t nx, ny;
    memcpy(cf_exec_input(e, 0, &nx), x->data, x->count * sizeof(float));
    float *head = cf_exec_output_grad(e, 0, &ny);
    if (nx != x->count || ny != r->count) {
        fprintf(stderr, "%s: %zu inputs, %zu outputs; the fixture has %zu, %zu\n", c->name, nx, ny, x->count,
                r->count);
        goto out;
    }
    memcpy(head, r->data, r->count * sizeof(float));
    for (int round = 0; round < 2; round++)
        if (cf_forward(e, 1) || cf_backward(e)) {
            fprintf(stderr, "%s: %s\n", c->name, cf_last_error());
            goto out;
        }
    snprintf(name, sizeof name, "%s.y", c->name);
    bad = compare(name, cf_exec_output(e, 0, NULL), cf_st_find(gold, name), ny);
    snprintf(name, sizeof name, "%s.dx", c->name);
    bad += compare(name, cf_exec_input_grad(e, 0, NULL), cf_st_find(gold, name), nx);
out:
    cf_exec_free(e);
    cf_model_free(m);
    return bad;
}

TEST(pooling_matches_pytorch)
{
    cf_st_file *gold = golden_open(GOLDEN);
    CHECK(gold != NULL);
    if (!gold) return;
    for (int threads = 1; threads <= 2; threads++) {
        cf_set_threads(threads);
        for (int i = 0; i < NCASES; i++) {
            int bad = run_case(gold, &cases[i]);
            if (bad) fprintf(stderr, "  %s, %d thread(s): %d mismatches\n", cases[i].name, threads, bad);
            CHECK(bad == 0);
        }
    }
    cf_set_threads(0);
    cf_st_free(gold);
}

/* The comparison must be able to fail: an avgpool whose first output is off by
 * 3e-5 of itself, three times the tolerance, is reported, in that element only. */
static const cf_opdef *real_avg;
static int planted_forward(const cf_inst *k)
{
    int rc = real_avg->forward(k);
    k->y[0] *= 1.00003f;
    return rc;
}

TEST(comparison_fails_on_a_planted_error)
{
    cf_st_file *gold = cf_st_read(GOLDEN);
    CHECK(gold != NULL);
    if (!gold) return;
    real_avg = cf_ops[CF_OP_AVGPOOL];
    cf_opdef planted = *real_avg;
    planted.forward = planted_forward;
    cf_ops[CF_OP_AVGPOOL] = &planted;
    CHECK(run_case(gold, &cases[3]) == 1);
    cf_ops[CF_OP_AVGPOOL] = real_avg;
    CHECK(run_case(gold, &cases[3]) == 0);
    /* and the padding convention shows: avgpool with padding is not avgpool without */
    pcase nopad = cases[3];
    nopad.a[4] = nopad.a[5] = 0;
    CHECK(run_case(gold, &nopad) > 0);
    cf_st_free(gold);
}

int main(void)
{
    RUN(pooling_matches_pytorch);
    RUN(comparison_fails_on_a_planted_error);
    return test_summary("golden_pool");
}
