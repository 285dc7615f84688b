/* vmath_avx512.c - rt/vmath.h's maps sixteen lanes at a time, for CPUs with AVX-512.
 * Built with -mavx512f and -ffp-contract=off (AVX-512F has multiply-adds, which
 * would fuse), as vmath_avx2.c is without FMA: each lane goes
 * through the same operations as in the 4-lane build, and gives the same bits. */
#define CF_VMATH_LANES 16
#include "rt/vmath.h"

void cf_vexp_avx512(float *y, const float *x, size_t n) { CF_V4_MAP(cf_v4_exp, y, x, n); }
void cf_vgelu_avx512(float *y, const float *x, size_t n, int exact) { cf_vgelu(y, x, n, exact); }
void cf_vgelu_grad_avx512(float *dx, const float *x, const float *dy, size_t n, int exact, int acc)
{
    cf_vgelu_grad(dx, x, dy, n, exact, acc);
}
void cf_vdropout_avx512(float *y, float *f, const float *x, size_t n, uint32_t first, uint32_t k1, uint32_t k2,
                        uint32_t thr, float scale)
{
    cf_vdropout(y, f, x, n, first, k1, k2, thr, scale);
}
