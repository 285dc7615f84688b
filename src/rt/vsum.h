/* vsum.h - sums over float arrays in sixteen interleaved partial sums, the reductions of
 * the normalisations and of a broadcast gradient.
 *
 *   float s = cf_vsum(x, n);                  sum of x[i], i < n
 *   float q = cf_vsum_sqdev(x, n, m);         sum of (x[i] - m)^2
 *
 * Element i goes to partial sum i % 16 (four vectors of four lanes, GCC's generic
 * vectors: SSE2 on the baseline x86-64 build, NEON on arm64), for i below n rounded
 * down to 16; the sixteen are added in a fixed order, (v0 + v1) + (v2 + v3) lane by
 * lane and then the lanes likewise, and the last n % 16 elements added in turn. One
 * accumulator would be a chain of n dependent additions, four cycles each; sixteen are
 * independent chains that run together. The order depends on n alone: the same bits
 * for the same array at any thread count. cf_vsum_load and cf_vsum_fold are there for
 * other sums of the same order (ops/batchnorm.c's gradient). */
#ifndef CF_RT_VSUM_H
#define CF_RT_VSUM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef float cf_vsum_v4 __attribute__((vector_size(16)));
typedef int32_t cf_vsum_v4i __attribute__((vector_size(16)));   /* a comparison's lanes */

static inline cf_vsum_v4 cf_vsum_load(const float *p)
{
    cf_vsum_v4 v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The sixteen partial sums, added in the order above. */
static inline float cf_vsum_fold(const cf_vsum_v4 s[4])
{
    cf_vsum_v4 t = (s[0] + s[1]) + (s[2] + s[3]);
    return (t[0] + t[1]) + (t[2] + t[3]);
}

static inline float cf_vsum(const float *restrict x, size_t n)
{
    cf_vsum_v4 s[4] = {{0}, {0}, {0}, {0}};
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int q = 0; q < 4; q++) s[q] += cf_vsum_load(x + i + 4 * q);
    float r = cf_vsum_fold(s);
    for (; i < n; i++) r += x[i];
    return r;
}

static inline float cf_vsum_sqdev(const float *restrict x, size_t n, float m)
{
    const cf_vsum_v4 mv = {m, m, m, m};
    cf_vsum_v4 s[4] = {{0}, {0}, {0}, {0}};
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int q = 0; q < 4; q++) {
            cf_vsum_v4 d = cf_vsum_load(x + i + 4 * q) - mv;
            s[q] += d * d;
        }
    float r = cf_vsum_fold(s);
    for (; i < n; i++) r += (x[i] - m) * (x[i] - m);
    return r;
}

#endif
