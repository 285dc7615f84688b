/* gemm.h - the engine's matrix product, whatever kernels run it (see gemm.c).
 *
 * Row-major, with the meaning of cblas_sgemm(CblasRowMajor, ...):
 * C = alpha op(A) op(B) + beta C, op(A) M x K, op(B) K x N; ta/tb non-zero: the stored
 * matrix is transposed. beta == 0 never reads C. Large products are split over the
 * pool; the split depends only on the sizes and the thread count, so a result is
 * bitwise repeatable for a given thread count and engine. */
#ifndef CF_RT_GEMM_H
#define CF_RT_GEMM_H

#include <stddef.h>

void cf_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
             const float *B, int ldb, float beta, float *C, int ldc);

/* What to do to C after the product, fused: C[i][j] = act(C[i][j] + bias[j]). */
typedef struct cf_gemm_ep {
    const float *bias;   /* N floats, one per column; NULL: none */
    int relu;            /* non-zero: max(0, x) after the bias */
} cf_gemm_ep;

/* cf_gemm, then the epilogue ep over each tile of C as the product finishes it (the
   built-in engines), or over C afterwards (OpenBLAS). ep NULL is cf_gemm. */
void cf_gemm_ep_run(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                    const float *B, int ldb, float beta, float *C, int ldc, const cf_gemm_ep *ep);

/* Count n floating-point operations of products computed outside cf_gemm (the direct
   convolution, rt/dconv.h) in cf_gemm_flops. */
void cf_gemm_add_flops(double n);

/* The epilogue alone, over an M x N block of C (leading dimension ldc). */
void cf_gemm_ep_apply(const cf_gemm_ep *ep, int M, int N, float *C, ptrdiff_t ldc);

/* op(B) (K x N) packed once for many products that share it (a recurrent layer's
   weights, one product a step). cf_gemm_pb_make packs into buf, of cf_gemm_pb_floats
   floats (with OpenBLAS it packs nothing: products then read B); cf_gemm_pb_run
   computes C (M x n) = alpha A op(B)[:, j0 : j0 + n] + beta C on the calling thread
   (for a caller that splits the work itself), the same bits as cf_gemm_ep_run on one
   thread; a j0 that is a multiple of 32 uses the packed panels. */
typedef struct cf_gemm_pb {
    int tb, K, N, ldb;
    const float *B;
    float *packed;                     /* NULL: products read B */
    const struct cf_gemm_impl *im;
} cf_gemm_pb;
size_t cf_gemm_pb_floats(int K, int N);
void cf_gemm_pb_make(cf_gemm_pb *p, int tb, int K, int N, const float *B, int ldb, float *buf);
void cf_gemm_pb_run(const cf_gemm_pb *p, int M, int j0, int n, float alpha, const float *A, int lda, float beta,
                    float *C, int ldc);

#endif
