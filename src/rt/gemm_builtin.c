/* gemm_builtin.c - the built-in float32 GEMM (see gemm_builtin.h): the blocking and
 * packing driver, over one instruction set's micro-kernel and packers (gemm_impl.h).
 *
 * Goto/BLIS structure: op(B) is packed KC x NC at a time into column panels nr
 * wide, op(A) MC x KC at a time into row panels mr tall (both zero-padded to whole
 * panels), and a register-tiled mr x nr micro-kernel multiplies one A panel by one
 * B panel. Block sizes fit the x86 machines we target: a B panel (KC*nr floats,
 * 16-32 KiB) stays in L1, the packed A block (MC*KC, 144 KiB) in L2, the packed B
 * block (KC*NC, 512 KiB) in L2/L3. Products of a few rows (batch-1 inference) skip
 * packing: the implementation's `small` path streams B once. */
#include "rt/gemm_builtin.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "rt/gemm.h"
#include "rt/gemm_impl.h"

/* MC is a multiple of every mr (6, 8), NC of every nr (16, 32). */
enum { KC = 256, MC = 144, NC = 512 };

/* Per-thread packing buffers, MC*KC floats for op(A) then KC*NC for op(B) (656 KiB),
   from the heap on the thread's first product (or cf_gemm_builtin_reserve) and freed
   when the thread exits. Not static thread-local arrays: those would sit in every
   thread of every program linked with cflux, in the thread's stack, so that a thread
   with a stack of 512 KiB or less could not even be created. */
#define PACK_FLOATS (MC * KC + KC * NC)
static _Thread_local float *pack_buf;
static pthread_key_t pack_key;          /* its destructor frees a thread's buffer */
static int pack_key_ok;
static pthread_once_t pack_once = PTHREAD_ONCE_INIT;

/* At thread exit (in that thread): a later product, from another key's destructor,
   allocates again rather than using freed memory. */
static void pack_free(void *p)
{
    free(p);
    pack_buf = NULL;
}

static void pack_key_init(void) { pack_key_ok = pthread_key_create(&pack_key, pack_free) == 0; }

int cf_gemm_builtin_reserve(void)
{
    if (pack_buf) return 0;
    pthread_once(&pack_once, pack_key_init);
    if (!pack_key_ok) return -1;        /* it could not be freed at thread exit */
    float *p = aligned_alloc(64, PACK_FLOATS * sizeof(float));
    if (!p) return -1;
    if (pthread_setspecific(pack_key, p)) {
        free(p);
        return -1;
    }
    pack_buf = p;
    return 0;
}

/* An A panel of m <= mr rows of op(A), zero-padded to mr: dst[k*mr + r] =
   op(A)[r][k], where op(A)[r][k] is src[r*ld + k], or src[k*ld + r] if ta. */
static void pack_a_any(int ta, const float *src, ptrdiff_t ld, int kc, int m, int mr, float *dst)
{
    for (int k = 0; k < kc; k++)
        for (int r = 0; r < mr; r++)
            dst[k * mr + r] = r >= m ? 0 : ta ? src[k * ld + r] : src[r * ld + k];
}

/* A B panel of n <= nr columns of op(B), zero-padded to nr: dst[k*nr + j] =
   op(B)[k][j], where op(B)[k][j] is src[k*ld + j], or src[j*ld + k] if tb. */
static void pack_b_any(int tb, const float *src, ptrdiff_t ld, int kc, int n, int nr, float *dst)
{
    for (int k = 0; k < kc; k++)
        for (int j = 0; j < nr; j++)
            dst[k * nr + j] = j >= n ? 0 : tb ? src[j * ld + k] : src[k * ld + j];
}

/* ---- blocking ---- */

/* Pack rows [i0, i0+mc) x columns [k0, k0+kc) of op(A) into MR-row panels
   (see pack_a_any), the last one zero-padded. */
static void pack_a(const cf_gemm_impl *im, int ta, const float *A, ptrdiff_t lda, int i0,
                   int k0, int mc, int kc, float *dst)
{
    int mr = im->mr;
    for (int ip = 0; ip < mc; ip += mr, dst += mr * kc) {
        const float *src = ta ? A + k0 * lda + i0 + ip : A + (i0 + ip) * lda + k0;
        if (mc - ip >= mr) (ta ? im->pack_a_t : im->pack_a_n)(src, lda, kc, dst);
        else pack_a_any(ta, src, lda, kc, mc - ip, mr, dst);
    }
}

/* Pack rows [k0, k0+kc) x columns [j0, j0+nc) of op(B) into NR-column panels
   (see pack_b_any), the last one zero-padded. */
static void pack_b(const cf_gemm_impl *im, int tb, const float *B, ptrdiff_t ldb, int k0,
                   int j0, int kc, int nc, float *dst)
{
    int nr = im->nr;
    for (int jp = 0; jp < nc; jp += nr, dst += nr * kc) {
        const float *src = tb ? B + (j0 + jp) * ldb + k0 : B + k0 * ldb + j0 + jp;
        if (nc - jp >= nr) (tb ? im->pack_b_t : im->pack_b_n)(src, ldb, kc, dst);
        else pack_b_any(tb, src, ldb, kc, nc - jp, nr, dst);
    }
}

/* C (mc x nc) = alpha * packed A block * packed B block + beta * C. Edge tiles are
   computed whole into a scratch tile and only their valid part is merged. */
static void macro_kernel(const cf_gemm_impl *im, int mc, int nc, int kc, float alpha,
                         const float *pa, const float *pb, float beta, float *C,
                         ptrdiff_t ldc, const cf_gemm_ep *ep)
{
    _Alignas(64) float tile[CF_GEMM_MAX_TILE];
    int mr = im->mr, nr = im->nr;
    for (int jr = 0; jr < nc; jr += nr) {
        int n = nc - jr < nr ? nc - jr : nr;
        for (int ir = 0; ir < mc; ir += mr) {
            int m = mc - ir < mr ? mc - ir : mr;
            const float *a = pa + ir * kc, *b = pb + jr * kc;
            float *c = C + ir * ldc + jr;
            if (m == mr && n == nr) {
                im->kernel(kc, a, b, c, ldc, alpha, beta);
            } else {
                im->kernel(kc, a, b, tile, nr, 1.0f, 0.0f);
                for (int i = 0; i < m; i++)
                    for (int j = 0; j < n; j++)
                        c[i * ldc + j] = beta == 0 ? alpha * tile[i * nr + j]
                                                   : alpha * tile[i * nr + j] + beta * c[i * ldc + j];
            }
            if (ep && n == nr) {   /* the tile is finished and in L1: its epilogue now */
                im->tile_ep(m, c, ldc, ep->bias ? ep->bias + jr : NULL, ep->relu);
            } else if (ep) {
                cf_gemm_ep e = {ep->bias ? ep->bias + jr : NULL, ep->relu};
                cf_gemm_ep_apply(&e, m, n, c, ldc);
            }
        }
    }
}

/* Split n into the fewest blocks of at most max, of nearly equal size rounded up to
   a multiple of unit (max is a multiple of unit), so no block is a thin remainder. */
static int block_size(int n, int max, int unit)
{
    int nblocks = (n + max - 1) / max;
    int b = (n + nblocks - 1) / nblocks;
    return (b + unit - 1) / unit * unit;
}

/* C = beta * C over M x N, never reading C when beta == 0. */
static void scale_c(int M, int N, float beta, float *C, ptrdiff_t ldc)
{
    for (int i = 0; i < M; i++) {
        float *ci = C + i * ldc;
        if (beta == 0) memset(ci, 0, N * sizeof(float));
        else if (beta != 1)
            for (int j = 0; j < N; j++) ci[j] *= beta;
    }
}

/* The product without packing buffers, for a thread that could not get them: a
   plain loop, several times slower, equal to the packed product up to rounding. */
static void gemm_unpacked(int ta, int tb, int M, int N, int K, float alpha, const float *A,
                          int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    for (int i = 0; i < M; i++) {
        float *restrict ci = C + (ptrdiff_t)i * ldc;
        scale_c(1, N, beta, ci, ldc);
        for (int k = 0; k < K; k++) {
            float a = alpha * (ta ? A[(ptrdiff_t)k * lda + i] : A[(ptrdiff_t)i * lda + k]);
            if (tb)
                for (int j = 0; j < N; j++) ci[j] += a * B[(ptrdiff_t)j * ldb + k];
            else {
                const float *restrict bk = B + (ptrdiff_t)k * ldb;
                for (int j = 0; j < N; j++) ci[j] += a * bk[j];
            }
        }
    }
}

void cf_gemm_ep_apply(const cf_gemm_ep *ep, int M, int N, float *C, ptrdiff_t ldc)
{
    const float *restrict bias = ep->bias;
    for (int i = 0; i < M; i++) {
        float *restrict c = C + i * ldc;
        if (bias)
            for (int j = 0; j < N; j++) c[j] += bias[j];
        if (ep->relu)
            for (int j = 0; j < N; j++) c[j] = c[j] > 0 ? c[j] : 0;
    }
}

/* The implementation for M rows. M rows in 6-row tiles pad the last one; where 4
   divides M and the padding is more than 1/64 of the rows, the 4-row tile pads none:
   on a Zen 1, 12% faster on the LSTM's 32-row products, 3-7% on its 64- and 128-row
   weight gradients (K = 32), 4% on 64 x 128 x 784. The choice depends on M only, so
   results stay repeatable; both tiles are 16 wide, so B packs the same for either. */
static const cf_gemm_impl *tile_for(const cf_gemm_impl *im, int M)
{
#if defined(__x86_64__)
    if (im == &cf_gemm_avx2 && M % 4 == 0 && M % 6 && 64 * (6 - M % 6) > M) return &cf_gemm_avx2_4;
#endif
    (void)M;
    return im;
}

void cf_gemm_builtin_with(const cf_gemm_impl *im, int ta, int tb, int M, int N, int K,
                          float alpha, const float *A, int lda, const float *B, int ldb,
                          float beta, float *C, int ldc)
{
    cf_gemm_builtin_ep(im, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL);
}

void cf_gemm_builtin_ep(const cf_gemm_impl *im, int ta, int tb, int M, int N, int K,
                        float alpha, const float *A, int lda, const float *B, int ldb,
                        float beta, float *C, int ldc, const cf_gemm_ep *ep)
{
    if (M <= 0 || N <= 0) return;
    if (K <= 0 || alpha == 0 || (M <= CF_GEMM_SMALL_M && !tb) || cf_gemm_builtin_reserve()) {
        if (K <= 0 || alpha == 0) scale_c(M, N, beta, C, ldc);
        else if (M <= CF_GEMM_SMALL_M && !tb)   /* a row or a few: packing would cost more */
            im->small(M, N, K, alpha, A, ta ? 1 : lda, ta ? lda : 1, B, ldb, beta, C, ldc);
        else gemm_unpacked(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        if (ep) cf_gemm_ep_apply(ep, M, N, C, ldc);
        return;
    }
    im = tile_for(im, M);
    float *pack_a_buf = pack_buf, *pack_b_buf = pack_buf + MC * KC;
    int ncb = block_size(N, NC, im->nr), kcb = block_size(K, KC, 1), mcb = block_size(M, MC, im->mr);
    for (int jc = 0; jc < N; jc += ncb) {
        int nc = N - jc < ncb ? N - jc : ncb;
        for (int pc = 0; pc < K; pc += kcb) {
            int kc = K - pc < kcb ? K - pc : kcb;
            float b = pc == 0 ? beta : 1.0f; /* later K blocks accumulate */
            pack_b(im, tb, B, ldb, pc, jc, kc, nc, pack_b_buf);
            for (int ic = 0; ic < M; ic += mcb) {
                int mc = M - ic < mcb ? M - ic : mcb;
                pack_a(im, ta, A, lda, ic, pc, mc, kc, pack_a_buf);
                cf_gemm_ep e = {ep && ep->bias ? ep->bias + jc : NULL, ep ? ep->relu : 0};
                macro_kernel(im, mc, nc, kc, alpha, pack_a_buf, pack_b_buf, b,
                             C + (ptrdiff_t)ic * ldc + jc, ldc, ep && pc + kc >= K ? &e : NULL);
            }
        }
    }
}

void cf_gemm_builtin(int ta, int tb, int M, int N, int K, float alpha,
                     const float *A, int lda, const float *B, int ldb,
                     float beta, float *C, int ldc)
{
    cf_gemm_builtin_with(cf_gemm_builtin_impl(), ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* op(B) (K x N) packed whole, K block by K block as the driver blocks it, each block
   a run of nr-wide panels over all of N (the last zero-padded). */
void cf_gemm_builtin_pack_b(const cf_gemm_impl *im, int tb, int K, int N, const float *B, int ldb, float *dst)
{
    int kcb = block_size(K, KC, 1), np = (N + im->nr - 1) / im->nr * im->nr;
    for (int pc = 0; pc < K; pc += kcb) {
        int kc = K - pc < kcb ? K - pc : kcb;
        pack_b(im, tb, B, ldb, pc, 0, kc, N, dst + (size_t)pc * np);
    }
}

int cf_gemm_builtin_packed(const cf_gemm_impl *im, int M, int j0, int n, int K, int N, float alpha,
                           const float *A, int lda, const float *Bp, float beta, float *C, int ldc)
{
    const cf_gemm_impl *t = tile_for(im, M);
    if (M <= CF_GEMM_SMALL_M || K <= 0 || alpha == 0 || t->nr != im->nr || j0 % im->nr || cf_gemm_builtin_reserve())
        return -1;
    int kcb = block_size(K, KC, 1), mcb = block_size(M, MC, t->mr), np = (N + im->nr - 1) / im->nr * im->nr;
    for (int pc = 0; pc < K; pc += kcb) {
        int kc = K - pc < kcb ? K - pc : kcb;
        float b = pc == 0 ? beta : 1.0f;
        const float *pb = Bp + (size_t)pc * np + (size_t)j0 * kc;
        for (int ic = 0; ic < M; ic += mcb) {
            int mc = M - ic < mcb ? M - ic : mcb;
            pack_a(t, 0, A, lda, ic, pc, mc, kc, pack_buf);
            macro_kernel(t, mc, n, kc, alpha, pack_buf, pb, b, C + (ptrdiff_t)ic * ldc, ldc, NULL);
        }
    }
    return 0;
}
