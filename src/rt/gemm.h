/* gemm.h - the engine's matrix product, whatever kernels run it (see gemm.c).
 *
 * Row-major, with the meaning of cblas_sgemm(CblasRowMajor, ...):
 * C = alpha op(A) op(B) + beta C, op(A) M x K, op(B) K x N; ta/tb non-zero: the stored
 * matrix is transposed. beta == 0 never reads C. Large products are split over the
 * pool; the split depends only on the sizes and the thread count, so a result is
 * bitwise repeatable for a given thread count and engine. */
#ifndef CF_RT_GEMM_H
#define CF_RT_GEMM_H

void cf_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
             const float *B, int ldb, float beta, float *C, int ldc);

#endif
