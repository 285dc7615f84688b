/* gemm_tile.h - the micro-kernel, packers and few-row product of the built-in GEMM,
 * written once over GCC vector types (see gemm_impl.h) and included by each ISA's file
 * after it defines:
 *
 *   TILE_MR, TILE_NR   the register tile: TILE_MR rows by TILE_NR columns of C
 *   TILE_VW            floats per vector register (4 SSE, 8 AVX2, 16 AVX-512)
 *   TILE(name)         the file's prefix for each function: name ## _avx2
 *
 * The compiler keeps the tile in registers when the file is compiled for its ISA
 * (TILE_MR * TILE_NR / TILE_VW accumulators, plus the B row and one broadcast); the
 * same source compiled for a narrower ISA still computes the same products, more
 * slowly, which is how tests check the AVX-512 tile on a machine without AVX-512.
 * Sums use fused multiply-adds where the target has them. */
#include <string.h>

#include "rt/gemm_impl.h"

typedef float TILE(vec) __attribute__((vector_size(TILE_VW * sizeof(float))));
/* the same, for loads and stores at any float alignment */
typedef float TILE(uvec) __attribute__((vector_size(TILE_VW * sizeof(float)), aligned(4)));

#define TILE_NV (TILE_NR / TILE_VW)
#ifndef TILE_KERNEL                   /* an ISA file may bring its own kernel and packers */
#define TILE_KERNEL TILE(kernel)
#endif
#ifndef TILE_PACK_B_T
#define TILE_PACK_B_T TILE(pack_b_t)
#endif

__attribute__((unused)) static void TILE(kernel)(int kc, const float *restrict a, const float *restrict b,
                         float *restrict c, ptrdiff_t ldc, float alpha, float beta)
{
    TILE(vec) acc[TILE_MR][TILE_NV];
#pragma GCC unroll 16
    for (int i = 0; i < TILE_MR; i++)
#pragma GCC unroll 4
        for (int j = 0; j < TILE_NV; j++) acc[i][j] = (TILE(vec)){0};
    for (int i = 0; i < TILE_MR; i++) __builtin_prefetch(c + i * ldc, 1);
#pragma GCC unroll 2
    for (int k = 0; k < kc; k++, a += TILE_MR, b += TILE_NR) {
        TILE(vec) bv[TILE_NV];
#pragma GCC unroll 4
        for (int j = 0; j < TILE_NV; j++) bv[j] = *(const TILE(vec) *)(b + j * TILE_VW);
#pragma GCC unroll 16
        for (int i = 0; i < TILE_MR; i++) {
            float ai = a[i];   /* scalar times vector: one broadcast */
#pragma GCC unroll 4
            for (int j = 0; j < TILE_NV; j++) acc[i][j] += ai * bv[j];
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < TILE_MR; i++) {
        TILE(uvec) *ci = (TILE(uvec) *)(c + i * ldc);
        if (beta == 0)
#pragma GCC unroll 4
            for (int j = 0; j < TILE_NV; j++) ci[j] = alpha * acc[i][j];
        else
#pragma GCC unroll 4
            for (int j = 0; j < TILE_NV; j++) ci[j] = alpha * acc[i][j] + beta * ci[j];
    }
}

/* One full A panel when op(A) = A: dst[k*MR + r] = src[r*ld + k]. */
__attribute__((unused)) static void TILE(pack_a_n)(const float *restrict src, ptrdiff_t ld, int kc, float *restrict dst)
{
    for (int k = 0; k < kc; k++, dst += TILE_MR)
#pragma GCC unroll 16
        for (int r = 0; r < TILE_MR; r++) dst[r] = src[r * ld + k];
}

#if TILE_MR == 8 && defined(__AVX2__) && !defined(TILE_PACK_A_N)
#include "rt/transpose8.h"
/* The same for 8-row tiles, eight k at a time through an 8 x 8 transpose. */
static void TILE(pack_a_rows8)(const float *restrict src, ptrdiff_t ld, int kc, float *restrict dst)
{
    int k = 0;
    for (; k + 8 <= kc; k += 8, dst += 64) {
        const float *s = src + k;
        __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + ld), r2 = _mm256_loadu_ps(s + 2 * ld),
               r3 = _mm256_loadu_ps(s + 3 * ld), r4 = _mm256_loadu_ps(s + 4 * ld), r5 = _mm256_loadu_ps(s + 5 * ld),
               r6 = _mm256_loadu_ps(s + 6 * ld), r7 = _mm256_loadu_ps(s + 7 * ld);
        CF_TRANSPOSE8(r0, r1, r2, r3, r4, r5, r6, r7);
        _mm256_storeu_ps(dst, r0); _mm256_storeu_ps(dst + 8, r1);
        _mm256_storeu_ps(dst + 16, r2); _mm256_storeu_ps(dst + 24, r3);
        _mm256_storeu_ps(dst + 32, r4); _mm256_storeu_ps(dst + 40, r5);
        _mm256_storeu_ps(dst + 48, r6); _mm256_storeu_ps(dst + 56, r7);
    }
    for (; k < kc; k++, dst += 8)
        for (int r = 0; r < 8; r++) dst[r] = src[r * ld + k];
}
#define TILE_PACK_A_N TILE(pack_a_rows8)
#endif

/* One full A panel when op(A) = A^T: dst[k*MR + r] = src[k*ld + r]. */
static void TILE(pack_a_t)(const float *restrict src, ptrdiff_t ld, int kc, float *restrict dst)
{
    for (int k = 0; k < kc; k++, src += ld, dst += TILE_MR) memcpy(dst, src, TILE_MR * sizeof(float));
}

/* One full B panel when op(B) = B: dst[k*NR + j] = src[k*ld + j]. */
static void TILE(pack_b_n)(const float *restrict src, ptrdiff_t ld, int kc, float *restrict dst)
{
    for (int k = 0; k < kc; k++, src += ld, dst += TILE_NR)
#pragma GCC unroll 4
        for (int j = 0; j < TILE_NV; j++)
            *(TILE(vec) *)(dst + j * TILE_VW) = *(const TILE(uvec) *)(src + j * TILE_VW);
}

/* One full B panel when op(B) = B^T: dst[k*NR + j] = src[j*ld + k], a block of eight
   k at a time so that each source row is read in runs. */
__attribute__((unused)) static void TILE(pack_b_t)(const float *restrict src, ptrdiff_t ld, int kc, float *restrict dst)
{
    int k = 0;
    for (; k + 8 <= kc; k += 8)
        for (int j = 0; j < TILE_NR; j++)
#pragma GCC unroll 8
            for (int q = 0; q < 8; q++) dst[(k + q) * TILE_NR + j] = src[j * ld + k + q];
    for (; k < kc; k++)
        for (int j = 0; j < TILE_NR; j++) dst[k * TILE_NR + j] = src[j * ld + k];
}

/* One row of C from column *j0 on, in blocks of `strips` strips of TILE_NR columns
   while whole blocks fit; *j0 moves past them. Inlined with a constant `strips`, so
   the accumulators stay in registers. */
static inline __attribute__((always_inline)) void TILE(row_strips)(int strips, int *j0, int n, int kk, float alpha,
                                                                   const float *restrict A, ptrdiff_t sak,
                                                                   const float *restrict B, ptrdiff_t ldb,
                                                                   float beta, float *restrict C)
{
    for (; *j0 + strips * TILE_NR <= n; *j0 += strips * TILE_NR) {
        TILE(vec) acc[8 * TILE_NV];
        int w = strips * TILE_NV;
#pragma GCC unroll 16
        for (int j = 0; j < w; j++) acc[j] = (TILE(vec)){0};
        const float *bk = B + *j0;
        for (int k = 0; k < kk; k++, bk += ldb) {
            float ak = A[k * sak];
#pragma GCC unroll 16
            for (int j = 0; j < w; j++) acc[j] += ak * *(const TILE(uvec) *)(bk + j * TILE_VW);
        }
        TILE(uvec) *c = (TILE(uvec) *)(C + *j0);
        if (beta == 0)
#pragma GCC unroll 16
            for (int j = 0; j < w; j++) c[j] = alpha * acc[j];
        else
#pragma GCC unroll 16
            for (int j = 0; j < w; j++) c[j] = alpha * acc[j] + beta * c[j];
    }
}

/* C (m x n) = alpha A B + beta C for m <= CF_GEMM_SMALL_M (see gemm_impl.h): columns
   in strips of TILE_NR held in registers for all m rows while B's rows stream by.
   A's element (i, k) is A[i*sai + k*sak]. */
static void TILE(small)(int m, int n, int kk, float alpha, const float *restrict A, ptrdiff_t sai,
                        ptrdiff_t sak, const float *restrict B, ptrdiff_t ldb, float beta,
                        float *restrict C, ptrdiff_t ldc)
{
    int j0 = 0;
    if (m == 1) {
        /* one row: several strips at once, so that enough independent accumulators
           cover the multiply-add latency and each row of B is read in one pass; eight
           strips where registers are wide (16 accumulators: 9.4 against 13.2 us for
           the MLP's batch-1 forward with AVX2 on a Zen 1), then four */
#if TILE_VW >= 8
        TILE(row_strips)(8, &j0, n, kk, alpha, A, sak, B, ldb, beta, C);
#endif
        TILE(row_strips)(4, &j0, n, kk, alpha, A, sak, B, ldb, beta, C);
    }
    for (; j0 + TILE_NR <= n; j0 += TILE_NR) {
        TILE(vec) acc[CF_GEMM_SMALL_M][TILE_NV];
#pragma GCC unroll 4
        for (int i = 0; i < CF_GEMM_SMALL_M; i++)
#pragma GCC unroll 4
            for (int j = 0; j < TILE_NV; j++) acc[i][j] = (TILE(vec)){0};
        const float *bk = B + j0;
        if (m == 1) {
            for (int k = 0; k < kk; k++, bk += ldb) {
                float ak = A[k * sak];
#pragma GCC unroll 4
                for (int j = 0; j < TILE_NV; j++) acc[0][j] += ak * *(const TILE(uvec) *)(bk + j * TILE_VW);
            }
        } else {
            for (int k = 0; k < kk; k++, bk += ldb) {
                TILE(vec) bv[TILE_NV];
#pragma GCC unroll 4
                for (int j = 0; j < TILE_NV; j++) bv[j] = *(const TILE(uvec) *)(bk + j * TILE_VW);
#pragma GCC unroll 4
                for (int i = 0; i < CF_GEMM_SMALL_M; i++) {
                    if (i >= m) break;
                    float ai = A[i * sai + k * sak];
#pragma GCC unroll 4
                    for (int j = 0; j < TILE_NV; j++) acc[i][j] += ai * bv[j];
                }
            }
        }
        for (int i = 0; i < m; i++) {
            TILE(uvec) *ci = (TILE(uvec) *)(C + i * ldc + j0);
            if (beta == 0)
                for (int j = 0; j < TILE_NV; j++) ci[j] = alpha * acc[i][j];
            else
                for (int j = 0; j < TILE_NV; j++) ci[j] = alpha * acc[i][j] + beta * ci[j];
        }
    }
    if (j0 == n) return;
    /* the last columns, fewer than a strip: one row at a time, scalar */
    for (int i = 0; i < m; i++)
        for (int j = j0; j < n; j++) {
            float s = 0;
            for (int k = 0; k < kk; k++) s += A[i * sai + k * sak] * B[k * ldb + j];
            C[i * ldc + j] = beta == 0 ? alpha * s : alpha * s + beta * C[i * ldc + j];
        }
}

/* The epilogue of m rows of a tile (see gemm_impl.h): a vector of a row at a time. */
static void TILE(tile_ep)(int m, float *restrict c, ptrdiff_t ldc, const float *restrict bias, int relu)
{
    typedef int ivec __attribute__((vector_size(TILE_VW * sizeof(int))));
    TILE(vec) bv[TILE_NV], zero = {0};
#pragma GCC unroll 4
    for (int j = 0; j < TILE_NV; j++) bv[j] = bias ? *(const TILE(uvec) *)(bias + j * TILE_VW) : zero;
    for (int i = 0; i < m; i++) {
        TILE(uvec) *ci = (TILE(uvec) *)(c + i * ldc);
#pragma GCC unroll 4
        for (int j = 0; j < TILE_NV; j++) {
            TILE(vec) x = ci[j];
            if (bias) x += bv[j];
            if (relu) x = (TILE(vec))((ivec)x & (x > zero));   /* x > 0 ? x : 0, NaN to 0 as well */
            ci[j] = x;
        }
    }
}

#ifndef TILE_PACK_A_N
#define TILE_PACK_A_N TILE(pack_a_n)
#endif

/* The table entry for this ISA (TILE_NAME: its name, TILE_ENTRY: the variable). */
const cf_gemm_impl TILE_ENTRY = {TILE_NAME, TILE_MR, TILE_NR, TILE_KERNEL, TILE_PACK_A_N, TILE(pack_a_t),
                                 TILE(pack_b_n), TILE_PACK_B_T, TILE(small), TILE(tile_ep)};

#undef TILE_NV
