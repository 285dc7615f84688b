/* gemm.c - the one entry for matrix products: picks OpenBLAS or the built-in GEMM and
 * spreads large products over the pool.
 *
 * OpenBLAS runs single-threaded here (its own pool busy-waits, which costs several
 * times over on a loaded machine); our pool splits C into column or row panels, each a
 * single-threaded call. The split depends only on the sizes and the thread count, so
 * results are bitwise repeatable for a given thread count. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "rt/gemm_builtin.h"
#include "rt/gemm.h"
#include "rt/pool.h"

#ifdef CFLUX_HAVE_BLAS
#include <cblas.h>
void openblas_set_num_threads(int);
#endif

static int use_builtin = -1;   /* -1: not decided yet */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void gemm_init(void)
{
#ifdef CFLUX_HAVE_BLAS
    openblas_set_num_threads(1);
    const char *env = getenv("CFLUX_GEMM");
    if (use_builtin < 0) use_builtin = env && strcmp(env, "builtin") == 0;
#else
    use_builtin = 1;
#endif
}

int cf_set_gemm(const char *name)
{
    pthread_once(&once, gemm_init);
    if (name && strcmp(name, "builtin") == 0) {
        use_builtin = 1;
        return 0;
    }
#ifdef CFLUX_HAVE_BLAS
    if (name && strcmp(name, "openblas") == 0) {
        use_builtin = 0;
        return 0;
    }
    return cf_seterr("error: unknown matrix-product engine '%s' (this build has: openblas, builtin)",
                     name ? name : "(null)");
#else
    return cf_seterr("error: unknown matrix-product engine '%s' (this build has: builtin)", name ? name : "(null)");
#endif
}

const char *cf_gemm_name(void)
{
    pthread_once(&once, gemm_init);
    return use_builtin ? "builtin" : "openblas";
}

static void gemm1(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                  const float *B, int ldb, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return;
#ifdef CFLUX_HAVE_BLAS
    if (!use_builtin) {
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K,
                    alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
#endif
    cf_gemm_builtin(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

typedef struct {
    int ta, tb, M, N, K, lda, ldb, ldc, by_rows, tasks;
    float alpha, beta;
    const float *A, *B;
    float *C;
} job;

static void panel(void *p, int i)
{
    const job *j = p;
    int len = j->by_rows ? j->M : j->N;
    /* panels of multiples of 16 so kernels see whole register tiles */
    int per = ((len + j->tasks - 1) / j->tasks + 15) / 16 * 16;
    int b = i * per, e = b + per < len ? b + per : len;
    if (b >= e) return;
    if (j->by_rows) {
        const float *A = j->ta ? j->A + b : j->A + (size_t)b * j->lda;
        gemm1(j->ta, j->tb, e - b, j->N, j->K, j->alpha, A, j->lda, j->B, j->ldb, j->beta,
              j->C + (size_t)b * j->ldc, j->ldc);
    } else {
        const float *B = j->tb ? j->B + (size_t)b * j->ldb : j->B + b;
        gemm1(j->ta, j->tb, j->M, e - b, j->K, j->alpha, j->A, j->lda, B, j->ldb, j->beta, j->C + b, j->ldc);
    }
}

/* Below this many multiply-adds a product runs on the calling thread. */
#define GEMM_PAR_MIN (1 << 18)

void cf_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
             const float *B, int ldb, float beta, float *C, int ldc)
{
    pthread_once(&once, gemm_init);
    int t = cf_threads();
    double work = (double)M * N * K;
    if (t <= 1 || work < GEMM_PAR_MIN || (M < 32 && N < 32)) {
        gemm1(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    job j = {ta, tb, M, N, K, lda, ldb, ldc, M >= N, t, alpha, beta, A, B, C};
    int len = j.by_rows ? M : N;
    if (j.tasks > (len + 15) / 16) j.tasks = (len + 15) / 16;
    cf_parallel_for(j.tasks, panel, &j);
}
