/* vmath.h - exp, log, sigmoid, tanh and GELU of four floats at once, and loops that
 * run them over arrays: the elementwise kernels' transcendental functions.
 *
 *   cf_vtanh(y, x, n);                          y[i] = tanh(x[i]), i < n
 *   float s = cf_vexp_sum(y, x, mx, n);         y[i] = exp(x[i] - mx); s = sum of them
 *   cf_vgelu_grad(dx, x, dy, n, exact, acc);    dx[i] (+)= dy[i] gelu'(x[i])
 *
 * GCC's generic vectors of 4 floats: SSE2 on the baseline x86-64 build, NEON on
 * arm64, scalar code where there is neither; no intrinsics and no -m flags (and
 * vectors of 8, AVX2, in rt/vmath_avx2.c, for CPUs that have it). Each
 * lane is computed alone by the same operations, and an array's last n % 4 elements
 * go through the same function in a padded vector, so an element's result depends on
 * its value only, never on where it sits or which thread's chunk holds it.
 *
 * Accuracy, against double precision over 6.8 million inputs from every exponent
 * (tests/test_vmath.c), subnormal results included: exp 0.98 ulp, log 0.85, tanh
 * 1.3, sigmoid 2.1; the test fails above 4 ulp. Special values: exp(+inf) = +inf,
 * exp(-inf) = 0, exp overflows to +inf above 88.72 and underflows through the
 * subnormals to 0 below -103.97; log(0) = -inf, log(x < 0) = NaN, log(+inf) = +inf;
 * sigmoid and tanh saturate to 0/1 and -1/+1, tanh(-0) = -0; NaN in, NaN out.
 * GELU, both forms: relative error below 3.7e-6 where |x| <= 6 (most of it in the left
 * tail, from the rounding of the exponent, which grows with x²), absolute 1.5e-7
 * max(1, |x|) everywhere; their derivatives within 2.6e-7. */
#ifndef CF_RT_VMATH_H
#define CF_RT_VMATH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Lanes in a vector: 4 unless the including file asks for more (rt/vmath_avx2.c
 * asks for 8 and is built with -mavx2, without -mfma). The same operations on each
 * lane whatever the width, so every width gives the same bits for an element. The
 * names keep their 4. */
#ifndef CF_VMATH_LANES
#define CF_VMATH_LANES 4
#endif
typedef float cf_v4 __attribute__((vector_size(CF_VMATH_LANES * 4)));
typedef int32_t cf_v4i __attribute__((vector_size(CF_VMATH_LANES * 4)));
typedef uint32_t cf_v4u __attribute__((vector_size(CF_VMATH_LANES * 4)));

static inline cf_v4 cf_v4_set1(float a)
{
    cf_v4 v = {0};   /* every lane is set below; gcc -O1 cannot see that and warns */
    for (int i = 0; i < CF_VMATH_LANES; i++) v[i] = a;
    return v;
}

/* m ? a : b lane by lane, m a comparison's result (all ones or all zeros). */
static inline cf_v4 cf_v4_select(cf_v4i m, cf_v4 a, cf_v4 b)
{
    return (cf_v4)(((cf_v4i)a & m) | ((cf_v4i)b & ~m));
}

/* The lanes' bits as integers, and back. */
static inline cf_v4u cf_v4_bits(cf_v4 a) { return (cf_v4u)a; }
static inline cf_v4 cf_v4_from_bits(cf_v4u a) { return (cf_v4)a; }

/* 2^n for integer n in [-126, 127], built in the exponent bits. */
static inline cf_v4 cf_v4_pow2i(cf_v4u n)
{
    return cf_v4_from_bits((n + 127u) << 23);
}

/* exp(x). x = n ln2 + r with |r| <= ln2/2 (ln2 in two parts, so that n ln2 is exact
 * and r keeps its low bits), exp(r) = 1 + r + r^2 Q(r) with Cephes' degree-5 Q,
 * evaluated as three pairs (Estrin) so that the chain of dependent operations stays
 * short, times 2^n. 2^n is applied as 2^(n/2) 2^(n - n/2): both halves are normal
 * floats for every n from -151 to 128, so results near the overflow edge (n = 128)
 * come out right and subnormal results are rounded once, from the exact product.
 * Outside [-104, 88.8] the answer is 0 or +inf, chosen at the end, off the chain;
 * NaN compares false there and goes through the arithmetic as NaN. */
static inline cf_v4 cf_v4_exp(cf_v4 x)
{
    /* n = round(x / ln2): adding 1.5 * 2^23 leaves the integer in the low bits */
    const cf_v4 magic = cf_v4_set1(0x1.8p23f);
    cf_v4 t = x * cf_v4_set1(1.44269504088896341f) + magic;
    cf_v4u n = cf_v4_bits(t) - cf_v4_bits(magic);
    cf_v4 nf = t - magic;
    cf_v4 r = x - nf * cf_v4_set1(0.693359375f);      /* exact: nf * 0.693359375 has 17 bits */
    r = r - nf * cf_v4_set1(-2.12194440e-4f);
    cf_v4 r2 = r * r, r4 = r2 * r2;
    cf_v4 q01 = cf_v4_set1(1.6666665459e-1f) * r + cf_v4_set1(5.0000001201e-1f);
    cf_v4 q23 = cf_v4_set1(8.3334519073e-3f) * r + cf_v4_set1(4.1665795894e-2f);
    cf_v4 q45 = cf_v4_set1(1.9875691500e-4f) * r + cf_v4_set1(1.3981999507e-3f);
    cf_v4 q = (q01 + q23 * r2) + q45 * r4;
    cf_v4 p = (q * r2 + r) + cf_v4_set1(1.0f);
    cf_v4u n1 = (cf_v4u)((cf_v4i)n >> 1);             /* floor(n / 2) */
    cf_v4 y = p * cf_v4_pow2i(n1) * cf_v4_pow2i(n - n1);
    y = cf_v4_select(x > cf_v4_set1(88.8f), cf_v4_set1(__builtin_inff()), y);
    return cf_v4_select(x < cf_v4_set1(-104.0f), cf_v4_set1(0.0f), y);
}

/* log(x). x = m 2^e with m in [sqrt(1/2), sqrt(2)) (subnormals scaled up first);
 * log(m) = f - f^2/2 + f^3 P(f), f = m - 1 exact, by Cephes' degree-8 P evaluated
 * by Estrin's scheme; e ln2 added in two parts, the small one first. */
static inline cf_v4 cf_v4_log(cf_v4 x)
{
    cf_v4i tiny = x < cf_v4_set1(0x1p-126f);
    cf_v4 xs = cf_v4_select(tiny, x * cf_v4_set1(0x1p23f), x);
    cf_v4u k = cf_v4_bits(xs) - cf_v4_bits(cf_v4_set1(0.70710678f));
    cf_v4u e = (cf_v4u)((cf_v4i)k >> 23);             /* the exponent, for m in [sqrt(1/2), sqrt(2)) */
    cf_v4 m = cf_v4_from_bits(cf_v4_bits(xs) - (e << 23));
    cf_v4 ef = __builtin_convertvector((cf_v4i)e, cf_v4) - cf_v4_select(tiny, cf_v4_set1(23.0f), cf_v4_set1(0.0f));
    cf_v4 f = m - cf_v4_set1(1.0f);
    cf_v4 z = f * f, z2 = z * z, z4 = z2 * z2;
    cf_v4 p01 = cf_v4_set1(-2.4999993993e-1f) * f + cf_v4_set1(3.3333331174e-1f);
    cf_v4 p23 = cf_v4_set1(-1.6668057665e-1f) * f + cf_v4_set1(2.0000714765e-1f);
    cf_v4 p45 = cf_v4_set1(-1.2420140846e-1f) * f + cf_v4_set1(1.4249322787e-1f);
    cf_v4 p67 = cf_v4_set1(-1.1514610310e-1f) * f + cf_v4_set1(1.1676998740e-1f);
    cf_v4 p = ((p01 + p23 * z) + (p45 + p67 * z) * z2) + cf_v4_set1(7.0376836292e-2f) * z4;
    cf_v4 y = p * (f * z);
    y = y + ef * cf_v4_set1(-2.12194440e-4f);
    y = y - cf_v4_set1(0.5f) * z;
    y = f + y;
    y = y + ef * cf_v4_set1(0.693359375f);
    const cf_v4 inf = cf_v4_set1(__builtin_inff());
    y = cf_v4_select(x == inf, inf, y);
    y = cf_v4_select(x == cf_v4_set1(0.0f), -inf, y);
    return cf_v4_select(~(x >= cf_v4_set1(0.0f)), cf_v4_set1(__builtin_nanf("")), y);   /* x < 0, NaN */
}

/* 1 / (1 + exp(-x)), as e / (1 + e) with e = exp(-|x|) <= 1: exp never overflows,
 * and for x < 0 the result keeps its relative accuracy down to the subnormals. */
static inline cf_v4 cf_v4_sigmoid(cf_v4 x)
{
    const cf_v4 one = cf_v4_set1(1.0f);
    cf_v4 e = cf_v4_exp(cf_v4_from_bits(cf_v4_bits(x) | 0x80000000u));   /* exp(-|x|) */
    return cf_v4_select(x < cf_v4_set1(0.0f), e, one) / (one + e);
}

/* tanh(x) on a = |x|, sign restored at the end: for a < 0.625 Cephes' odd polynomial
 * a + a^3 P(a^2) (exact near 0), else 1 - 2 / (exp(2a) + 1), which is 1 from
 * a = 9.01 and stays 1 where exp(2a) is +inf. The polynomial sees a clamped
 * argument, so that the branch not taken does not overflow. */
static inline cf_v4 cf_v4_tanh(cf_v4 x)
{
    const cf_v4 one = cf_v4_set1(1.0f), cut = cf_v4_set1(0.625f);
    cf_v4u sign = cf_v4_bits(x) & 0x80000000u;
    cf_v4 a = cf_v4_from_bits(cf_v4_bits(x) & 0x7fffffffu);
    cf_v4 s = cf_v4_select(a < cut, a, cut);
    cf_v4 z = s * s;
    cf_v4 p = cf_v4_set1(-5.70498872745e-3f);
    p = p * z + cf_v4_set1(2.06390887954e-2f);
    p = p * z + cf_v4_set1(-5.37397155531e-2f);
    p = p * z + cf_v4_set1(1.33314422036e-1f);
    p = p * z + cf_v4_set1(-3.33332819422e-1f);
    cf_v4 small = s + s * z * p;
    cf_v4 big = one - cf_v4_set1(2.0f) / (cf_v4_exp(a + a) + one);   /* exp(inf): 1 - 0 */
    cf_v4 t = cf_v4_select(a < cut, small, big);   /* NaN takes big, and stays NaN */
    return cf_v4_from_bits(cf_v4_bits(t) | sign);
}

/* y[i] = F(x[i]) for i < n; y may be x. The last n % 4 through a vector padded with
 * zeros, by the same F. */
#define CF_V4_MAP(F, y, x, n)                                                   \
    do {                                                                       \
        float *y_ = (y);                                                       \
        const float *x_ = (x);                                                 \
        size_t n_ = (n), i_ = 0;                                               \
        for (; i_ + CF_VMATH_LANES <= n_; i_ += CF_VMATH_LANES) {              \
            cf_v4 v_;                                                          \
            memcpy(&v_, x_ + i_, sizeof v_);                                   \
            v_ = F(v_);                                                        \
            memcpy(y_ + i_, &v_, sizeof v_);                                   \
        }                                                                      \
        if (i_ < n_) {                                                         \
            cf_v4 v_ = {0};                                                    \
            memcpy(&v_, x_ + i_, (n_ - i_) * sizeof(float));                   \
            v_ = F(v_);                                                        \
            memcpy(y_ + i_, &v_, (n_ - i_) * sizeof(float));                   \
        }                                                                      \
    } while (0)

static inline void cf_vexp(float *y, const float *x, size_t n) { CF_V4_MAP(cf_v4_exp, y, x, n); }
static inline void cf_vlog(float *y, const float *x, size_t n) { CF_V4_MAP(cf_v4_log, y, x, n); }
static inline void cf_vsigmoid(float *y, const float *x, size_t n) { CF_V4_MAP(cf_v4_sigmoid, y, x, n); }
static inline void cf_vtanh(float *y, const float *x, size_t n) { CF_V4_MAP(cf_v4_tanh, y, x, n); }

/* GELU, PyTorch's two forms, and their derivatives.
 *
 * Tanh form (approximate='tanh'): 0.5 x (1 + tanh u), u = sqrt(2/pi) (x + 0.044715 x^3),
 * computed as x sigma(2u), the same function, which keeps its relative accuracy where
 * 1 + tanh u cancels (x below -3). With e = exp(-|2u|) and r = 1 / (1 + e): sigma(2u) =
 * r or e r, and sigma (1 - sigma) = e r^2, so the derivative
 * sigma + x sigma (1 - sigma) 2u' needs no 1 - sigma either.
 *
 * Erf form (exact): x Phi(x), Phi(x) = 0.5 erfc(-x / sqrt 2). q = 0.5 erfc(|x| / sqrt 2)
 * by Numerical Recipes' erfcc (Chebyshev fit, relative error below 1.2e-7 for every
 * argument): erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z / 2), z^2 = x^2 / 2; then
 * Phi = q for x < 0 and 1 - q otherwise, so that the left tail (where gelu is tiny)
 * keeps its relative accuracy. The derivative is Phi(x) + x phi(x), phi(x) =
 * exp(-x^2 / 2) / sqrt(2 pi).
 *
 * Both derivatives are 0 or 1 exactly from |x| = 20 on, and see x clamped to [-20, 20]
 * (the same values), so that x 2u' and x phi(x) stay finite (0 or 1, not inf times 0).
 *
 * NaN gives NaN; gelu(+inf) = +inf, gelu(-inf) = NaN (-inf times 0, as PyTorch's). */
static inline cf_v4 cf_v4_gelu_tanh_parts(cf_v4 x, cf_v4 *e, cf_v4 *r)
{
    const cf_v4 k = cf_v4_set1(2 * 0.7978845608028654f);   /* 2 sqrt(2/pi) */
    cf_v4 v = k * (x + cf_v4_set1(0.044715f) * x * x * x);     /* 2u */
    *e = cf_v4_exp(cf_v4_from_bits(cf_v4_bits(v) | 0x80000000u));   /* exp(-|2u|) */
    *r = cf_v4_set1(1.0f) / (cf_v4_set1(1.0f) + *e);
    return cf_v4_select(v < cf_v4_set1(0.0f), *e * *r, *r);   /* sigma(2u) */
}

static inline cf_v4 cf_v4_gelu_tanh(cf_v4 x)
{
    cf_v4 e, r;
    return x * cf_v4_gelu_tanh_parts(x, &e, &r);
}

/* x clamped to [-20, 20], NaN kept: where the derivatives are 0 or 1 exactly. */
static inline cf_v4 cf_v4_clamp20(cf_v4 x)
{
    const cf_v4 lim = cf_v4_set1(20.0f);
    x = cf_v4_select(x > lim, lim, x);
    return cf_v4_select(x < -lim, -lim, x);
}

static inline cf_v4 cf_v4_gelu_tanh_grad(cf_v4 x)
{
    x = cf_v4_clamp20(x);
    cf_v4 e, r;
    cf_v4 s = cf_v4_gelu_tanh_parts(x, &e, &r);
    cf_v4 dv = cf_v4_set1(2 * 0.7978845608028654f) * (cf_v4_set1(1.0f) + cf_v4_set1(3 * 0.044715f) * x * x);
    return s + x * dv * (e * r * r);
}

/* q = 0.5 erfc(|x| / sqrt 2) and h = x^2 / 2. */
static inline cf_v4 cf_v4_half_erfc(cf_v4 x, cf_v4 *h)
{
    cf_v4 a = cf_v4_from_bits(cf_v4_bits(x) & 0x7fffffffu);
    cf_v4 t = cf_v4_set1(1.0f) / (cf_v4_set1(1.0f) + cf_v4_set1(0.5f * 0.70710678118654752f) * a);
    cf_v4 p = cf_v4_set1(0.17087277f);
    p = p * t + cf_v4_set1(-0.82215223f);
    p = p * t + cf_v4_set1(1.48851587f);
    p = p * t + cf_v4_set1(-1.13520398f);
    p = p * t + cf_v4_set1(0.27886807f);
    p = p * t + cf_v4_set1(-0.18628806f);
    p = p * t + cf_v4_set1(0.09678418f);
    p = p * t + cf_v4_set1(0.37409196f);
    p = p * t + cf_v4_set1(1.00002368f);
    p = p * t + cf_v4_set1(-1.26551223f);
    *h = cf_v4_set1(0.5f) * x * x;
    return cf_v4_set1(0.5f) * t * cf_v4_exp(p - *h);
}

/* Phi(x), and h = x^2 / 2. */
static inline cf_v4 cf_v4_normal_cdf(cf_v4 x, cf_v4 *h)
{
    cf_v4 q = cf_v4_half_erfc(x, h);
    return cf_v4_select(x < cf_v4_set1(0.0f), q, cf_v4_set1(1.0f) - q);
}

static inline cf_v4 cf_v4_gelu_erf(cf_v4 x)
{
    cf_v4 h;
    return x * cf_v4_normal_cdf(x, &h);
}

static inline cf_v4 cf_v4_gelu_erf_grad(cf_v4 x)
{
    x = cf_v4_clamp20(x);
    cf_v4 h;
    cf_v4 p = cf_v4_normal_cdf(x, &h);
    return p + x * (cf_v4_set1(0.3989422804014327f) * cf_v4_exp(-h));
}

/* y[i] = gelu(x[i]), the erf form when exact, else the tanh form; y may be x. */
static inline void cf_vgelu(float *y, const float *x, size_t n, int exact)
{
    if (exact) CF_V4_MAP(cf_v4_gelu_erf, y, x, n);
    else CF_V4_MAP(cf_v4_gelu_tanh, y, x, n);
}

/* dx[i] = dy[i] gelu'(x[i]), or dx[i] += that when acc; D is the derivative. The last
 * n % 4 through padded vectors, by the same D. */
#define CF_V4_GRAD_MAP(D, dx, x, dy, n, acc)                                    \
    do {                                                                       \
        float *dx_ = (dx);                                                     \
        const float *x_ = (x), *dy_ = (dy);                                    \
        size_t n_ = (n), i_ = 0;                                               \
        for (; i_ + CF_VMATH_LANES <= n_; i_ += CF_VMATH_LANES) {              \
            cf_v4 v_, g_, d_;                                                  \
            memcpy(&v_, x_ + i_, sizeof v_);                                   \
            memcpy(&g_, dy_ + i_, sizeof g_);                                  \
            g_ = g_ * D(v_);                                                   \
            if (acc) {                                                         \
                memcpy(&d_, dx_ + i_, sizeof d_);                              \
                g_ = d_ + g_;                                                  \
            }                                                                  \
            memcpy(dx_ + i_, &g_, sizeof g_);                                  \
        }                                                                      \
        if (i_ < n_) {                                                         \
            size_t m_ = n_ - i_;                                               \
            cf_v4 v_ = {0}, g_ = {0}, d_ = {0};                                \
            memcpy(&v_, x_ + i_, m_ * sizeof(float));                          \
            memcpy(&g_, dy_ + i_, m_ * sizeof(float));                         \
            g_ = g_ * D(v_);                                                   \
            if (acc) {                                                         \
                memcpy(&d_, dx_ + i_, m_ * sizeof(float));                     \
                g_ = d_ + g_;                                                  \
            }                                                                  \
            memcpy(dx_ + i_, &g_, m_ * sizeof(float));                         \
        }                                                                      \
    } while (0)

static inline void cf_vgelu_grad(float *dx, const float *x, const float *dy, size_t n, int exact, int acc)
{
    if (exact) CF_V4_GRAD_MAP(cf_v4_gelu_erf_grad, dx, x, dy, n, acc);
    else CF_V4_GRAD_MAP(cf_v4_gelu_tanh_grad, dx, x, dy, n, acc);
}

#if CF_VMATH_LANES == 4
/* The sum of exp(x[i] - c), i < n, also stored to y[i] unless y is NULL: a softmax's
 * numerators and denominator. Summed in four lanes, (l0 + l1) + (l2 + l3) at the
 * end: the same order for the same n, whatever the threads. */
static inline float cf_vexp_sum(float *y, const float *x, float c, size_t n)
{
    const cf_v4 cv = cf_v4_set1(c);
    cf_v4 acc = {0, 0, 0, 0};
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        cf_v4 v;
        memcpy(&v, x + i, sizeof v);
        v = cf_v4_exp(v - cv);
        if (y) memcpy(y + i, &v, sizeof v);
        acc += v;
    }
    if (i < n) {
        size_t m = n - i;
        cf_v4 v = cv;   /* pads exp(0), masked off below */
        v[0] = x[i];   /* element by element: a loop or memcpy of m would be a call */
        if (m > 1) v[1] = x[i + 1];
        if (m > 2) v[2] = x[i + 2];
        v = cf_v4_exp(v - cv);
        if (y) {
            y[i] = v[0];
            if (m > 1) y[i + 1] = v[1];
            if (m > 2) y[i + 2] = v[2];
        }
        cf_v4i lane = {0, 1, 2, 3};
        acc += cf_v4_select(lane < (cf_v4i){(int32_t)m, (int32_t)m, (int32_t)m, (int32_t)m}, v, cf_v4_set1(0.0f));
    }
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}
#endif

/* Wellons' lowbias32 integer hash, lane by lane. */
static inline cf_v4u cf_v4_mix32(cf_v4u x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

/* Dropout's mask over n elements whose indices start at `first` (below 2^32 each):
 * element i is kept when mix32(mix32(i ^ k1) ^ k2) >= thr, so with probability
 * 1 - thr / 2^32; f[i] = kept ? scale : 0 and y[i] = x[i] f[i]. 32-bit integer
 * arithmetic, as wide as the vector, and an element's mask depends on its index and
 * the key only. */
static inline cf_v4 cf_v4_dropout(cf_v4u index, uint32_t k1, uint32_t k2, uint32_t thr, float scale)
{
    cf_v4u h = cf_v4_mix32(cf_v4_mix32(index ^ k1) ^ k2);
    return cf_v4_select((cf_v4i)(h >= thr), cf_v4_set1(scale), cf_v4_set1(0.0f));
}

static inline void cf_vdropout(float *y, float *f, const float *x, size_t n, uint32_t first, uint32_t k1, uint32_t k2,
                               uint32_t thr, float scale)
{
    cf_v4u lane;
    for (int l = 0; l < CF_VMATH_LANES; l++) lane[l] = (uint32_t)l;
    size_t i = 0;
    for (; i + CF_VMATH_LANES <= n; i += CF_VMATH_LANES) {   /* whole vectors */
        cf_v4 fv = cf_v4_dropout(lane + (first + (uint32_t)i), k1, k2, thr, scale), xv;
        memcpy(&xv, x + i, sizeof xv);
        cf_v4 yv = xv * fv;
        memcpy(f + i, &fv, sizeof fv);
        memcpy(y + i, &yv, sizeof yv);
    }
    if (i < n) {   /* the last n % lanes through a padded vector */
        size_t m = n - i;
        cf_v4 fv = cf_v4_dropout(lane + (first + (uint32_t)i), k1, k2, thr, scale), xv = cf_v4_set1(0.0f);
        memcpy(&xv, x + i, m * sizeof(float));
        cf_v4 yv = xv * fv;
        memcpy(f + i, &fv, m * sizeof(float));
        memcpy(y + i, &yv, m * sizeof(float));
    }
}

#if defined(__x86_64__)
/* The four maps eight lanes at a time (rt/vmath_avx2.c), for CPUs with AVX2
 * (rt/cpu.h): the same results as cf_vexp, cf_vlog, cf_vsigmoid and cf_vtanh. */
void cf_vexp_avx2(float *y, const float *x, size_t n);
void cf_vlog_avx2(float *y, const float *x, size_t n);
void cf_vsigmoid_avx2(float *y, const float *x, size_t n);
void cf_vtanh_avx2(float *y, const float *x, size_t n);
/* cf_vgelu and cf_vgelu_grad, eight at a time: the same results. */
void cf_vgelu_avx2(float *y, const float *x, size_t n, int exact);
void cf_vgelu_grad_avx2(float *dx, const float *x, const float *dy, size_t n, int exact, int acc);
/* cf_vdropout, eight at a time: the same masks. */
void cf_vdropout_avx2(float *y, float *f, const float *x, size_t n, uint32_t first, uint32_t k1, uint32_t k2,
                      uint32_t thr, float scale);
/* cf_vexp, cf_vgelu, cf_vgelu_grad and cf_vdropout sixteen lanes at a time
 * (rt/vmath_avx512.c), for CPUs with AVX-512: the same results. */
void cf_vexp_avx512(float *y, const float *x, size_t n);
void cf_vgelu_avx512(float *y, const float *x, size_t n, int exact);
void cf_vgelu_grad_avx512(float *dx, const float *x, const float *dy, size_t n, int exact, int acc);
void cf_vdropout_avx512(float *y, float *f, const float *x, size_t n, uint32_t first, uint32_t k1, uint32_t k2,
                        uint32_t thr, float scale);
#endif

#endif
