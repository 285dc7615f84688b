/* test_golden_batchnorm.c - batchnorm against PyTorch's torch.nn.functional.batch_norm:
 * per case, two training forwards on different inputs (the running statistics'
 * update compounds) and then one in evaluation with the statistics they left; after
 * each, the output, the gradients of sum(y * r) with respect to x, gamma and beta, and
 * the running mean and variance. Images (B, C, H, W), features (B, C) and a sequence
 * (B, C, L) with eps and momentum of its own. Fixtures:
 * tests/golden/batchnorm_golden.safetensors, made by tests/golden/gen_batchnorm.py
 * (same generator and table as here). With 1 and 2 threads; and a case too large for
 * the fixture, big enough to be split between threads, gives the same bits at 1, 2
 * and 3. */
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/safetensors.h"
#include "golden.h"
#include "test.h"

#define GOLDEN "tests/golden/batchnorm_golden.safetensors"
#define SEED 20260412u
#define RTOL 1e-5   /* gen_batchnorm.py checks that PyTorch's float32 meets it too */
#define ATOL 1e-6

typedef struct {
    const char *name;
    int rank, d[4];          /* x (B, C, ...) */
    float eps, momentum;     /* 0, 0: cf_batchnorm's defaults (the attributes left out) */
    float xscale, xshift;    /* x = sym * xscale + xshift */
} bcase;

/* The table of gen_batchnorm.py, in its order. */
static const bcase cases[] = {
    {"img", 4, {5, 3, 4, 6}, 0, 0, 1, 0},
    {"feat", 2, {7, 4}, 0, 0, 2, 1},
    {"seq", 3, {3, 5, 7}, 1e-2f, 0.3f, 1, 0},
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

/* The stages, in the script's order: two training forwards, then evaluation. */
static const char *const stages[] = {"t1", "t2", "eval"};
#define NSTAGES 3

static int compare(const char *what, const float *got, const cf_st_tensor *want, size_t n)
{
    return golden_compare(what, got, want, n, RTOL, ATOL);
}

/* What one case keeps of a stage, to compare runs bit for bit. */
typedef struct {
    float *v[6];   /* y, dx, dgamma, dbeta, running mean, running var (malloc'd) */
    size_t n[6];
} kept;

/* A model of x -> batchnorm for case c, bound at its batch; gamma, beta and the
 * running statistics drawn from the generator (the script's order). NULL on failure. */
static cf_exec *make(const bcase *c, cf_model **mp)
{
    cf_model *m = cf_model_new();
    int C = c->d[1];
    cf_shape xs = {c->rank - 1, {c->d[1], c->d[2], c->d[3]}};   /* per sample */
    cf_node *x = cf_input(m, "x", xs);
    cf_node *gamma = cf_param(m, "gamma", CF_SHAPE(C), CF_ZEROS);
    cf_node *beta = cf_param(m, "beta", CF_SHAPE(C), CF_ZEROS);
    cf_node *mean = cf_state(m, "mean", CF_SHAPE(C), CF_ZEROS);
    cf_node *var = cf_state(m, "var", CF_SHAPE(C), CF_ONES);
    cf_node *y = c->eps == 0 ? cf_batchnorm(m, x, gamma, beta, mean, var)
                             : cf_op_at(m, CF_OP_BATCHNORM, 5, (cf_node *const[]){x, gamma, beta, mean, var}, NULL,
                                        0, (const float[]){c->eps, c->momentum}, 2, __FILE__, __LINE__, 0);
    cf_output(m, y);
    cf_exec *e = cf_bind(m, c->d[0], CF_INPUT_GRADS);
    *mp = m;
    if (!e) {
        fprintf(stderr, "%s: %s\n", c->name, cf_last_error());
        return NULL;
    }
    float *p[4] = {cf_model_param_data(m, 0), cf_model_param_data(m, 1), cf_model_state_data(m, 0),
                   cf_model_state_data(m, 1)};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < C; j++) p[i][j] = i < 3 ? golden_sym() : golden_uniform() + 0.5f;
    return e;
}

/* Case c through its three stages (the generator's next draws); compares with gold
 * where gold is given, keeps copies where keep is. */
static void run_case(const cf_st_file *gold, const bcase *c, kept keep[NSTAGES])
{
    cf_model *m;
    cf_exec *e = make(c, &m);
    CHECK(e != NULL);
    if (!e) {
        cf_model_free(m);
        return;
    }
    size_t C = (size_t)c->d[1], nx, ny;
    float *x = cf_exec_input(e, 0, &nx);
    for (int s = 0; s < NSTAGES; s++) {
        int train = s < 2;
        for (size_t i = 0; i < nx; i++) x[i] = golden_sym() * c->xscale + c->xshift;
        CHECK(cf_forward(e, train) == 0);
        const float *y = cf_exec_output(e, 0, &ny);
        float *r = cf_exec_output_grad(e, 0, NULL);
        for (size_t i = 0; i < ny; i++) r[i] = golden_sym();
        cf_model_zero_grad(m);
        CHECK(cf_backward(e) == 0);
        const float *got[6] = {y, cf_exec_input_grad(e, 0, NULL), cf_model_param_grad(m, 0),
                               cf_model_param_grad(m, 1), cf_model_state_data(m, 0), cf_model_state_data(m, 1)};
        size_t n[6] = {ny, nx, C, C, C, C};
        static const char *what[6] = {"y", "dx", "dgamma", "dbeta", "rmean", "rvar"};
        char name[64], want[64];
        for (int k = 0; gold && k < 6; k++) {
            snprintf(name, sizeof name, "%s.%s.%s", c->name, stages[s], what[k]);
            /* evaluation leaves the running statistics as the second training step did */
            snprintf(want, sizeof want, "%s.%s.%s", c->name, k >= 4 && !train ? "t2" : stages[s], what[k]);
            CHECK(compare(name, got[k], cf_st_find(gold, want), n[k]) == 0);
        }
        for (int k = 0; keep && k < 6; k++) {
            keep[s].v[k] = malloc(n[k] * sizeof *got[k]);
            memcpy(keep[s].v[k], got[k], n[k] * sizeof *got[k]);
            keep[s].n[k] = n[k];
        }
    }
    cf_exec_free(e);
    cf_model_free(m);
}

TEST(batchnorm_matches_pytorch)
{
    cf_st_file *gold = golden_open(GOLDEN);
    CHECK(gold != NULL);
    if (!gold) return;
    for (int threads = 1; threads <= 2; threads++) {
        cf_set_threads(threads);
        golden_state = SEED;   /* the cases draw from it in turn, as the script does */
        for (int i = 0; i < NCASES; i++) run_case(gold, &cases[i], NULL);
    }
    cf_set_threads(0);
    cf_st_free(gold);
}

/* The fixture's cases are too small for the work to be split between threads. These
 * are (their channels go to different threads, forward and backward): the same bits
 * at 1, 2 and 3 threads, the running statistics included. Planes of 256 values (whole
 * vectors of partial sums), and 7 x 7 and 14 x 14 at batch 3 with odd channel counts:
 * planes with a remainder after the vectors, and threads' shares of odd sizes. */
static void same_bits_for(const bcase *c)
{
    kept ref[NSTAGES] = {0};
    for (int threads = 1; threads <= 3; threads++) {
        kept got[NSTAGES] = {0};
        cf_set_threads(threads);
        golden_state = SEED;
        run_case(NULL, c, threads == 1 ? ref : got);
        if (threads == 1) continue;
        for (int s = 0; s < NSTAGES; s++)
            for (int k = 0; k < 6; k++) {
                int same = ref[s].v[k] && got[s].v[k] && got[s].n[k] == ref[s].n[k] &&
                           memcmp(got[s].v[k], ref[s].v[k], ref[s].n[k] * sizeof(float)) == 0;
                if (!same)
                    fprintf(stderr, "  %s, %s, value %d: differs at %d threads\n", c->name, stages[s], k, threads);
                CHECK(same);
                free(got[s].v[k]);
            }
    }
    for (int s = 0; s < NSTAGES; s++)
        for (int k = 0; k < 6; k++) free(ref[s].v[k]);
    cf_set_threads(0);
}

TEST(same_bits_at_any_thread_count)
{
    static const bcase big[] = {
        {"big", 4, {8, 6, 16, 16}, 0, 0, 1, 0},
        {"7x7", 4, {3, 101, 7, 7}, 0, 0, 1, 0.5f},
        {"14x14", 4, {3, 27, 14, 14}, 0, 0, 2, -1},
    };
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) same_bits_for(&big[i]);
}

/* The comparison itself must be able to fail: a planted error in one element of the
 * compounded running variance is reported. */
TEST(golden_compare_fails_on_a_wrong_value)
{
    cf_st_file *gold = cf_st_read(GOLDEN);
    CHECK(gold != NULL);
    if (!gold) return;
    const cf_st_tensor *t = cf_st_find(gold, "img.t2.rvar");
    CHECK(t != NULL && t->count == 3);
    if (t) CHECK(golden_catches_a_planted_error(t, 2, RTOL, ATOL));
    cf_st_free(gold);
}

int main(void)
{
    RUN(batchnorm_matches_pytorch);
    RUN(same_bits_at_any_thread_count);
    RUN(golden_compare_fails_on_a_wrong_value);
    return test_summary("golden_batchnorm");
}
