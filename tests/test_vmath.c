/* test_vmath.c - the vector exp, log, sigmoid and tanh (src/rt/vmath.h) against
 * double precision (and GELU's two forms and their derivatives, with bounds of their
 * own, at the end): dense sweeps of the ranges that matter, a sweep of every float
 * exponent (a fixed stride through all 2^32 bit patterns), the special values; an
 * element's result the same wherever it sits in an array; and the ops that use them
 * giving the same bits at any thread count.
 *
 * The error of a result is in ulps of the exact value (the spacing of floats there,
 * the subnormals' spacing below FLT_MIN), and relative where the exact value is a
 * normal float; each function prints its worst and fails above the bounds. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "cflux.h"
#include "rt/cpu.h"
#include "rt/vmath.h"
#include "test.h"

#define MAX_ULP 4.0        /* worst error allowed, in ulps */
#define MAX_REL 5e-7       /* worst relative error allowed, normal results */
#define MAX_ABS_NEAR0 1e-7 /* sigmoid and tanh: worst absolute error where |value| < 0.1 */

static double ref_exp(double x) { return exp(x); }
static double ref_log(double x) { return log(x); }
static double ref_tanh(double x) { return tanh(x); }
static double ref_sigmoid(double x)
{
    return x < 0 ? exp(x) / (1 + exp(x)) : 1 / (1 + exp(-x));
}

typedef struct {
    const char *name;
    void (*fn)(float *y, const float *x, size_t n);
    double (*ref)(double);
    double ulp, rel, abs0;   /* worst so far */
    float ulp_at, rel_at;
    long count;
} fn_check;

static void run_exp(float *y, const float *x, size_t n) { cf_vexp(y, x, n); }
static void run_log(float *y, const float *x, size_t n) { cf_vlog(y, x, n); }
static void run_sigmoid(float *y, const float *x, size_t n) { cf_vsigmoid(y, x, n); }
static void run_tanh(float *y, const float *x, size_t n) { cf_vtanh(y, x, n); }

static fn_check checks[] = {
    {"exp", run_exp, ref_exp, 0, 0, 0, 0, 0, 0},
    {"log", run_log, ref_log, 0, 0, 0, 0, 0, 0},
    {"sigmoid", run_sigmoid, ref_sigmoid, 0, 0, 0, 0, 0, 0},
    {"tanh", run_tanh, ref_tanh, 0, 0, 0, 0, 0, 0},
};
enum { NCHECKS = sizeof checks / sizeof checks[0] };

/* The error of got in ulps of the exact value want; HUGE_VAL for a wrong NaN, a
 * wrong infinity or a wrong sign of zero. */
static double ulp_error(float got, double want)
{
    if (isnan(want)) return isnan(got) ? 0 : HUGE_VAL;
    if (isnan(got)) return HUGE_VAL;
    const double edge = ldexp(1.0, 128) * (1 - ldexp(1.0, -25));   /* rounds to inf from here */
    if (isinf(got) && fabs(want) >= edge && (got > 0) == (want > 0)) return 0;
    if (isinf(want)) return HUGE_VAL;   /* a finite result for an infinite value */
    if (want == 0 && got == 0 && signbit(got) != signbit(want)) return HUGE_VAL;
    double g = isinf(got) ? copysign(ldexp(1.0, 128), got) : got;
    double w = fabs(want), ulp;
    if (w < FLT_MIN) ulp = ldexp(1.0, -149);
    else {
        int e;
        frexp(w, &e);   /* w = f 2^e, f in [0.5, 1) */
        ulp = ldexp(1.0, e - 24);
    }
    return fabs(g - want) / ulp;
}

/* Compare c's function with its reference on x[0..n). */
static void check_block(fn_check *c, const float *x, size_t n)
{
    static float y[4096];
    for (size_t i0 = 0; i0 < n; i0 += 4096) {
        size_t m = n - i0 < 4096 ? n - i0 : 4096;
        c->fn(y, x + i0, m);
        for (size_t i = 0; i < m; i++) {
            float xi = x[i0 + i];
            double want = c->ref((double)xi);
            double u = ulp_error(y[i], want);
            if (u > c->ulp) c->ulp = u, c->ulp_at = xi;
            if (fabs(want) >= FLT_MIN && fabs(want) <= FLT_MAX && !isinf(y[i])) {
                double r = fabs(y[i] - want) / fabs(want);
                if (r > c->rel) c->rel = r, c->rel_at = xi;
            }
            if (fabs(want) < 0.1 && fabs(y[i] - want) > c->abs0) c->abs0 = fabs(y[i] - want);
        }
        c->count += (long)m;
    }
}

/* n evenly spaced points in [a, b] through every function. */
static void sweep(double a, double b, size_t n)
{
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = (float)(a + (b - a) * (double)i / (double)(n - 1));
    for (int k = 0; k < NCHECKS; k++) check_block(&checks[k], x, n);
    free(x);
}

TEST(dense_sweeps)
{
    sweep(-100, 100, 2000000);
    sweep(-1e-3, 1e-3, 200001);
    sweep(-0.7, -0.55, 200000);        /* tanh's change of method at 0.625 */
    sweep(0.55, 0.7, 200000);
    sweep(-88.8, -86.5, 200000);       /* exp: normal results end at -87.34 */
    sweep(86.5, 88.8, 200000);         /* exp: overflow from 88.72 */
    sweep(-104.5, -102.5, 200000);     /* exp: underflow to 0 from -103.97 */
    sweep(8.5, 9.5, 100000);           /* tanh rounds to 1 */
    sweep(-9.5, -8.5, 100000);
    sweep(0.5, 2, 1000000);            /* log: around 1 and m's range */
    sweep(0.999, 1.001, 200001);
    sweep(1e-30, 1e-20, 100000);
}

/* Every 2039th bit pattern: every exponent, both signs, infinities and NaNs. */
TEST(all_floats)
{
    enum { STRIDE = 2039, BLOCK = 1 << 16 };
    float *x = malloc(BLOCK * sizeof *x);
    size_t n = 0;
    for (uint64_t b = 0; b <= UINT32_MAX; b += STRIDE) {
        uint32_t u = (uint32_t)b;
        memcpy(&x[n++], &u, sizeof u);
        if (n == BLOCK || b + STRIDE > UINT32_MAX) {
            for (int k = 0; k < NCHECKS; k++) check_block(&checks[k], x, n);
            n = 0;
        }
    }
    free(x);
}

/* The eight-lane maps (rt/vmath_avx2.c) give the four-lane maps' bits: every 2039th
   bit pattern, then arrays of every length up to 40, so every tail is tried. */
TEST(avx2_same_bits)
{
#if defined(__x86_64__)
    if (!cf_cpu_avx2(cf_cpu())) {
        printf("  (this CPU has no AVX2)\n");
        return;
    }
    void (*four[])(float *, const float *, size_t) = {run_exp, run_log, run_sigmoid, run_tanh};
    void (*eight[])(float *, const float *, size_t) = {cf_vexp_avx2, cf_vlog_avx2, cf_vsigmoid_avx2,
                                                       cf_vtanh_avx2};
    enum { STRIDE = 2039, N = (int)(UINT32_MAX / STRIDE) + 1 };
    float *x = malloc(N * sizeof *x), *y4 = malloc(N * sizeof *y4), *y8 = malloc(N * sizeof *y8);
    for (int i = 0; i < N; i++) {
        uint32_t u = (uint32_t)((uint64_t)i * STRIDE);
        memcpy(&x[i], &u, sizeof u);
    }
    for (int f = 0; f < 4; f++) {
        four[f](y4, x, N);
        eight[f](y8, x, N);
        CHECK(memcmp(y4, y8, N * sizeof *y4) == 0);
        for (size_t n = 1; n <= 40; n++) {
            const float *xs = x + 1000003 + 97 * n;   /* mixed values, any alignment */
            four[f](y4, xs, n);
            eight[f](y8, xs, n);
            CHECK(memcmp(y4, y8, n * sizeof *y4) == 0);
        }
    }
    free(x);
    free(y4);
    free(y8);
#endif
}

static float f1(void (*fn)(float *, const float *, size_t), float x)
{
    float y;
    fn(&y, &x, 1);
    return y;
}

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

TEST(special_values)
{
    const float inf = INFINITY, nan = NAN, dmin = 0x1p-149f;
    CHECK(f1(run_exp, 0.0f) == 1 && f1(run_exp, -0.0f) == 1);
    CHECK(f1(run_exp, inf) == inf && same_bits(f1(run_exp, -inf), 0.0f));
    CHECK(isnan(f1(run_exp, nan)) && isnan(f1(run_exp, -nan)));
    CHECK(f1(run_exp, FLT_MAX) == inf && same_bits(f1(run_exp, -FLT_MAX), 0.0f));
    CHECK(f1(run_exp, dmin) == 1 && f1(run_exp, FLT_MIN) == 1);
    CHECK(f1(run_exp, 88.72283f) < inf && f1(run_exp, 88.72284f) == inf);
    CHECK(f1(run_exp, -103.9f) == dmin && f1(run_exp, -104.0f) == 0);

    CHECK(f1(run_log, 1.0f) == 0);
    CHECK(f1(run_log, 0.0f) == -inf && f1(run_log, -0.0f) == -inf);
    CHECK(f1(run_log, inf) == inf && isnan(f1(run_log, -inf)));
    CHECK(isnan(f1(run_log, nan)) && isnan(f1(run_log, -1.0f)) && isnan(f1(run_log, -dmin)));
    CHECK_NEAR(f1(run_log, dmin), log(0x1p-149), 1e-5);
    CHECK_NEAR(f1(run_log, FLT_MAX), log(FLT_MAX), 1e-5);

    CHECK(f1(run_sigmoid, 0.0f) == 0.5f && f1(run_sigmoid, -0.0f) == 0.5f);
    CHECK(f1(run_sigmoid, inf) == 1 && same_bits(f1(run_sigmoid, -inf), 0.0f));
    CHECK(f1(run_sigmoid, FLT_MAX) == 1 && same_bits(f1(run_sigmoid, -FLT_MAX), 0.0f));
    CHECK(isnan(f1(run_sigmoid, nan)));

    CHECK(same_bits(f1(run_tanh, 0.0f), 0.0f) && same_bits(f1(run_tanh, -0.0f), -0.0f));
    CHECK(f1(run_tanh, inf) == 1 && f1(run_tanh, -inf) == -1);
    CHECK(f1(run_tanh, FLT_MAX) == 1 && f1(run_tanh, -FLT_MAX) == -1);
    CHECK(f1(run_tanh, dmin) == dmin && f1(run_tanh, -FLT_MIN) == -FLT_MIN);
    CHECK(isnan(f1(run_tanh, nan)) && isnan(f1(run_tanh, -nan)));
}

/* The worst errors, printed; fail above the bounds. Runs after the sweeps. */
TEST(within_bounds)
{
    for (int k = 0; k < NCHECKS; k++) {
        fn_check *c = &checks[k];
        int near0 = c->ref == ref_sigmoid || c->ref == ref_tanh;
        printf("vmath: %-7s %ld points: max %.3f ulp (x = %.9g), max rel %.3g (x = %.9g)", c->name, c->count,
               c->ulp, (double)c->ulp_at, c->rel, (double)c->rel_at);
        if (near0) printf(", max abs %.3g where |y| < 0.1", c->abs0);
        printf("\n");
        CHECK(c->count > 6000000);   /* the sweeps all ran */
        CHECK(c->ulp <= MAX_ULP);
        CHECK(c->rel <= MAX_REL);
        if (near0) CHECK(c->abs0 <= MAX_ABS_NEAR0);
    }
}

/* An element gets the same bits at any offset in any length of array: the tail's
 * padded vector computes what the full vectors do. */
TEST(position_independent)
{
    enum { N = 41 };
    float x[N + 4], whole[N], part[N];
    uint64_t s = 0x9e3779b97f4a7c15u;
    for (int i = 0; i < N + 4; i++) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        x[i] = (float)((double)(s >> 40) / (double)(1u << 24) * 40 - 20);
    }
    for (int k = 0; k < NCHECKS; k++) {
        void (*fn)(float *, const float *, size_t) = checks[k].fn;
        for (int o = 0; o < 4; o++) {
            fn(whole, x + o, N);
            for (int len = 1; len <= N; len++)
                for (int b = 0; b + len <= N; b += 3) {
                    fn(part, x + o + b, (size_t)len);
                    CHECK(memcmp(part, whole + b, (size_t)len * sizeof(float)) == 0);
                }
        }
    }
    /* the softmax helper: exp(x - c) as cf_vexp computes it, and their sum */
    float c = 3.25f, d[N], e[N], y[N];
    for (int len = 1; len <= N; len++) {
        for (int i = 0; i < len; i++) d[i] = x[i] - c;
        cf_vexp(e, d, (size_t)len);
        float sum = cf_vexp_sum(y, x, c, (size_t)len), sum2 = cf_vexp_sum(NULL, x, c, (size_t)len);
        double want = 0;
        for (int i = 0; i < len; i++) want += e[i];
        CHECK(memcmp(y, e, (size_t)len * sizeof(float)) == 0);
        CHECK(same_bits(sum, sum2));
        CHECK_NEAR(sum, want, 1e-6 * want);
    }
}

/* Values x in [lo, hi] where c's function is not correctly rounded: where any other
 * implementation (libm, a scalar loop for the tail) would likely differ from it. */
static void inexact_inputs(const fn_check *c, float *x, size_t n, double lo, double hi)
{
    uint64_t s = 12345;
    for (size_t i = 0; i < n;) {
        float v[64], y[64];
        for (int j = 0; j < 64; j++) {
            s = s * 6364136223846793005u + 1442695040888963407u;
            v[j] = (float)(lo + (hi - lo) * (double)(s >> 40) / (double)(1u << 24));
        }
        c->fn(y, v, 64);
        for (int j = 0; j < 64 && i < n; j++)
            if (y[j] != (float)c->ref((double)v[j])) x[i++] = v[j];
    }
}

/* The output of op on x (B x N) through the engine with `threads` threads. */
static int op_forward(int op, int threads, const float *x, int B, int N, float *y)
{
    cf_set_threads(threads);
    cf_model *m = cf_model_new();
    cf_output(m, cf_unary_at(m, op, cf_input(m, "x", CF_SHAPE(N)), 0, __FILE__, __LINE__, 0));
    cf_exec *e = cf_bind(m, B, 0);
    int ok = e && (memcpy(cf_exec_input(e, 0, NULL), x, (size_t)B * N * sizeof *x), cf_forward(e, 0) == 0);
    size_t n = 0;
    if (ok) memcpy(y, cf_exec_output(e, 0, &n), (size_t)B * N * sizeof *y);
    cf_exec_free(e);
    cf_model_free(m);
    cf_set_threads(0);
    return ok && n == (size_t)B * N;
}

/* sigmoid, tanh, exp and log through the engine, on 3 x 10007 values (the threads'
 * chunks end off multiples of 4), all of them where vmath is not correctly rounded:
 * with 1, 2 and 3 threads the same bits as vmath.h's loop over the whole array.
 * softmax: the same bits at any thread count. */
TEST(ops_same_bits_at_any_thread_count)
{
    enum { B = 3, N = 10007, BN = B * N };
    const struct { int op, check; double lo, hi; } ops[] = {
        {CF_OP_EXP, 0, -20, 20}, {CF_OP_LOG, 1, 0, 100}, {CF_OP_SIGMOID, 2, -20, 20},
        {CF_OP_TANH, 3, -5, 5}, {CF_OP_SOFTMAX, 3, -5, 5},
    };
    float *x = malloc(BN * sizeof *x), *want = malloc(BN * sizeof *want), *y = malloc(BN * sizeof *y);
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        const fn_check *c = &checks[ops[k].check];
        inexact_inputs(c, x, BN, ops[k].lo, ops[k].hi);
        if (ops[k].op == CF_OP_SOFTMAX) CHECK(op_forward(ops[k].op, 1, x, B, N, want));
        else c->fn(want, x, BN);
        for (int threads = 1; threads <= 3; threads++) {
            CHECK(op_forward(ops[k].op, threads, x, B, N, y));
            CHECK(memcmp(want, y, BN * sizeof *y) == 0);
        }
    }
    free(x);
    free(want);
    free(y);
}

/* ---- GELU (its two forms and their derivatives) ---- */

static double ref_sig(double v) { return v < 0 ? exp(v) / (1 + exp(v)) : 1 / (1 + exp(-v)); }
static double ref_v(double x) { return 2 * sqrt(2 / M_PI) * (x + 0.044715 * x * x * x); }
static double ref_gelu(double x, int exact) { return exact ? x * 0.5 * erfc(-x / sqrt(2)) : x * ref_sig(ref_v(x)); }
static double ref_dgelu(double x, int exact)
{
    if (exact) return 0.5 * erfc(-x / sqrt(2)) + x * exp(-x * x / 2) / sqrt(2 * M_PI);
    double s = ref_sig(ref_v(x));
    return s + x * s * (1 - s) * 2 * sqrt(2 / M_PI) * (1 + 3 * 0.044715 * x * x);
}

/* The worst errors of gelu (form `exact`) and its derivative over x[0..n), finite x:
 * y relative where |x| <= 6 and y is a normal float (beyond 6, y is below 1e-8 or x
 * itself, and the error of the exponent, which grows with x², shows), y absolute against max(1, |x|), and the
 * derivative absolute (it lies in [-0.17, 1.13]). */
typedef struct {
    double rel, absy, absd;
    float rel_at, absd_at;
} gelu_err;

static void gelu_block(const float *x, size_t n, int exact, gelu_err *w)
{
    static float y[4096], d[4096], one[4096];
    for (size_t i = 0; i < 4096; i++) one[i] = 1;
    for (size_t i0 = 0; i0 < n; i0 += 4096) {
        size_t m = n - i0 < 4096 ? n - i0 : 4096;
        cf_vgelu(y, x + i0, m, exact);
        cf_vgelu_grad(d, x + i0, one, m, exact, 0);
        for (size_t i = 0; i < m; i++) {
            double xi = x[i0 + i], r = ref_gelu(xi, exact), rd = ref_dgelu(xi, exact);
            if (!isfinite(xi)) continue;
            double ey = fabs(y[i] - r), ed = fabs(d[i] - rd);
            if (fabs(xi) <= 6 && fabs(r) >= FLT_MIN && ey / fabs(r) > w->rel) w->rel = ey / fabs(r), w->rel_at = (float)xi;
            if (ey / fmax(1, fabs(xi)) > w->absy) w->absy = ey / fmax(1, fabs(xi));
            if (!(ed <= w->absd)) w->absd = ed, w->absd_at = (float)xi;
        }
    }
}

/* Dense in [-20, 20] and near 0, and every 2039th bit pattern, against double. */
TEST(gelu_within_bounds)
{
    enum { N = 4000001, STRIDE = 2039, NB = (int)(UINT32_MAX / STRIDE) + 1 };
    float *x = malloc((N > NB ? N : NB) * sizeof *x);
    for (int exact = 0; exact < 2; exact++) {
        gelu_err w = {0};
        for (int i = 0; i < N; i++) x[i] = (float)(-20.0 + 40.0 * i / (N - 1));
        gelu_block(x, N, exact, &w);
        for (int i = 0; i < 200001; i++) x[i] = (float)(-1e-3 + 2e-3 * i / 200000);
        gelu_block(x, 200001, exact, &w);
        for (int i = 0; i < NB; i++) {
            uint32_t u = (uint32_t)((uint64_t)i * STRIDE);
            memcpy(&x[i], &u, sizeof u);
        }
        gelu_block(x, NB, exact, &w);
        printf("vmath: gelu %s: max rel %.3g (x = %.7g, |x| <= 6), max abs %.3g max(1, |x|); derivative max abs "
               "%.3g (x = %.7g)\n",
               exact ? "erf " : "tanh", w.rel, (double)w.rel_at, w.absy, w.absd, (double)w.absd_at);
        CHECK(w.rel <= 8e-6);
        CHECK(w.absy <= 1e-6);
        CHECK(w.absd <= 5e-7);
    }
    free(x);
}

static void gelu_one(float x, int exact, float *y, float *d)
{
    float one = 1;
    cf_vgelu(y, &x, 1, exact);
    cf_vgelu_grad(d, &x, &one, 1, exact, 0);
}

TEST(gelu_special_values)
{
    for (int exact = 0; exact < 2; exact++) {
        float y, d;
        gelu_one(0.0f, exact, &y, &d);
        CHECK(same_bits(y, 0.0f) && d == 0.5f);
        gelu_one(-0.0f, exact, &y, &d);
        CHECK(same_bits(y, -0.0f) && d == 0.5f);
        gelu_one(INFINITY, exact, &y, &d);
        CHECK(y == INFINITY && d == 1);
        gelu_one(-INFINITY, exact, &y, &d);   /* -inf times 0, as PyTorch's */
        CHECK(isnan(y) && d == 0);
        gelu_one(NAN, exact, &y, &d);
        CHECK(isnan(y) && isnan(d));
        gelu_one(FLT_MAX, exact, &y, &d);
        CHECK(y == FLT_MAX && d == 1);
        gelu_one(-FLT_MAX, exact, &y, &d);
        CHECK(same_bits(y, -0.0f) && d == 0);
        gelu_one(0x1p-140f, exact, &y, &d);   /* x / 2 for tiny x */
        CHECK(y == 0x1p-141f && d == 0.5f);
    }
}

/* The eight-lane GELU maps give the four-lane maps' bits, forward and backward (dx
 * written and added to), for arrays of every length up to 40 and a long one. */
TEST(gelu_avx2_same_bits)
{
#if defined(__x86_64__)
    if (!cf_cpu_avx2(cf_cpu())) {
        printf("  (this CPU has no AVX2)\n");
        return;
    }
    enum { N = 100003 };
    float *x = malloc(N * sizeof *x), *g = malloc(N * sizeof *g), *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    uint64_t s = 7;
    for (int i = 0; i < N; i++) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        x[i] = (float)((double)(s >> 40) / (double)(1u << 24) * 24 - 12);
        g[i] = (float)(s >> 52 & 15) - 7.5f;
    }
    for (int exact = 0; exact < 2; exact++)
        for (size_t n = 1; n <= N; n = n < 40 ? n + 1 : (size_t)N) {
            const float *xs = x + (n < 40 ? 1000 + 97 * n : 0);
            cf_vgelu(a, xs, n, exact);
            cf_vgelu_avx2(b, xs, n, exact);
            CHECK(memcmp(a, b, n * sizeof *a) == 0);
            for (int acc = 0; acc < 2; acc++) {
                for (size_t i = 0; i < n; i++) a[i] = b[i] = g[i] * 0.25f;
                cf_vgelu_grad(a, xs, g, n, exact, acc);
                cf_vgelu_grad_avx2(b, xs, g, n, exact, acc);
                CHECK(memcmp(a, b, n * sizeof *a) == 0);
            }
            if (n == N) break;
        }
    free(x);
    free(g);
    free(a);
    free(b);
#endif
}

/* Dropout's masks: the eight-lane map gives the four-lane map's masks and products
 * for arrays of every length up to 40 and a long one, started at any index; the kept
 * fraction is 1 - p; an element's mask follows its index, not where a range starts. */
TEST(dropout_masks)
{
    enum { N = 100003 };
    float *x = malloc(N * sizeof *x), *fa = malloc(N * sizeof *fa), *fb = malloc(N * sizeof *fb);
    float *ya = malloc(N * sizeof *ya), *yb = malloc(N * sizeof *yb);
    for (int i = 0; i < N; i++) x[i] = (float)(i % 17) - 8.0f;
    const uint32_t thr = 1288490189u;   /* p = 0.3 */
    cf_vdropout(ya, fa, x, N, 5, 0x12345678u, 0x9abcdef0u, thr, 1 / 0.7f);
    size_t kept = 0, wrong = 0;
    for (int i = 0; i < N; i++) {
        kept += fa[i] != 0;
        wrong += ya[i] != x[i] * fa[i] || (fa[i] != 0 && fa[i] != 1 / 0.7f);
    }
    CHECK(wrong == 0);
    CHECK(fabs((double)kept / N - 0.7) < 0.005);
    cf_vdropout(yb, fb, x + 1000, 3000, 1005, 0x12345678u, 0x9abcdef0u, thr, 1 / 0.7f);
    CHECK(memcmp(fa + 1000, fb, 3000 * sizeof *fa) == 0);   /* the same elements, the same masks */
    cf_vdropout(yb, fb, x, N, 5, 0x12345679u, 0x9abcdef0u, thr, 1 / 0.7f);
    CHECK(memcmp(fa, fb, N * sizeof *fa) != 0);             /* another key, another mask */
#if defined(__x86_64__)
    if (cf_cpu_avx2(cf_cpu()))
        for (size_t n = 1; n <= N; n = n < 40 ? n + 1 : (size_t)N) {
            cf_vdropout(ya, fa, x, n, (uint32_t)(7 * n), 3u, 4u, thr, 1 / 0.7f);
            cf_vdropout_avx2(yb, fb, x, n, (uint32_t)(7 * n), 3u, 4u, thr, 1 / 0.7f);
            CHECK(memcmp(fa, fb, n * sizeof *fa) == 0 && memcmp(ya, yb, n * sizeof *ya) == 0);
            if (n == N) break;
        }
#endif
    free(x);
    free(fa);
    free(fb);
    free(ya);
    free(yb);
}

/* The sixteen-lane maps (rt/vmath_avx512.c) give the four-lane maps' bits: exp over
 * every 2039th bit pattern, GELU forward and backward and dropout's masks over arrays
 * of every length up to 40 (every tail) and a long one. */
TEST(avx512_same_bits)
{
#if defined(__x86_64__)
    if (!cf_cpu_avx512(cf_cpu())) {
        printf("  (this CPU has no AVX-512)\n");
        return;
    }
    enum { STRIDE = 2039, N = (int)(UINT32_MAX / STRIDE) + 1, M = 100003 };
    float *x = malloc(N * sizeof *x), *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    float *g = malloc(M * sizeof *g), *fa = malloc(M * sizeof *fa), *fb = malloc(M * sizeof *fb);
    for (int i = 0; i < N; i++) {
        uint32_t u = (uint32_t)((uint64_t)i * STRIDE);
        memcpy(&x[i], &u, sizeof u);
    }
    run_exp(a, x, N);
    cf_vexp_avx512(b, x, N);
    CHECK(memcmp(a, b, N * sizeof *a) == 0);
    uint64_t s = 7;
    for (int i = 0; i < M; i++) {   /* from here, x holds mixed values in [-12, 12) */
        s = s * 6364136223846793005u + 1442695040888963407u;
        x[i] = (float)((double)(s >> 40) / (double)(1u << 24) * 24 - 12);
        g[i] = (float)(s >> 52 & 15) - 7.5f;
    }
    for (size_t n = 1; n <= M; n = n < 40 ? n + 1 : (size_t)M) {
        const float *xs = x + (n < 40 ? 1000 + 97 * n : 0);
        run_exp(a, xs, n);
        cf_vexp_avx512(b, xs, n);
        CHECK(memcmp(a, b, n * sizeof *a) == 0);
        for (int exact = 0; exact < 2; exact++) {
            cf_vgelu(a, xs, n, exact);
            cf_vgelu_avx512(b, xs, n, exact);
            CHECK(memcmp(a, b, n * sizeof *a) == 0);
            for (int acc = 0; acc < 2; acc++) {
                for (size_t i = 0; i < n; i++) a[i] = b[i] = g[i] * 0.25f;
                cf_vgelu_grad(a, xs, g, n, exact, acc);
                cf_vgelu_grad_avx512(b, xs, g, n, exact, acc);
                CHECK(memcmp(a, b, n * sizeof *a) == 0);
            }
        }
        cf_vdropout(a, fa, xs, n, (uint32_t)(7 * n), 3u, 4u, 1288490189u, 1 / 0.7f);
        cf_vdropout_avx512(b, fb, xs, n, (uint32_t)(7 * n), 3u, 4u, 1288490189u, 1 / 0.7f);
        CHECK(memcmp(fa, fb, n * sizeof *fa) == 0 && memcmp(a, b, n * sizeof *a) == 0);
        if (n == M) break;
    }
    free(x);
    free(a);
    free(b);
    free(g);
    free(fa);
    free(fb);
#endif
}

int main(void)
{
    RUN(dense_sweeps);
    RUN(all_floats);
    RUN(avx2_same_bits);
    RUN(special_values);
    RUN(within_bounds);
    RUN(position_independent);
    RUN(ops_same_bits_at_any_thread_count);
    RUN(gelu_within_bounds);
    RUN(dropout_masks);
    RUN(gelu_special_values);
    RUN(gelu_avx2_same_bits);
    RUN(avx512_same_bits);
    return test_summary("vmath");
}
