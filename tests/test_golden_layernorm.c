/* test_golden_layernorm.c - layernorm and gelu against PyTorch: torch.nn.functional's
 * layer_norm (several shapes, ranks 2 to 4, and eps) and gelu (approximate='tanh' and
 * the erf form, near 0 and far into the tails), each with the output and the
 * gradients of sum(y * r) with respect to every input; and a network of PyTorch
 * modules, LayerNorm, Linear, GELU('tanh'), Linear, GELU(), whose state_dict is
 * imported into the same network in the notation (the standard library's LayerNorm
 * and its torch(...) layout), compared on its output and every gradient. Fixtures:
 * tests/golden/layernorm_golden.safetensors, made by tests/golden/gen_layernorm.py
 * (same generator and tables as here). With 1 and 2 threads; and cases too large for
 * the fixture, whose rows and elements are split between threads, give the same bits
 * at 1, 2 and 3. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/safetensors.h"
#include "golden.h"
#include "test.h"
#include "tmpdir.h"

#define GOLDEN "tests/golden/layernorm_golden.safetensors"
#define SEED 20260517u
#define RTOL 1e-5   /* gen_layernorm.py prints where PyTorch's own float32 misses it */
#define ATOL 1e-6

typedef struct {
    const char *name;
    int rank, d[4];          /* x (B, ...) */
    float eps;               /* 0: the default (the attribute left at 0) */
    float xscale, xshift;    /* x = sym * xscale + xshift */
} lncase;

/* The tables of gen_layernorm.py, in its order. */
static const lncase ln_cases[] = {
    {"seq", 3, {4, 5, 16}, 0, 2, 0},
    {"feat", 2, {6, 10}, 1e-2f, 1, 0},
    {"wide", 3, {3, 4, 40}, 1e-6f, 0.25f, 3},
    {"img", 4, {2, 3, 2, 7}, 0, 4, -1},
};

typedef struct {
    const char *name;
    int rank, d[4];
    int exact;
    float xscale;
} gcase;

static const gcase gelu_cases[] = {
    {"tanh", 3, {4, 5, 13}, 0, 4},
    {"erf", 3, {4, 5, 13}, 1, 4},
    {"tanh_tails", 2, {3, 50}, 0, 16},
    {"erf_tails", 2, {3, 50}, 1, 16},
};
#define N(a) (int)(sizeof a / sizeof a[0])

/* The worst error seen, as a fraction of the tolerance, and the worst absolute one. */
static double worst_ratio, worst_abs;

static int compare(const char *what, const float *got, const cf_st_tensor *want, size_t n, double rtol, double atol)
{
    for (size_t i = 0; want && i < want->count && i < n; i++) {
        double w = want->data[i], e = fabs(got[i] - w);
        if (e / (rtol * fabs(w) + atol) > worst_ratio) worst_ratio = e / (rtol * fabs(w) + atol);
        if (e > worst_abs) worst_abs = e;
    }
    return golden_compare(what, got, want, n, rtol, atol);
}

static cf_shape per_sample(int rank, const int *d)
{
    cf_shape s = {rank - 1, {0}};
    for (int i = 1; i < rank; i++) s.d[i - 1] = d[i];
    return s;
}

/* What a run keeps, to compare runs bit for bit: y, dx, dgamma, dbeta (malloc'd). */
typedef struct {
    float *v[4];
    size_t n[4];
} kept;

static void keep_copy(kept *k, int i, const float *v, size_t n)
{
    k->v[i] = malloc(n * sizeof *v);
    memcpy(k->v[i], v, n * sizeof *v);
    k->n[i] = n;
}

/* One layernorm case: gamma, beta, x and r from the generator (the script's order);
 * compared with gold when given, copied into keep when given. */
static void run_ln(const cf_st_file *gold, const lncase *c, kept *keep)
{
    int d = c->d[c->rank - 1];
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", per_sample(c->rank, c->d));
    cf_node *gamma = cf_param(m, "gamma", CF_SHAPE(d), CF_ZEROS);
    cf_node *beta = cf_param(m, "beta", CF_SHAPE(d), CF_ZEROS);
    cf_output(m, cf_layernorm(m, x, gamma, beta, c->eps));
    cf_exec *e = cf_bind(m, c->d[0], CF_INPUT_GRADS);
    CHECK(e != NULL);
    if (!e) {
        fprintf(stderr, "%s: %s\n", c->name, cf_last_error());
        cf_model_free(m);
        return;
    }
    float *g = cf_model_param_data(m, 0), *b = cf_model_param_data(m, 1);
    for (int j = 0; j < d; j++) g[j] = golden_sym();
    for (int j = 0; j < d; j++) b[j] = golden_sym();
    size_t nx, ny;
    float *xv = cf_exec_input(e, 0, &nx);
    for (size_t i = 0; i < nx; i++) xv[i] = golden_sym() * c->xscale + c->xshift;
    CHECK(cf_forward(e, 1) == 0);
    const float *y = cf_exec_output(e, 0, &ny);
    float *r = cf_exec_output_grad(e, 0, NULL);
    for (size_t i = 0; i < ny; i++) r[i] = golden_sym();
    cf_model_zero_grad(m);
    CHECK(cf_backward(e) == 0);
    const float *got[4] = {y, cf_exec_input_grad(e, 0, NULL), cf_model_param_grad(m, 0), cf_model_param_grad(m, 1)};
    size_t n[4] = {ny, nx, (size_t)d, (size_t)d};
    static const char *what[4] = {"y", "dx", "dgamma", "dbeta"};
    char name[64];
    for (int k = 0; k < 4; k++) {
        snprintf(name, sizeof name, "ln.%s.%s", c->name, what[k]);
        if (gold) CHECK(compare(name, got[k], cf_st_find(gold, name), n[k], RTOL, ATOL) == 0);
        if (keep) keep_copy(keep, k, got[k], n[k]);
    }
    cf_exec_free(e);
    cf_model_free(m);
}

/* One gelu case, as run_ln: x and r from the generator. */
static void run_gelu(const cf_st_file *gold, const gcase *c, kept *keep)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", per_sample(c->rank, c->d));
    cf_output(m, c->exact ? cf_gelu_exact(m, x) : cf_gelu(m, x));
    cf_exec *e = cf_bind(m, c->d[0], CF_INPUT_GRADS);
    CHECK(e != NULL);
    if (!e) {
        fprintf(stderr, "%s: %s\n", c->name, cf_last_error());
        cf_model_free(m);
        return;
    }
    size_t nx, ny;
    float *xv = cf_exec_input(e, 0, &nx);
    for (size_t i = 0; i < nx; i++) xv[i] = golden_sym() * c->xscale;
    CHECK(cf_forward(e, 1) == 0);
    const float *y = cf_exec_output(e, 0, &ny);
    float *r = cf_exec_output_grad(e, 0, NULL);
    for (size_t i = 0; i < ny; i++) r[i] = golden_sym();
    CHECK(cf_backward(e) == 0);
    const float *got[2] = {y, cf_exec_input_grad(e, 0, NULL)};
    size_t n[2] = {ny, nx};
    static const char *what[2] = {"y", "dx"};
    char name[64];
    for (int k = 0; k < 2; k++) {
        snprintf(name, sizeof name, "gelu.%s.%s", c->name, what[k]);
        if (gold) CHECK(compare(name, got[k], cf_st_find(gold, name), n[k], RTOL, ATOL) == 0);
        if (keep) keep_copy(keep, k, got[k], n[k]);
    }
    cf_exec_free(e);
    cf_model_free(m);
}

TEST(ops_match_pytorch)
{
    cf_st_file *gold = golden_open(GOLDEN);
    CHECK(gold != NULL);
    if (!gold) return;
    for (int threads = 1; threads <= 2; threads++) {
        cf_set_threads(threads);
        golden_state = SEED;   /* the cases draw from it in turn, as the script does */
        worst_ratio = worst_abs = 0;
        for (int i = 0; i < N(ln_cases); i++) run_ln(gold, &ln_cases[i], NULL);
        printf("  layernorm, %d thread%s: worst error %.3g (%.3g of the tolerance)\n", threads,
               threads > 1 ? "s" : "", worst_abs, worst_ratio);
        worst_ratio = worst_abs = 0;
        for (int i = 0; i < N(gelu_cases); i++) run_gelu(gold, &gelu_cases[i], NULL);
        printf("  gelu, %d thread%s: worst error %.3g (%.3g of the tolerance)\n", threads, threads > 1 ? "s" : "",
               worst_abs, worst_ratio);
    }
    cf_set_threads(0);
    cf_st_free(gold);
}

/* The network in the notation, over PyTorch's state_dict: cflux's parameter, the
 * PyTorch tensor that holds it, and whether it is transposed (Linear's weight). */
static const struct {
    const char *cflux, *torch;
    int transposed;
} net_params[] = {
    {"1.γ", "0.weight", 0}, {"1.β", "0.bias", 0}, {"2.W", "1.weight", 1},
    {"2.b", "1.bias", 0},   {"4.W", "3.weight", 1}, {"4.b", "3.bias", 0},
};

#define NET_SRC "model = Chain(Input(5, 12), LayerNorm(), Affine(24), gelu, Affine(12), x -> gelu(x, exact = true))\n"

/* The fixture's state_dict, written alone to path, as PyTorch would save it. */
static int write_state(const cf_st_file *gold, const char *path)
{
    cf_st_tensor t[6];
    char names[6][32];
    for (int i = 0; i < 6; i++) {
        char key[64];
        snprintf(key, sizeof key, "net.state.%s", net_params[i].torch);
        const cf_st_tensor *s = cf_st_find(gold, key);
        if (!s) return -1;
        t[i] = *s;
        snprintf(names[i], sizeof names[i], "%s", net_params[i].torch);
        t[i].name = names[i];
        t[i].dtype = NULL;
    }
    return cf_st_write(path, 6, t, 0, NULL, NULL);
}

TEST(network_in_the_notation_matches_pytorch)
{
    cf_st_file *gold = golden_open(GOLDEN);
    CHECK(gold != NULL);
    if (!gold) return;
    CHECK(tmpdir_make("golden-ln") == 0);
    CHECK(write_state(gold, tmp("state.safetensors")) == 0);
    cf_model *m = cf_model_parse(NET_SRC, "net.flux");
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "%s\n", cf_last_error());
        cf_st_free(gold);
        tmpdir_remove();
        return;
    }
    int rc = cf_model_import_torch(m, tmp("state.safetensors"), NULL, NULL);
    CHECK(rc == 0);
    if (rc) fprintf(stderr, "%s\n", cf_last_error());
    for (int threads = 1; threads <= 2; threads++) {
        cf_set_threads(threads);
        cf_exec *e = cf_bind(m, 3, CF_INPUT_GRADS);
        CHECK(e != NULL);
        if (!e) break;
        const cf_st_tensor *x = cf_st_find(gold, "net.x"), *r = cf_st_find(gold, "net.r");
        size_t nx, ny;
        float *xv = cf_exec_input(e, 0, &nx);
        CHECK(x && r && x->count == nx);
        if (!x || !r || x->count != nx) {
            cf_exec_free(e);
            break;
        }
        memcpy(xv, x->data, nx * sizeof *xv);
        CHECK(cf_forward(e, 1) == 0);
        const float *y = cf_exec_output(e, 0, &ny);
        memcpy(cf_exec_output_grad(e, 0, NULL), r->data, ny * sizeof(float));
        cf_model_zero_grad(m);
        CHECK(cf_backward(e) == 0);
        worst_ratio = worst_abs = 0;
        CHECK(compare("net.y", y, cf_st_find(gold, "net.y"), ny, RTOL, ATOL) == 0);
        CHECK(compare("net.dx", cf_exec_input_grad(e, 0, NULL), cf_st_find(gold, "net.dx"), nx, RTOL, ATOL) == 0);
        for (int i = 0; i < N(net_params); i++) {
            int p = cf_model_param_index(m, net_params[i].cflux);
            CHECK(p >= 0);
            if (p < 0) continue;
            cf_shape s = cf_model_param_shape(m, p);
            size_t n = cf_shape_count(s);
            const float *gr = cf_model_param_grad(m, p);
            char key[64];
            snprintf(key, sizeof key, "net.grad.%s", net_params[i].torch);
            const cf_st_tensor *t = cf_st_find(gold, key);
            if (net_params[i].transposed && t && t->count == n) {   /* PyTorch's (out, in) as cflux's (in, out) */
                float *tt = malloc(n * sizeof *tt);
                for (int a = 0; a < s.d[0]; a++)
                    for (int b = 0; b < s.d[1]; b++) tt[(size_t)a * s.d[1] + b] = t->data[(size_t)b * s.d[0] + a];
                cf_st_tensor tr = *t;
                tr.data = tt;
                CHECK(compare(key, gr, &tr, n, RTOL, ATOL) == 0);
                free(tt);
            } else {
                CHECK(compare(key, gr, t, n, RTOL, ATOL) == 0);
            }
        }
        printf("  network, %d thread%s: worst error %.3g (%.3g of the tolerance)\n", threads,
               threads > 1 ? "s" : "", worst_abs, worst_ratio);
        cf_exec_free(e);
    }
    cf_set_threads(0);
    cf_model_free(m);
    cf_st_free(gold);
    tmpdir_remove();
}

/* The fixture's cases are too small to be split between threads. These are (rows of
 * layernorm forward, its chunks of rows backward, gelu's elements): the same bits at
 * 1, 2 and 3 threads. */
TEST(same_bits_at_any_thread_count)
{
    static const lncase big_ln = {"big", 3, {16, 64, 96}, 0, 1, 0};
    static const gcase big_gelu[2] = {{"big", 3, {16, 64, 97}, 0, 4}, {"big", 3, {16, 64, 97}, 1, 4}};
    for (int which = 0; which < 3; which++) {
        kept ref = {0};
        for (int threads = 1; threads <= 3; threads++) {
            kept got = {0};
            cf_set_threads(threads);
            golden_state = SEED;
            kept *into = threads == 1 ? &ref : &got;
            if (which == 0) run_ln(NULL, &big_ln, into);
            else run_gelu(NULL, &big_gelu[which - 1], into);
            if (threads == 1) continue;
            for (int k = 0; k < 4; k++) {
                if (!ref.v[k] && !got.v[k]) continue;
                int same = ref.v[k] && got.v[k] && got.n[k] == ref.n[k] &&
                           memcmp(got.v[k], ref.v[k], ref.n[k] * sizeof(float)) == 0;
                if (!same) fprintf(stderr, "  case %d, value %d: differs at %d threads\n", which, k, threads);
                CHECK(same);
                free(got.v[k]);
            }
        }
        for (int k = 0; k < 4; k++) free(ref.v[k]);
    }
    cf_set_threads(0);
}

/* The comparison itself must be able to fail: a planted error in one element of a
 * gradient is reported. */
TEST(golden_compare_fails_on_a_wrong_value)
{
    cf_st_file *gold = cf_st_read(GOLDEN);
    CHECK(gold != NULL);
    if (!gold) return;
    const cf_st_tensor *t = cf_st_find(gold, "ln.seq.dgamma");
    CHECK(t != NULL && t->count == 16);
    if (t) CHECK(golden_catches_a_planted_error(t, 5, RTOL, ATOL));
    cf_st_free(gold);
}

int main(void)
{
    RUN(ops_match_pytorch);
    RUN(network_in_the_notation_matches_pytorch);
    RUN(same_bits_at_any_thread_count);
    RUN(golden_compare_fails_on_a_wrong_value);
    return test_summary("golden_layernorm");
}
