/* test_optim.c - optimizers and learning-rate schedules.
 *
 * Golden: two parameters, a (5) and W (3, 4), and six gradient sets from golden_gen
 * are replayed through SGD, momentum, nesterov, Adam and AdamW (with weight decay, with
 * clipping, with a changing lr) and compared after every step with PyTorch, together
 * with the step count and the final state. Fixtures: tests/golden/optim_golden.safetensors,
 * made by tests/golden/gen_optim.py (same generator and configurations as below).
 * Then: state names, restoring state, non-finite gradients, frozen parameters, zeroed
 * gradients, refused options, no allocation in a step, and every schedule form. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/safetensors.h"
#include "golden.h"
#include "test.h"

#define GOLDEN "tests/golden/optim_golden.safetensors"
#define STEPS 6
#define NA 5
#define NW 12

/* counting allocations (off under the sanitizers, which own malloc) */
#include "alloc_count.h"

/* ---- the shared generator and the test model ---- */


/* The starting values and six gradient sets, in the script's order. */
static float init_a[NA], init_W[NW], grad_a[STEPS][NA], grad_W[STEPS][NW];
static void make_data(void)
{
    golden_state = 20261130;
    for (int i = 0; i < NA; i++) init_a[i] = golden_sym();
    for (int i = 0; i < NW; i++) init_W[i] = golden_sym();
    for (int k = 0; k < STEPS; k++) {
        for (int i = 0; i < NA; i++) grad_a[k][i] = golden_sym();
        for (int i = 0; i < NW; i++) grad_W[k][i] = golden_sym();
    }
}

/* a (5) and W (3, 4), and with frozen != 0 a parameter "f" (2) with CF_GRAD_NONE between
 * them; bound for training. Parameters hold init_a and init_W. */
typedef struct { cf_model *m; cf_exec *e; int a, W, f; } fixture;

static fixture make_model(int frozen)
{
    fixture t = {cf_model_new(), NULL, 0, 1, -1};
    cf_model *m = t.m;
    cf_node *a = cf_param(m, "a", CF_SHAPE(5), CF_ZEROS);
    cf_node *f = frozen ? cf_param(m, "f", CF_SHAPE(2), CF_ONES) : NULL;
    cf_node *W = cf_param(m, "W", CF_SHAPE(3, 4), CF_ZEROS);
    cf_node *s = cf_add(m, cf_sum(m, a), cf_sum(m, cf_sum(m, W)));
    if (frozen) {
        s = cf_add(m, s, cf_sum(m, f));
        CHECK(cf_model_set_grad_req(m, "f", CF_GRAD_NONE) == 0);
        t.f = 1;
        t.W = 2;
    }
    cf_output(m, s);
    t.e = cf_bind(m, 1, CF_TRAIN);
    CHECK(t.e != NULL);
    if (!t.e) {
        fprintf(stderr, "%s\n", cf_last_error());
        exit(1);
    }
    memcpy(cf_model_param_data(m, t.a), init_a, sizeof init_a);
    memcpy(cf_model_param_data(m, t.W), init_W, sizeof init_W);
    return t;
}

static void free_model(fixture t)
{
    cf_exec_free(t.e);
    cf_model_free(t.m);
}

static void put_grads(fixture t, int k)
{
    memcpy(cf_model_param_grad(t.m, t.a), grad_a[k], sizeof grad_a[k]);
    memcpy(cf_model_param_grad(t.m, t.W), grad_W[k], sizeof grad_W[k]);
}

/* |got - want| <= 1e-5 |want| + 1e-7 for every element; returns the mismatches. */
static int compare(const char *what, const float *got, const cf_st_tensor *want, size_t n)
{
    return golden_compare(what, got, want, n, 1e-5, 1e-7);
}

/* ---- golden ---- */

typedef struct {
    const char *name, *optim;
    float lr, momentum, weight_decay, clip_norm;
    int vary_lr;
} config;

/* As CONFIGS in gen_optim.py. */
static const config configs[] = {
    {"sgd", "sgd", 0.1f, 0, 0, 0, 0},
    {"sgd_wd", "sgd", 0.1f, 0, 0.05f, 0, 0},
    {"momentum", "momentum", 0.1f, 0.9f, 0, 0, 0},
    {"nesterov", "nesterov", 0.1f, 0.9f, 0, 0, 0},
    {"momentum_wd", "momentum", 0.1f, 0.9f, 0.05f, 0, 0},
    {"adam", "adam", 0.01f, 0, 0, 0, 0},
    {"adam_wd", "adam", 0.01f, 0, 0.05f, 0, 0},
    {"adamw", "adamw", 0.01f, 0, 0.1f, 0, 0},
    {"adam_clip", "adam", 0.01f, 0, 0, 0.5f, 0},
    {"sgd_noclip", "sgd", 0.1f, 0, 0, 100.0f, 0},
    {"adamw_lrs", "adamw", 0.01f, 0, 0.1f, 0, 1},
};
static const float lr_factors[STEPS] = {1.0f, 0.5f, 0.25f, 1.0f, 2.0f, 1.0f};

static cf_optim_opts config_opts(const config *c)
{
    cf_optim_opts o = cf_optim_defaults(c->optim);
    o.lr = c->lr;
    if (c->momentum) o.momentum = c->momentum;
    o.weight_decay = c->weight_decay;
    o.clip_norm = c->clip_norm;
    return o;
}

static float config_lr(const config *c, int k) { return c->vary_lr ? c->lr * lr_factors[k] : c->lr; }

/* Replay the six steps of one configuration and compare everything; returns the
 * number of mismatching tensors. */
static int run_config(const cf_st_file *gold, const config *c)
{
    fixture t = make_model(0);
    cf_optim_opts opts = config_opts(c);
    cf_optim *o = cf_optim_new(t.m, &opts);
    CHECK(o != NULL);
    if (!o) {
        fprintf(stderr, "%s\n", cf_last_error());
        free_model(t);
        return 1;
    }
    int bad = 0;
    for (int k = 0; k < STEPS; k++) {
        put_grads(t, k);
        CHECK(cf_optim_step(o, config_lr(c, k)) == 0);
        char name[64];
        snprintf(name, sizeof name, "%s.%d.a", c->name, k);
        bad += compare(name, cf_model_param_data(t.m, t.a), cf_st_find(gold, name), NA) != 0;
        snprintf(name, sizeof name, "%s.%d.W", c->name, k);
        bad += compare(name, cf_model_param_data(t.m, t.W), cf_st_find(gold, name), NW) != 0;
    }
    char name[96];
    snprintf(name, sizeof name, "%s.steps", c->name);
    const cf_st_tensor *steps = cf_st_find(gold, name);
    CHECK(steps && steps->count == 1 && steps->data[0] == (float)cf_optim_get_steps(o));
    CHECK(cf_optim_get_steps(o) == STEPS);

    /* every state tensor has its PyTorch counterpart, and there are no others */
    int golden_states = 0;
    snprintf(name, sizeof name, "%s.state.", c->name);
    for (int i = 0; i < cf_st_count(gold); i++) golden_states += strncmp(cf_st_get(gold, i)->name, name, strlen(name)) == 0;
    CHECK(golden_states == cf_optim_state_count(o));
    for (int i = 0; i < cf_optim_state_count(o); i++) {
        size_t n;
        float *s = cf_optim_state_data(o, i, &n);
        snprintf(name, sizeof name, "%s.state.%s", c->name, cf_optim_state_name(o, i));
        bad += compare(name, s, cf_st_find(gold, name), n) != 0;
    }
    cf_optim_free(o);
    free_model(t);
    return bad;
}

TEST(golden_generator_matches)
{
    cf_st_file *gold = cf_st_read(GOLDEN);
    CHECK(gold != NULL);
    if (!gold) {
        fprintf(stderr, "%s\n", cf_last_error());
        return;
    }
    const cf_st_tensor *a = cf_st_find(gold, "init.a"), *W = cf_st_find(gold, "init.W");
    CHECK(a && a->count == NA && memcmp(a->data, init_a, sizeof init_a) == 0);
    CHECK(W && W->count == NW && W->rank == 2 && W->shape[0] == 3 && memcmp(W->data, init_W, sizeof init_W) == 0);
    cf_st_free(gold);
}

/* The clipping configurations really clip (adam_clip) and really do not (sgd_noclip). */
TEST(golden_clip_norms_are_on_both_sides)
{
    for (int k = 0; k < STEPS; k++) {
        double s = 0;
        for (int i = 0; i < NA; i++) s += grad_a[k][i] * grad_a[k][i];
        for (int i = 0; i < NW; i++) s += grad_W[k][i] * grad_W[k][i];
        CHECK(sqrt(s) > 1.0);     /* > 0.5: adam_clip clips every step */
        CHECK(sqrt(s) < 100.0);   /* sgd_noclip never does */
    }
}

TEST(golden_against_pytorch)
{
    cf_st_file *gold = cf_st_read(GOLDEN);
    CHECK(gold != NULL);
    if (!gold) return;
    for (size_t i = 0; i < sizeof configs / sizeof *configs; i++) {
        int bad = run_config(gold, &configs[i]);
        if (bad) fprintf(stderr, "golden: configuration %s: %d tensors differ\n", configs[i].name, bad);
        CHECK(bad == 0);
    }
    cf_st_free(gold);
}

/* Same, on two threads (the updates run on the pool; results must not change). */
TEST(golden_two_threads)
{
    cf_set_threads(2);
    cf_st_file *gold = cf_st_read(GOLDEN);
    CHECK(gold != NULL);
    for (size_t i = 0; gold && i < sizeof configs / sizeof *configs; i++) CHECK(run_config(gold, &configs[i]) == 0);
    cf_st_free(gold);
    cf_set_threads(0);
}

/* The comparison can fail: one value off by 1e-4 relative is reported. */
TEST(golden_compare_fails_on_a_wrong_value)
{
    cf_st_file *gold = cf_st_read(GOLDEN);
    CHECK(gold != NULL);
    if (!gold) return;
    const cf_st_tensor *t = cf_st_find(gold, "adam.5.W");
    CHECK(t != NULL);
    if (t) {
        float copy[NW];
        memcpy(copy, t->data, sizeof copy);
        CHECK(compare("unchanged", copy, t, NW) == 0);
        copy[7] *= 1.0001f;
        CHECK(compare("planted", copy, t, NW) == 1);
    }
    cf_st_free(gold);
}

/* ---- state ---- */

TEST(state_names_and_counts)
{
    struct { const char *optim; int count; const char *names[4]; } want[] = {
        {"sgd", 0, {NULL}},
        {"momentum", 2, {"momentum.a", "momentum.W"}},
        {"nesterov", 2, {"momentum.a", "momentum.W"}},
        {"adam", 4, {"adam.m.a", "adam.v.a", "adam.m.W", "adam.v.W"}},
        {"adamw", 4, {"adam.m.a", "adam.v.a", "adam.m.W", "adam.v.W"}},
    };
    fixture t = make_model(0);
    for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
        cf_optim_opts opts = cf_optim_defaults(want[k].optim);
        cf_optim *o = cf_optim_new(t.m, &opts);
        CHECK(o != NULL);
        if (!o) continue;
        CHECK(cf_optim_state_count(o) == want[k].count);
        for (int i = 0; i < want[k].count; i++) {
            CHECK(strcmp(cf_optim_state_name(o, i), want[k].names[i]) == 0);
            size_t n = 99;
            float *s = cf_optim_state_data(o, i, &n);
            CHECK(s != NULL && n == (strstr(want[k].names[i], ".W") ? NW : NA));
            for (size_t j = 0; s && j < n; j++) CHECK(s[j] == 0);
        }
        size_t n = 99;
        CHECK(cf_optim_state_name(o, want[k].count) == NULL && cf_optim_state_name(o, -1) == NULL);
        CHECK(cf_optim_state_data(o, want[k].count, &n) == NULL && n == 0);
        CHECK(cf_optim_get_steps(o) == 0);
        cf_optim_set_steps(o, 41);
        CHECK(cf_optim_get_steps(o) == 41);
        cf_optim_free(o);
    }
    cf_optim_free(NULL);
    CHECK(cf_optim_state_count(NULL) == 0 && cf_optim_state_name(NULL, 0) == NULL);
    free_model(t);
}

/* Copy the state and the step count into a fresh optimizer (on a fresh model holding
 * the same parameters) after three steps and continue: bitwise the uninterrupted run. */
TEST(state_restore_continues_exactly)
{
    const char *kinds[] = {"sgd", "momentum", "nesterov", "adam", "adamw"};
    for (int k = 0; k < 5; k++) {
        cf_optim_opts opts = cf_optim_defaults(kinds[k]);
        opts.weight_decay = 0.02f;
        opts.clip_norm = 1.5f;

        fixture u = make_model(0);
        cf_optim *ou = cf_optim_new(u.m, &opts);
        for (int s = 0; s < STEPS; s++) {
            put_grads(u, s);
            CHECK(cf_optim_step(ou, opts.lr) == 0);
        }

        fixture a = make_model(0);
        cf_optim *oa = cf_optim_new(a.m, &opts);
        for (int s = 0; s < 3; s++) {
            put_grads(a, s);
            CHECK(cf_optim_step(oa, opts.lr) == 0);
        }
        fixture b = make_model(0);
        cf_optim *ob = cf_optim_new(b.m, &opts);
        memcpy(cf_model_param_data(b.m, b.a), cf_model_param_data(a.m, a.a), NA * sizeof(float));
        memcpy(cf_model_param_data(b.m, b.W), cf_model_param_data(a.m, a.W), NW * sizeof(float));
        CHECK(cf_optim_state_count(ob) == cf_optim_state_count(oa));
        for (int i = 0; i < cf_optim_state_count(oa); i++) {
            size_t na, nb;
            float *sa = cf_optim_state_data(oa, i, &na), *sb = cf_optim_state_data(ob, i, &nb);
            CHECK(na == nb && strcmp(cf_optim_state_name(oa, i), cf_optim_state_name(ob, i)) == 0);
            memcpy(sb, sa, na * sizeof(float));
        }
        cf_optim_set_steps(ob, cf_optim_get_steps(oa));
        cf_optim_free(oa);
        free_model(a);
        for (int s = 3; s < STEPS; s++) {
            put_grads(b, s);
            CHECK(cf_optim_step(ob, opts.lr) == 0);
        }
        CHECK(cf_optim_get_steps(ob) == STEPS);
        CHECK(memcmp(cf_model_param_data(b.m, b.a), cf_model_param_data(u.m, u.a), NA * sizeof(float)) == 0);
        CHECK(memcmp(cf_model_param_data(b.m, b.W), cf_model_param_data(u.m, u.W), NW * sizeof(float)) == 0);
        for (int i = 0; i < cf_optim_state_count(ou); i++) {
            size_t n;
            float *su = cf_optim_state_data(ou, i, &n), *sb = cf_optim_state_data(ob, i, NULL);
            CHECK(memcmp(su, sb, n * sizeof(float)) == 0);
        }
        /* and the step count matters: Adam's bias correction reads it */
        if (k >= 3) CHECK(memcmp(cf_model_param_data(b.m, b.W), init_W, sizeof init_W) != 0);
        cf_optim_free(ob);
        free_model(b);
        cf_optim_free(ou);
        free_model(u);
    }
}

/* ---- the step ---- */

/* A NaN or an infinity in any gradient: -1, a message naming the parameter, and not
 * one value changed (parameters, gradients, state, step count). */
TEST(nonfinite_gradient_changes_nothing)
{
    const char *kinds[] = {"sgd", "momentum", "nesterov", "adam", "adamw"};
    const float bad[] = {NAN, INFINITY, -INFINITY};
    for (int k = 0; k < 5; k++)
        for (int b = 0; b < 3; b++) {
            fixture t = make_model(0);
            cf_optim_opts opts = cf_optim_defaults(kinds[k]);
            opts.clip_norm = 1;
            cf_optim *o = cf_optim_new(t.m, &opts);
            put_grads(t, 0);
            CHECK(cf_optim_step(o, opts.lr) == 0);   /* some state to keep */
            put_grads(t, 1);
            cf_model_param_grad(t.m, t.W)[7] = bad[b];

            float pa[NA], pW[NW], ga[NA], gW[NW], st[4][NW];
            memcpy(pa, cf_model_param_data(t.m, t.a), sizeof pa);
            memcpy(pW, cf_model_param_data(t.m, t.W), sizeof pW);
            memcpy(ga, cf_model_param_grad(t.m, t.a), sizeof ga);
            memcpy(gW, cf_model_param_grad(t.m, t.W), sizeof gW);
            for (int i = 0; i < cf_optim_state_count(o); i++) {
                size_t n;
                float *s = cf_optim_state_data(o, i, &n);
                memcpy(st[i], s, n * sizeof(float));
            }
            CHECK(cf_optim_step(o, opts.lr) == -1);
            CHECK_HAS(cf_last_error(), "error: cf_optim_step: the gradient of 'W' is not finite (element 7 is ");
            CHECK_HAS(cf_last_error(), "nothing was changed");
            CHECK(memcmp(pa, cf_model_param_data(t.m, t.a), sizeof pa) == 0);
            CHECK(memcmp(pW, cf_model_param_data(t.m, t.W), sizeof pW) == 0);
            CHECK(memcmp(ga, cf_model_param_grad(t.m, t.a), sizeof ga) == 0);
            CHECK(memcmp(gW, cf_model_param_grad(t.m, t.W), 7 * sizeof(float)) == 0);
            for (int i = 0; i < cf_optim_state_count(o); i++) {
                size_t n;
                float *s = cf_optim_state_data(o, i, &n);
                CHECK(memcmp(st[i], s, n * sizeof(float)) == 0);
            }
            CHECK(cf_optim_get_steps(o) == 1);
            cf_optim_free(o);
            free_model(t);
        }
}

/* A frozen parameter keeps its value and gets no state; its gradient buffer is not
 * even read (a NaN there is no error). Every other gradient is zero after a step. */
TEST(frozen_parameters_untouched_and_gradients_zeroed)
{
    const char *kinds[] = {"sgd", "momentum", "nesterov", "adam", "adamw"};
    for (int k = 0; k < 5; k++) {
        fixture t = make_model(1);
        CHECK(cf_model_param_count(t.m) == 3 && strcmp(cf_model_param_name(t.m, t.f), "f") == 0);
        cf_optim_opts opts = cf_optim_defaults(kinds[k]);
        opts.weight_decay = 0.1f;
        opts.clip_norm = 1;
        cf_optim *o = cf_optim_new(t.m, &opts);
        CHECK(o != NULL);
        int per = k == 0 ? 0 : k < 3 ? 1 : 2;
        CHECK(cf_optim_state_count(o) == 2 * per);
        for (int i = 0; i < cf_optim_state_count(o); i++) CHECK(strstr(cf_optim_state_name(o, i), ".f") == NULL);
        float *f = cf_model_param_data(t.m, t.f), *fg = cf_model_param_grad(t.m, t.f);
        for (int s = 0; s < 3; s++) {
            put_grads(t, s);
            if (fg) fg[0] = NAN, fg[1] = 2;
            CHECK(cf_optim_step(o, opts.lr) == 0);
            CHECK(f[0] == 1 && f[1] == 1);
            if (fg) CHECK(isnan(fg[0]) && fg[1] == 2);
            const float *ga = cf_model_param_grad(t.m, t.a), *gW = cf_model_param_grad(t.m, t.W);
            for (int i = 0; i < NA; i++) CHECK(ga[i] == 0);
            for (int i = 0; i < NW; i++) CHECK(gW[i] == 0);
        }
        CHECK(memcmp(cf_model_param_data(t.m, t.W), init_W, sizeof init_W) != 0);
        cf_optim_free(o);
        free_model(t);
    }
}

/* Model state (batch normalisation's running statistics) is not a parameter: no
 * optimizer keeps state for it, and steps with weight decay leave it as it was (the
 * forwards here are in evaluation mode, which reads the statistics only). */
TEST(model_state_is_not_trained)
{
    const char *kinds[] = {"sgd", "momentum", "nesterov", "adam", "adamw"};
    for (int k = 0; k < 5; k++) {
        cf_model *m = cf_model_new();
        cf_node *x = cf_input(m, "x", CF_SHAPE(3));
        cf_node *y = cf_input(m, "y", CF_SCALAR);
        cf_node *g = cf_param(m, "g", CF_SHAPE(3), CF_ONES);
        cf_node *b = cf_param(m, "b", CF_SHAPE(3), CF_ZEROS);
        cf_node *mean = cf_state(m, "mean", CF_SHAPE(3), CF_CONST(0.5f));
        cf_node *var = cf_state(m, "var", CF_SHAPE(3), CF_CONST(2.0f));
        cf_output(m, cf_softmax_xent(m, cf_batchnorm(m, x, g, b, mean, var), y));
        cf_exec *e = cf_bind(m, 4, CF_TRAIN);
        CHECK(e != NULL);
        if (!e) return;
        cf_optim_opts opts = cf_optim_defaults(kinds[k]);
        opts.weight_decay = 0.1f;
        cf_optim *o = cf_optim_new(m, &opts);
        CHECK(o != NULL && cf_optim_state_count(o) == 2 * (k == 0 ? 0 : k < 3 ? 1 : 2));
        float *xv = cf_exec_input(e, 0, NULL), *yv = cf_exec_input(e, 1, NULL);
        for (int i = 0; i < 12; i++) xv[i] = (float)(i % 5) - 2;
        for (int i = 0; i < 4; i++) yv[i] = (float)(i % 3);
        for (int s = 0; s < 3; s++) CHECK(cf_forward(e, 0) == 0 && cf_backward(e) == 0 && cf_optim_step(o, 0.1f) == 0);
        const float *mv = cf_model_state_data(m, 0), *vv = cf_model_state_data(m, 1);
        for (int i = 0; i < 3; i++) CHECK(mv[i] == 0.5f && vv[i] == 2.0f);
        CHECK(cf_model_param_data(m, 0)[0] != 1.0f);   /* while the parameters moved */
        /* one training forward moves them */
        CHECK(cf_forward(e, 1) == 0 && mv[0] != 0.5f && vv[0] != 2.0f);
        cf_optim_free(o);
        cf_exec_free(e);
        cf_model_free(m);
    }
}

/* Clipping by hand: a's gradient (3, 4, 0, 0, 0) and W's zero have norm 5; with
 * clip_norm 1 and lr 1, SGD moves a by g / (5 + 1e-6). clip_norm 10 leaves g alone. */
TEST(clip_norm_by_hand)
{
    for (int c = 0; c < 2; c++) {
        fixture t = make_model(0);
        cf_optim_opts opts = cf_optim_defaults("sgd");
        opts.clip_norm = c ? 10.0f : 1.0f;
        cf_optim *o = cf_optim_new(t.m, &opts);
        float *g = cf_model_param_grad(t.m, t.a);
        g[0] = 3;
        g[1] = 4;
        CHECK(cf_optim_step(o, 1.0f) == 0);
        float *a = cf_model_param_data(t.m, t.a);
        double s = c ? 1.0 : 1.0 / (5.0 + 1e-6);
        CHECK_NEAR(a[0], init_a[0] - 3 * s, 1e-6);
        CHECK_NEAR(a[1], init_a[1] - 4 * s, 1e-6);
        CHECK(a[2] == init_a[2]);
        CHECK(memcmp(cf_model_param_data(t.m, t.W), init_W, sizeof init_W) == 0);
        cf_optim_free(o);
        free_model(t);
    }
}

/* Clipping over a parameter of 1,000,003 elements, which the norm sums in 62 chunks
 * (the last one partial) spread over the threads, plus a small one: the scale applied
 * is clip_norm / (norm + 1e-6) with the norm computed here in one plain loop, at 1, 2
 * and 3 threads, and the result is the same bits at every thread count. */
#define NBIG 1000003

static float big_grad(size_t i) { return (float)((i * 2654435761u) >> 7 & 1023) / 512.0f - 1.0f; }

TEST(clip_norm_over_chunks_and_threads)
{
    static float first[NBIG];
    for (int threads = 1; threads <= 3; threads++) {
        cf_set_threads(threads);
        cf_model *m = cf_model_new();
        cf_node *a = cf_param(m, "a", CF_SHAPE(5), CF_ZEROS);
        cf_node *big = cf_param(m, "big", CF_SHAPE(NBIG), CF_ZEROS);
        cf_output(m, cf_add(m, cf_sum(m, a), cf_sum(m, big)));
        cf_exec *e = cf_bind(m, 1, CF_TRAIN);
        CHECK(e != NULL);
        if (!e) return;
        float *ga = cf_model_param_grad(m, 0), *gb = cf_model_param_grad(m, 1);
        double ss = 0;
        for (int i = 0; i < 5; i++) {
            ga[i] = 100.0f * (float)(i + 1);   /* as much of the norm as big's */
            ss += (double)ga[i] * ga[i];
        }
        for (size_t i = 0; i < NBIG; i++) {
            gb[i] = big_grad(i);
            ss += (double)gb[i] * gb[i];
        }
        double norm = sqrt(ss), want = 0.25 * norm / (norm + 1e-6);
        cf_optim_opts opts = cf_optim_defaults("sgd");
        opts.clip_norm = (float)(0.25 * norm);
        cf_optim *o = cf_optim_new(m, &opts);
        CHECK(cf_optim_step(o, 1.0f) == 0);
        /* p was 0, so p = -(g * scale): read the scale back from each element */
        const float *pa = cf_model_param_data(m, 0), *pb = cf_model_param_data(m, 1);
        double worst = 0;
        for (int i = 0; i < 5; i++) {
            double d = fabs(-pa[i] / (100.0 * (i + 1)) - want) / want;
            if (d > worst) worst = d;
        }
        for (size_t i = 0; i < NBIG; i++)
            if (big_grad(i) != 0) {
                double d = fabs(-pb[i] / (double)big_grad(i) - want) / want;
                if (d > worst) worst = d;
            }
        if (!(worst < 1e-6)) fprintf(stderr, "  %d threads: scale off by %g (relative)\n", threads, worst);
        CHECK(worst < 1e-6);
        if (threads == 1) memcpy(first, pb, sizeof first);
        else CHECK(memcmp(first, pb, sizeof first) == 0);
        cf_optim_free(o);
        cf_exec_free(e);
        cf_model_free(m);
    }
    cf_set_threads(0);
}

/* lr 0 changes no parameter (but counts the step and zeroes the gradients). */
TEST(step_lr_zero_and_refused)
{
    fixture t = make_model(0);
    cf_optim_opts opts = cf_optim_defaults("adam");
    cf_optim *o = cf_optim_new(t.m, &opts);
    put_grads(t, 0);
    CHECK(cf_optim_step(o, 0) == 0);
    CHECK(memcmp(cf_model_param_data(t.m, t.W), init_W, sizeof init_W) == 0);
    CHECK(cf_optim_get_steps(o) == 1);
    CHECK(cf_model_param_grad(t.m, t.W)[0] == 0);
    CHECK(cf_optim_step(o, -0.1f) == -1);
    CHECK_HAS(cf_last_error(), "error: cf_optim_step: lr must be a number >= 0, not -0.1");
    CHECK(cf_optim_step(o, NAN) == -1);
    CHECK_HAS(cf_last_error(), "lr must be a number >= 0, not nan");
    CHECK(cf_optim_get_steps(o) == 1);
    CHECK(cf_optim_step(NULL, 0.1f) == -1);
    CHECK_HAS(cf_last_error(), "error: cf_optim_step: no optimizer");
    cf_optim_free(o);
    free_model(t);
}

/* A model made but not bound for training: the optimizer can be made once the
 * parameters exist, and a step says the gradients are missing. */
TEST(model_without_parameters_or_gradients)
{
    cf_model *m = cf_model_new();
    cf_node *a = cf_param(m, "a", CF_SHAPE(5), CF_ONES);
    cf_output(m, cf_sum(m, a));
    cf_optim_opts opts = cf_optim_defaults("sgd");
    CHECK(cf_optim_new(m, &opts) == NULL);
    CHECK_HAS(cf_last_error(), "error: cf_optim_new: the model's parameters do not exist yet");
    CHECK(cf_model_init_params(m) == 0);
    cf_optim *o = cf_optim_new(m, &opts);
    CHECK(o != NULL);
    CHECK(cf_optim_step(o, 0.1f) == -1);
    CHECK_HAS(cf_last_error(), "error: cf_optim_step: the model has no gradients (bind it with CF_TRAIN)");
    cf_exec *e = cf_bind(m, 2, CF_TRAIN);
    CHECK(e != NULL);
    cf_model_param_grad(m, 0)[2] = 1;
    CHECK(cf_optim_step(o, 0.1f) == 0);   /* the same optimizer works once gradients exist */
    CHECK_NEAR(cf_model_param_data(m, 0)[2], 0.9, 1e-7);
    cf_optim_free(o);
    cf_exec_free(e);
    cf_model_free(m);
}

/* A step allocates nothing, for every optimizer, with clipping and weight decay. */
TEST(step_allocates_nothing)
{
#ifdef ALLOC_COUNT_OFF
    printf("optim: allocation counting is off under the sanitizers\n");
#else
    const char *kinds[] = {"sgd", "momentum", "nesterov", "adam", "adamw"};
    for (int threads = 1; threads <= 2; threads++) {
        cf_set_threads(threads);
        for (int k = 0; k < 5; k++) {
            fixture t = make_model(0);
            cf_optim_opts opts = cf_optim_defaults(kinds[k]);
            opts.clip_norm = 0.5f;
            opts.weight_decay = 0.01f;
            cf_optim *o = cf_optim_new(t.m, &opts);
            put_grads(t, 0);
            CHECK(cf_optim_step(o, opts.lr) == 0);   /* the pool starts here */
            allocations = 0;
            counting = 1;
            for (int s = 1; s < STEPS; s++) {
                put_grads(t, s);
                cf_optim_step(o, opts.lr);
            }
            cf_model_param_grad(t.m, t.a)[0] = NAN;
            cf_optim_step(o, opts.lr);
            counting = 0;
            CHECK(allocations == 0);
            cf_optim_free(o);
            free_model(t);
        }
    }
    cf_set_threads(0);
#endif
}

/* ---- options ---- */

TEST(defaults)
{
    cf_optim_opts o = cf_optim_defaults("sgd");
    CHECK(strcmp(o.name, "sgd") == 0 && o.lr == 0.1f && o.momentum == 0.9f && o.weight_decay == 0 &&
          o.clip_norm == 0);
    o = cf_optim_defaults("nesterov");
    CHECK(strcmp(o.name, "nesterov") == 0 && o.lr == 0.1f && o.momentum == 0.9f);
    o = cf_optim_defaults("adam");
    CHECK(strcmp(o.name, "adam") == 0 && o.lr == 0.001f && o.beta1 == 0.9f && o.beta2 == 0.999f &&
          o.eps == 1e-8f && o.weight_decay == 0 && o.clip_norm == 0);
    o = cf_optim_defaults("adamw");
    CHECK(strcmp(o.name, "adamw") == 0 && o.lr == 0.001f && o.weight_decay == 0.01f);
    CHECK(cf_optim_defaults("rmsprop").name == NULL);
    CHECK(cf_optim_defaults(NULL).name == NULL);
    CHECK(cf_optim_defaults("Adam").name == NULL);
}

TEST(bad_options_refused)
{
    fixture t = make_model(0);
    cf_optim_opts o = cf_optim_defaults("adam");
    o.name = "rmsprop";
    CHECK(cf_optim_new(t.m, &o) == NULL);
    CHECK(strcmp(cf_last_error(), "error: unknown optimizer 'rmsprop' (sgd, momentum, nesterov, adam, adamw)") == 0);
    o.name = NULL;
    CHECK(cf_optim_new(t.m, &o) == NULL);
    CHECK_HAS(cf_last_error(), "error: cf_optim_new: no optimizer name (sgd, momentum");
    CHECK(cf_optim_new(t.m, NULL) == NULL);
    CHECK_HAS(cf_last_error(), "error: cf_optim_new: no options");
    o = cf_optim_defaults("sgd");
    CHECK(cf_optim_new(NULL, &o) == NULL);
    CHECK_HAS(cf_last_error(), "error: cf_optim_new: no model");

    struct { const char *optim; int field; float v; const char *msg; } bad[] = {
        {"sgd", 0, 0, "error: optimizer sgd: lr must be a number > 0, not 0"},
        {"adam", 0, -1e-3f, "error: optimizer adam: lr must be a number > 0, not -0.001"},
        {"sgd", 0, NAN, "error: optimizer sgd: lr must be a number > 0, not nan"},
        {"sgd", 0, INFINITY, "error: optimizer sgd: lr must be a number > 0, not inf"},
        {"momentum", 1, 1, "error: optimizer momentum: momentum must be in [0, 1), not 1"},
        {"momentum", 1, -0.5f, "error: optimizer momentum: momentum must be in [0, 1), not -0.5"},
        {"nesterov", 1, 0, "error: optimizer nesterov: momentum must be in (0, 1), not 0"},
        {"adam", 2, 1, "error: optimizer adam: beta1 must be in [0, 1), not 1"},
        {"adamw", 2, -0.1f, "error: optimizer adamw: beta1 must be in [0, 1), not -0.1"},
        {"adam", 3, 1, "error: optimizer adam: beta2 must be in [0, 1), not 1"},
        {"adam", 3, NAN, "error: optimizer adam: beta2 must be in [0, 1), not nan"},
        {"adam", 4, 0, "error: optimizer adam: eps must be a number > 0, not 0"},
        {"sgd", 5, -0.01f, "error: optimizer sgd: weight_decay must be a number >= 0, not -0.01"},
        {"adamw", 5, -1, "error: optimizer adamw: weight_decay must be a number >= 0, not -1"},
        {"adam", 6, -1, "error: optimizer adam: clip_norm must be a number >= 0 (0: no clipping), not -1"},
        {"sgd", 6, INFINITY, "error: optimizer sgd: clip_norm must be a number >= 0 (0: no clipping), not inf"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        o = cf_optim_defaults(bad[i].optim);
        float *f[] = {&o.lr, &o.momentum, &o.beta1, &o.beta2, &o.eps, &o.weight_decay, &o.clip_norm};
        *f[bad[i].field] = bad[i].v;
        CHECK(cf_optim_new(t.m, &o) == NULL);
        CHECK(strcmp(cf_last_error(), bad[i].msg) == 0);
        if (strcmp(cf_last_error(), bad[i].msg)) fprintf(stderr, "  got: %s\n", cf_last_error());
    }
    /* fields an optimizer does not use are not checked */
    o = cf_optim_defaults("sgd");
    o.beta1 = 5;
    o.momentum = -1;
    cf_optim *ok = cf_optim_new(t.m, &o);
    CHECK(ok != NULL);
    cf_optim_free(ok);
    /* momentum 0 is allowed for "momentum" (PyTorch's SGD with momentum 0) */
    o = cf_optim_defaults("momentum");
    o.momentum = 0;
    ok = cf_optim_new(t.m, &o);
    CHECK(ok != NULL);
    cf_optim_free(ok);
    free_model(t);
}

/* ---- schedules ---- */

static float sched(const char *spec, float base, long step, long total, long per_epoch)
{
    float lr = -1;
    int rc = cf_schedule_lr(spec, base, step, total, per_epoch, &lr);
    if (rc) fprintf(stderr, "%s: %s\n", spec, cf_last_error());
    CHECK(rc == 0);
    return lr;
}

TEST(schedule_const_and_step)
{
    for (long s = 0; s < 1000; s += 37) CHECK(sched("const", 0.1f, s, 1000, 10) == 0.1f);
    /* step:2:0.5 with 10 steps an epoch: epochs 0-1 base, 2-3 half, 4-5 a quarter */
    CHECK(sched("step:2:0.5", 0.1f, 0, 100, 10) == 0.1f);
    CHECK(sched("step:2:0.5", 0.1f, 19, 100, 10) == 0.1f);
    CHECK(sched("step:2:0.5", 0.1f, 20, 100, 10) == 0.05f);
    CHECK(sched("step:2:0.5", 0.1f, 39, 100, 10) == 0.05f);
    CHECK(sched("step:2:0.5", 0.1f, 40, 100, 10) == 0.025f);
    CHECK_NEAR(sched("step:5:0.1", 1.0f, 5 * 7 * 3, 0, 7), 1e-3, 1e-8);   /* epoch 15: 0.1^3 */
    CHECK_NEAR(sched("step:1:1e-1", 1.0f, 7, 0, 7), 0.1, 1e-8);          /* G in any float notation */
    CHECK(sched("step:1:2", 1.0f, 14, 0, 7) == 4.0f);                    /* G > 1 grows */
}

TEST(schedule_cosine)
{
    CHECK(sched("cosine", 0.1f, 0, 100, 10) == 0.1f);
    CHECK_NEAR(sched("cosine", 0.1f, 50, 100, 10), 0.05, 1e-8);
    CHECK_NEAR(sched("cosine", 0.1f, 25, 100, 10), 0.1 * (1 + cos(M_PI / 4)) / 2, 1e-8);
    CHECK_NEAR(sched("cosine", 0.1f, 99, 100, 10), 0.1 * (1 + cos(M_PI * 0.99)) / 2, 1e-8);
    CHECK(sched("cosine", 0.1f, 100, 100, 10) == 0.0f);
    CHECK(sched("cosine", 0.1f, 150, 100, 10) == 0.0f);   /* past the end it stays at 0 */
    float prev = 1;
    for (long s = 0; s < 100; s++) {
        float lr = sched("cosine", 0.1f, s, 100, 10);
        CHECK(lr <= prev && lr > 0);
        prev = lr;
    }
}

TEST(schedule_warmup)
{
    /* warmup:4 alone is const+warmup:4: base/4, 2 base/4, 3 base/4, base, base ... */
    for (int plain = 0; plain < 2; plain++) {
        const char *spec = plain ? "const+warmup:4" : "warmup:4";
        CHECK(sched(spec, 0.4f, 0, 100, 10) == 0.1f);
        CHECK(sched(spec, 0.4f, 1, 100, 10) == 0.2f);
        CHECK_NEAR(sched(spec, 0.4f, 2, 100, 10), 0.3, 1e-7);
        CHECK(sched(spec, 0.4f, 3, 100, 10) == 0.4f);
        CHECK(sched(spec, 0.4f, 50, 100, 10) == 0.4f);
    }
    /* cosine+warmup:10: the cosine's value, ramped over the first 10 steps */
    CHECK_NEAR(sched("cosine+warmup:10", 0.1f, 0, 100, 10), 0.01, 1e-8);
    CHECK_NEAR(sched("cosine+warmup:10", 0.1f, 4, 100, 10), 0.1 * (1 + cos(M_PI * 0.04)) / 2 * 0.5, 1e-8);
    CHECK_NEAR(sched("cosine+warmup:10", 0.1f, 9, 100, 10), 0.1 * (1 + cos(M_PI * 0.09)) / 2, 1e-8);
    CHECK_NEAR(sched("cosine+warmup:10", 0.1f, 60, 100, 10), 0.1 * (1 + cos(M_PI * 0.6)) / 2, 1e-8);
    /* step:1:0.5+warmup:5, 10 steps an epoch */
    CHECK_NEAR(sched("step:1:0.5+warmup:5", 1.0f, 0, 0, 10), 0.2, 1e-8);
    CHECK(sched("step:1:0.5+warmup:5", 1.0f, 4, 0, 10) == 1.0f);
    CHECK(sched("step:1:0.5+warmup:5", 1.0f, 10, 0, 10) == 0.5f);
    /* a warmup longer than the run */
    CHECK_NEAR(sched("warmup:1000", 1.0f, 9, 10, 10), 0.01, 1e-8);
}

TEST(schedule_errors)
{
    struct { const char *spec; float base; long step, total, per_epoch; const char *msg; } bad[] = {
        {"step:0:0.1", 0.1f, 0, 100, 10,
         "error: learning-rate schedule 'step:0:0.1': E (the epochs between decays) must be a whole number >= 1, "
         "not '0' (e.g. step:5:0.1)"},
        {"cosine+warmup:-1", 0.1f, 0, 100, 10,
         "error: learning-rate schedule 'cosine+warmup:-1': N (the warmup steps) must be a whole number >= 1, "
         "not '-1'"},
        {"frob", 0.1f, 0, 100, 10,
         "error: unknown learning-rate schedule 'frob' (const, step:E:G, cosine; each may end in +warmup:N)"},
        {"step:5", 0.1f, 0, 100, 10, "E (the epochs between decays) must be a whole number >= 1, not '5'"},
        {"step:5:", 0.1f, 0, 100, 10, "G (the decay factor) must be a number > 0, not ''"},
        {"step:5:-1", 0.1f, 0, 100, 10, "G (the decay factor) must be a number > 0, not '-1'"},
        {"step:5:0", 0.1f, 0, 100, 10, "G (the decay factor) must be a number > 0, not '0'"},
        {"step:5:0.1x", 0.1f, 0, 100, 10, "not '0.1x'"},
        {"step:5:nan", 0.1f, 0, 100, 10, "not 'nan'"},
        {"step:5:0.1:3", 0.1f, 0, 100, 10, "not '0.1:3'"},
        {"step:x:0.1", 0.1f, 0, 100, 10, "E (the epochs between decays) must be a whole number >= 1, not 'x'"},
        {"step:1.5:0.1", 0.1f, 0, 100, 10, "not '1.5'"},
        {"step:99999999999999999999:0.1", 0.1f, 0, 100, 10, "E (the epochs between decays)"},
        {"step:", 0.1f, 0, 100, 10, "E (the epochs between decays)"},
        {"warmup:0", 0.1f, 0, 100, 10, "N (the warmup steps) must be a whole number >= 1, not '0'"},
        {"const+warmup:", 0.1f, 0, 100, 10, "N (the warmup steps) must be a whole number >= 1, not ''"},
        {"cosine+warmup:3x", 0.1f, 0, 100, 10, "not '3x'"},
        {"cosine+warmup:+3", 0.1f, 0, 100, 10, "not '+3'"},
        {"frob+warmup:3", 0.1f, 0, 100, 10, "error: unknown learning-rate schedule 'frob+warmup:3'"},
        {"", 0.1f, 0, 100, 10, "error: unknown learning-rate schedule ''"},
        {"Cosine", 0.1f, 0, 100, 10, "error: unknown learning-rate schedule 'Cosine'"},
        {"cosine ", 0.1f, 0, 100, 10, "error: unknown learning-rate schedule 'cosine '"},
        {"const+cosine", 0.1f, 0, 100, 10, "error: unknown learning-rate schedule 'const+cosine'"},
        {"cosine", 0.1f, 0, 0, 10, "error: learning-rate schedule 'cosine' needs the run's total steps (got 0)"},
        {"cosine+warmup:5", 0.1f, 0, -3, 10, "needs the run's total steps (got -3)"},
        {"step:1:0.5", 0.1f, 0, 100, 0, "error: learning-rate schedule 'step:1:0.5' needs the steps per epoch (got 0)"},
        {"const", 0.1f, -1, 100, 10, "error: learning-rate schedule 'const': step -1 is negative"},
        {"const", 0, 0, 100, 10,
         "error: learning-rate schedule 'const': the base learning rate must be a number > 0, not 0"},
        {"cosine", NAN, 0, 100, 10, "the base learning rate must be a number > 0, not nan"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        float lr = 123;
        CHECK(cf_schedule_lr(bad[i].spec, bad[i].base, bad[i].step, bad[i].total, bad[i].per_epoch, &lr) == -1);
        CHECK_HAS(cf_last_error(), bad[i].msg);
        CHECK(lr == 123);
    }
    float lr = 123;
    CHECK(cf_schedule_lr(NULL, 0.1f, 0, 10, 10, &lr) == -1);
    CHECK_HAS(cf_last_error(), "error: no learning-rate schedule (const, step:E:G, cosine");
    CHECK(cf_schedule_lr("const", 0.1f, 0, 10, 10, NULL) == -1);
    CHECK_HAS(cf_last_error(), "error: cf_schedule_lr: no place for the result");
    /* const needs neither total steps nor steps per epoch */
    CHECK(cf_schedule_lr("const", 0.1f, 5, 0, 0, &lr) == 0 && lr == 0.1f);
}

int main(void)
{
    make_data();
    RUN(golden_generator_matches);
    RUN(golden_clip_norms_are_on_both_sides);
    RUN(golden_against_pytorch);
    RUN(golden_two_threads);
    RUN(golden_compare_fails_on_a_wrong_value);
    RUN(state_names_and_counts);
    RUN(state_restore_continues_exactly);
    RUN(nonfinite_gradient_changes_nothing);
    RUN(frozen_parameters_untouched_and_gradients_zeroed);
    RUN(model_state_is_not_trained);
    RUN(clip_norm_by_hand);
    RUN(clip_norm_over_chunks_and_threads);
    RUN(step_lr_zero_and_refused);
    RUN(model_without_parameters_or_gradients);
    RUN(step_allocates_nothing);
    RUN(defaults);
    RUN(bad_options_refused);
    RUN(schedule_const_and_step);
    RUN(schedule_cosine);
    RUN(schedule_warmup);
    RUN(schedule_errors);
    return test_summary("optim");
}
