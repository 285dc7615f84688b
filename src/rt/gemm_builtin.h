/* gemm_builtin.h - the built-in single-threaded float32 matrix product.
 *
 * Used for every matrix product when cflux is built without BLAS, and selectable
 * at run time otherwise. Same meaning as cblas_sgemm(CblasRowMajor, ...). Each
 * thread packs into its own buffers (656 KiB, allocated on the thread's first call
 * or by cf_gemm_builtin_reserve, freed when the thread exits), so several threads
 * may call it at once on disjoint slices of C, and a call allocates nothing once its
 * thread has them. A thread that cannot get them still gets the right product, from
 * an unpacked loop several times slower (same result up to rounding). */
#ifndef CF_RT_GEMM_BUILTIN_H
#define CF_RT_GEMM_BUILTIN_H

/* C = alpha * op(A) op(B) + beta * C; op(A) is M x K, op(B) is K x N, C is M x N,
   all row-major with leading dimensions lda, ldb, ldc; ta/tb non-zero means the
   stored matrix is transposed (A is K x M, B is N x K). beta == 0 means C is not
   read (it may hold NaN); K == 0 or alpha == 0 gives C = beta * C. */
void cf_gemm_builtin(int ta, int tb, int M, int N, int K, float alpha,
                     const float *A, int lda, const float *B, int ldb,
                     float beta, float *C, int ldc);

/* Allocate this thread's packing buffers now, so that later calls do not: pool
   workers do it when they start, cf_bind for the thread that binds. 0, or -1 when
   there is no memory (calls then take the unpacked loop, and try again). */
int cf_gemm_builtin_reserve(void);

/* The implementation cf_gemm_builtin uses: the widest this CPU runs (AVX-512, AVX2 +
   FMA, else portable), unless cf_set_gemm chose one (rt/gemm.c). */
struct cf_gemm_impl;
const struct cf_gemm_impl *cf_gemm_builtin_impl(void);

#endif
