/* gemm_impl.h - one instruction set's share of the built-in GEMM: a register-tiled
 * micro-kernel, the packers that feed it, and a direct path for products of very few
 * rows (batch-1 inference), as a table the driver (gemm_builtin.c) runs.
 *
 * Each instruction set has its own file, compiled for that target only (CMake sets
 * the flags per file): kern_portable.c (the baseline ISA), kern_avx2.c (AVX2 + FMA),
 * kern_avx512.c (AVX-512 F/BW/DQ/VL). The driver calls an ISA's functions only on a
 * CPU that has it (rt/cpu.h). Most of each file is gemm_tile.h, one source written
 * over GCC vector types and instantiated at the ISA's tile size. */
#ifndef CF_RT_GEMM_IMPL_H
#define CF_RT_GEMM_IMPL_H

#include <stddef.h>

/* The largest tile any implementation uses, for the driver's edge scratch tile. */
#define CF_GEMM_MAX_TILE (16 * 32)

/* c (mr x nr, leading dimension ldc) = alpha * sum_k a[k] b[k]^T + beta * c, where
   a is a packed mr x kc panel (mr floats per k) and b a packed kc x nr panel (nr
   floats per k, 64-byte aligned). beta == 0 writes c without reading it. */
typedef void cf_gemm_kernel_fn(int kc, const float *a, const float *b, float *c,
                               ptrdiff_t ldc, float alpha, float beta);

/* Packs one whole panel (mr rows of op(A), or nr columns of op(B)) of kc values each,
   starting at src; layouts as in gemm_builtin.c. */
typedef void cf_gemm_panel_fn(const float *src, ptrdiff_t ld, int kc, float *dst);

/* C (m x n) = alpha * A (m x k) * B (k x n, row stride ldb) + beta * C, for
   m <= CF_GEMM_SMALL_M, without packing: B is streamed once, row by row. A's element
   (i, k) is A[i*sai + k*sak], so A may be stored either way round. */
typedef void cf_gemm_small_fn(int m, int n, int k, float alpha, const float *A, ptrdiff_t sai,
                              ptrdiff_t sak, const float *B, ptrdiff_t ldb, float beta, float *C,
                              ptrdiff_t ldc);
#define CF_GEMM_SMALL_M 4

/* m rows of nr columns of C (leading dimension ldc), finished: c += bias (nr floats,
   NULL: none), then max(0, c) if relu; the same bits as cf_gemm_ep_apply, in vectors
   while the tile is in L1. */
typedef void cf_gemm_tile_ep_fn(int m, float *c, ptrdiff_t ldc, const float *bias, int relu);

typedef struct cf_gemm_impl {
    const char *name;              /* "avx2": the engine is then called "builtin-avx2" */
    int mr, nr;                    /* tile: nr is a multiple of 16 */
    cf_gemm_kernel_fn *kernel;
    cf_gemm_panel_fn *pack_a_n, *pack_a_t, *pack_b_n, *pack_b_t; /* _t: stored transposed */
    cf_gemm_small_fn *small;
    cf_gemm_tile_ep_fn *tile_ep;
} cf_gemm_impl;

extern const cf_gemm_impl cf_gemm_portable;
#if defined(__x86_64__)
extern const cf_gemm_impl cf_gemm_avx2, cf_gemm_avx512;
/* AVX2 with a 4-row tile, which the driver runs instead of cf_gemm_avx2 for row
   counts that 4 divides and 6 does not (see cf_gemm_builtin_ep) */
extern const cf_gemm_impl cf_gemm_avx2_4;
#endif

/* The product with one implementation (the public entry, cf_gemm_builtin, picks it),
   then the epilogue ep (NULL: none; see rt/gemm.h), applied to each tile of C while
   it is still in cache. */
struct cf_gemm_ep;
void cf_gemm_builtin_with(const cf_gemm_impl *im, int ta, int tb, int M, int N, int K,
                          float alpha, const float *A, int lda, const float *B, int ldb,
                          float beta, float *C, int ldc);
void cf_gemm_builtin_ep(const cf_gemm_impl *im, int ta, int tb, int M, int N, int K,
                        float alpha, const float *A, int lda, const float *B, int ldb,
                        float beta, float *C, int ldc, const struct cf_gemm_ep *ep);


/* op(B) packed once, for many products that share it: cf_gemm_builtin_pack_b writes
   it ((N rounded up to nr) x K floats), cf_gemm_builtin_packed computes C (M x n) =
   alpha A op(B)[:, j0 : j0 + n] + beta C from it with A not transposed, on the calling
   thread, the same bits as the driver's product; -1 (nothing done) where it does not
   apply: a few rows, j0 not a multiple of nr, or no packing buffer. */
void cf_gemm_builtin_pack_b(const cf_gemm_impl *im, int tb, int K, int N, const float *B, int ldb, float *dst);
int cf_gemm_builtin_packed(const cf_gemm_impl *im, int M, int j0, int n, int K, int N, float alpha,
                           const float *A, int lda, const float *Bp, float beta, float *C, int ldc);

#endif
