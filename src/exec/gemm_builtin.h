/* gemm_builtin.h - the built-in single-threaded float32 matrix product.
 *
 * Used for every matrix product when cflux is built without BLAS, and selectable
 * at run time otherwise. Same meaning as cblas_sgemm(CblasRowMajor, ...). It
 * allocates nothing (packing buffers are per-thread statics), so several threads
 * may call it at once on disjoint slices of C. */
#ifndef CF_EXEC_GEMM_BUILTIN_H
#define CF_EXEC_GEMM_BUILTIN_H

/* C = alpha * op(A) op(B) + beta * C; op(A) is M x K, op(B) is K x N, C is M x N,
   all row-major with leading dimensions lda, ldb, ldc; ta/tb non-zero means the
   stored matrix is transposed (A is K x M, B is N x K). beta == 0 means C is not
   read (it may hold NaN); K == 0 or alpha == 0 gives C = beta * C. */
void cf_gemm_builtin(int ta, int tb, int M, int N, int K, float alpha,
                     const float *A, int lda, const float *B, int ldb,
                     float beta, float *C, int ldc);

/* For tests: non-zero forces the portable kernel even where AVX2+FMA is present;
   0 restores the automatic choice. Not thread-safe; set it before any calls. */
void cf_gemm_builtin_force_portable(int on);

#endif
