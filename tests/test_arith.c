/* test_arith.c - a + b, a - b, a .* b and a ./ b (ops/arith.c) on operands long enough
 * for the threads to share out each row in pieces: one shape on both sides (one row
 * of every element), a row broadcast over a batch of two, and a column broadcast (one
 * number a row). The output and both gradients against a reference computed here, at
 * 1 and 2 threads, and the same bits at both. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "test.h"

enum { B = 2 };

static const cf_opcode ops[4] = {CF_OP_ADD, CF_OP_SUB, CF_OP_MUL, CF_OP_DIV};

/* The operands: a (B, ...as) and b, an input (B, ...bs) or, when param, a parameter bs. */
typedef struct {
    const char *name;
    cf_shape as, bs;
    int param;
} operands;

static const operands cases[] = {
    {"same shape", {3, {3, 50, 50}}, {3, {3, 50, 50}}, 0},
    {"row broadcast", {1, {20000}}, {1, {20000}}, 1},
    {"column broadcast", {2, {3, 9000}}, {2, {3, 1}}, 0},
};

/* What one run gives: y, da, db (malloc'd). */
typedef struct {
    float *v[3];
    size_t n[3];
} result;

/* a's values and the head's in [-2, 2), b's in [0.5, 4.5): never 0, for the division */
static float value(size_t i, int which)
{
    float v = (float)((i * 37 + (size_t)which * 11) % 101) / 25.0f;
    return which == 1 ? v + 0.5f : v - 2.0f;
}

static float *copy(const float *p, size_t n)
{
    float *q = malloc(n * sizeof *q);
    if (q) memcpy(q, p, n * sizeof *q);
    return q;
}

/* y = a op b, and the gradients of sum(y * r), r[i] = value(i, 2). 0 or -1. */
static int run(const operands *c, cf_opcode op, result *r)
{
    cf_model *m = cf_model_new();
    cf_node *a = cf_input(m, "a", c->as);
    cf_node *b = c->param ? cf_param(m, "b", c->bs, CF_ZEROS) : cf_input(m, "b", c->bs);
    cf_output(m, cf_op_at(m, op, 2, (cf_node *const[]){a, b}, NULL, 0, NULL, 0, __FILE__, __LINE__, 0));
    cf_exec *e = cf_bind(m, B, CF_INPUT_GRADS);
    if (!e) {
        fprintf(stderr, "%s: %s\n", c->name, cf_last_error());
        cf_model_free(m);
        return -1;
    }
    size_t na, nb, ny;
    float *xa = cf_exec_input(e, 0, &na);
    float *xb = c->param ? cf_model_param_data(m, 0) : cf_exec_input(e, 1, &nb);
    if (c->param) nb = cf_shape_count(c->bs);
    for (size_t i = 0; i < na; i++) xa[i] = value(i, 0);
    for (size_t i = 0; i < nb; i++) xb[i] = value(i, 1);
    int rc = cf_forward(e, 1);
    const float *y = cf_exec_output(e, 0, &ny);
    float *head = cf_exec_output_grad(e, 0, NULL);
    for (size_t i = 0; i < ny; i++) head[i] = value(i, 2);
    cf_model_zero_grad(m);
    rc = rc || cf_backward(e);
    const float *db = c->param ? cf_model_param_grad(m, 0) : cf_exec_input_grad(e, 1, NULL);
    *r = (result){{copy(y, ny), copy(cf_exec_input_grad(e, 0, NULL), na), copy(db, nb)}, {ny, na, nb}};
    cf_exec_free(e);
    cf_model_free(m);
    return rc ? -1 : 0;
}

/* The reference for element i of y (a at ia, b at ib), its gradients added into ga, gb. */
static float reference(cf_opcode op, float u, float v, float g, double *ga, double *gb)
{
    switch (op) {
    case CF_OP_ADD: *ga += g, *gb += g; return u + v;
    case CF_OP_SUB: *ga += g, *gb -= g; return u - v;
    case CF_OP_MUL: *ga += (double)g * v, *gb += (double)g * u; return u * v;
    default: *ga += (double)g / v, *gb -= (double)g * u / ((double)v * v); return u / v;
    }
}

static int close_to(const float *got, const double *want, size_t n, double tol, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= tol * (fabs(want[i]) + 1))) {
            fprintf(stderr, "  %s[%zu]: %g, want %g\n", what, i, (double)got[i], want[i]);
            return 0;
        }
    return 1;
}

/* r against the reference: y elementwise, the gradients summed where b is broadcast
 * (in float there, thousands of terms: a looser tolerance). */
static int matches(const operands *c, cf_opcode op, const result *r)
{
    size_t nb = r->n[2], per = r->n[0] / B;   /* y's elements a sample */
    size_t row = c->param ? 1 : (size_t)c->as.d[c->as.rank - 1];   /* column broadcast: a's row per b */
    double *y = calloc(r->n[0], sizeof *y), *ga = calloc(r->n[1], sizeof *ga), *gb = calloc(nb, sizeof *gb);
    int ok = y && ga && gb;
    for (size_t i = 0; ok && i < r->n[0]; i++) {
        size_t ib = c->param ? i % per : cf_shape_count(c->bs) == cf_shape_count(c->as) ? i : i / row;
        y[i] = reference(op, value(i, 0), value(ib, 1), value(i, 2), &ga[i], &gb[ib]);
    }
    ok = ok && close_to(r->v[0], y, r->n[0], 1e-6, "y") && close_to(r->v[1], ga, r->n[1], 1e-6, "da") &&
         close_to(r->v[2], gb, nb, nb == r->n[1] ? 1e-6 : 1e-4, "db");
    free(y);
    free(ga);
    free(gb);
    return ok;
}

TEST(long_rows_in_pieces)
{
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int o = 0; o < 4; o++) {
            result r[2];
            memset(r, 0, sizeof r);
            for (int t = 0; t < 2; t++) {
                cf_set_threads(t + 1);
                CHECK(run(&cases[c], ops[o], &r[t]) == 0);
                int ok = r[t].v[0] && r[t].v[1] && r[t].v[2] && matches(&cases[c], ops[o], &r[t]);
                if (!ok) fprintf(stderr, "  %s, op %d, %d threads\n", cases[c].name, o, t + 1);
                CHECK(ok);
            }
            for (int k = 0; k < 3; k++) {
                CHECK(r[0].v[k] && r[1].v[k] && memcmp(r[0].v[k], r[1].v[k], r[0].n[k] * sizeof(float)) == 0);
                free(r[0].v[k]);
                free(r[1].v[k]);
            }
        }
    cf_set_threads(0);
}

int main(void)
{
    RUN(long_rows_in_pieces);
    return test_summary("arith");
}
