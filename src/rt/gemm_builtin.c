/* gemm_builtin.c - the built-in float32 GEMM (see gemm_builtin.h).
 *
 * Goto/BLIS structure: op(B) is packed KC x NC at a time into column panels NR
 * wide, op(A) MC x KC at a time into row panels MR tall (both zero-padded to whole
 * panels), and a register-tiled MR x NR micro-kernel multiplies one A panel by one
 * B panel. Block sizes fit the AVX2 machines we target: a B panel (KC*NR floats,
 * 16 KiB) stays in L1, the packed A block (MC*KC, 144 KiB) in L2, the packed B
 * block (KC*NC, 512 KiB) in L2/L3. The micro-kernel is AVX2+FMA where the CPU has it
 * (chosen at run time; the library itself is built without -mavx2), otherwise a
 * plain C loop the compiler can vectorise for the baseline ISA. */
#include "rt/gemm_builtin.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CF_GEMM_X86 1
#endif

enum { MR = 6, NR = 16, KC = 256, MC = 144, NC = 512 };

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

static int force_portable;

void cf_gemm_builtin_force_portable(int on) { force_portable = on; }

/* c (MR x NR, leading dimension ldc) = alpha * sum_k a[k] b[k]^T + beta * c, where
   a is a packed MR x kc panel (MR floats per k) and b a packed kc x NR panel (NR
   floats per k, 64-byte aligned). beta == 0 writes c without reading it. */
typedef void kernel_fn(int kc, const float *a, const float *b, float *c,
                       ptrdiff_t ldc, float alpha, float beta);

/* Packs one whole panel (MR rows of op(A) or NR columns of op(B)) of kc values each,
   starting at src; the layouts are described at pack_a and pack_b. */
typedef void panel_fn(const float *src, ptrdiff_t ld, int kc, float *dst);

/* A kernel and the full-panel packers that go with it. */
typedef struct {
    kernel_fn *kernel;
    panel_fn *pack_a_n, *pack_a_t, *pack_b_n, *pack_b_t; /* _t: stored transposed */
} impl_t;

/* ---- portable: plain C over fixed-size loops, vectorised for the baseline ISA ---- */

static void kernel_portable(int kc, const float *restrict a, const float *restrict b,
                            float *restrict c, ptrdiff_t ldc, float alpha, float beta)
{
    float acc[MR][NR] = {{0}};
    for (int k = 0; k < kc; k++, a += MR, b += NR)
        for (int i = 0; i < MR; i++)
            for (int j = 0; j < NR; j++) acc[i][j] += a[i] * b[j];
    for (int i = 0; i < MR; i++) {
        float *ci = c + i * ldc;
        if (beta == 0)
            for (int j = 0; j < NR; j++) ci[j] = alpha * acc[i][j];
        else
            for (int j = 0; j < NR; j++) ci[j] = alpha * acc[i][j] + beta * ci[j];
    }
}

/* An A panel of m <= MR rows of op(A), zero-padded to MR: dst[k*MR + r] =
   op(A)[r][k], where op(A)[r][k] is src[r*ld + k], or src[k*ld + r] if ta. */
static void pack_a_any(int ta, const float *src, ptrdiff_t ld, int kc, int m, float *dst)
{
    for (int k = 0; k < kc; k++)
        for (int r = 0; r < MR; r++)
            dst[k * MR + r] = r >= m ? 0 : ta ? src[k * ld + r] : src[r * ld + k];
}

/* A B panel of n <= NR columns of op(B), zero-padded to NR: dst[k*NR + j] =
   op(B)[k][j], where op(B)[k][j] is src[k*ld + j], or src[j*ld + k] if tb. */
static void pack_b_any(int tb, const float *src, ptrdiff_t ld, int kc, int n, float *dst)
{
    for (int k = 0; k < kc; k++)
        for (int j = 0; j < NR; j++)
            dst[k * NR + j] = j >= n ? 0 : tb ? src[j * ld + k] : src[k * ld + j];
}

static void pack_a_n_portable(const float *src, ptrdiff_t ld, int kc, float *dst)
{
    pack_a_any(0, src, ld, kc, MR, dst);
}

static void pack_a_t_portable(const float *src, ptrdiff_t ld, int kc, float *dst)
{
    pack_a_any(1, src, ld, kc, MR, dst);
}

static void pack_b_n_portable(const float *src, ptrdiff_t ld, int kc, float *dst)
{
    pack_b_any(0, src, ld, kc, NR, dst);
}

static void pack_b_t_portable(const float *src, ptrdiff_t ld, int kc, float *dst)
{
    pack_b_any(1, src, ld, kc, NR, dst);
}

static const impl_t impl_portable = {kernel_portable, pack_a_n_portable,
                                     pack_a_t_portable, pack_b_n_portable,
                                     pack_b_t_portable};

/* ---- AVX2 + FMA, compiled for that target function by function ---- */
#ifdef CF_GEMM_X86
/* One row of the tile: two 8-wide accumulators x0, x1 into c row i. */
#define CF_STORE_ROW(i, x0, x1)                                                 \
    do {                                                                        \
        float *ci = c + (i) * ldc;                                              \
        if (beta == 0) {                                                        \
            _mm256_storeu_ps(ci, _mm256_mul_ps(va, x0));                        \
            _mm256_storeu_ps(ci + 8, _mm256_mul_ps(va, x1));                    \
        } else {                                                                \
            _mm256_storeu_ps(ci, _mm256_fmadd_ps(va, x0,                        \
                                 _mm256_mul_ps(vb, _mm256_loadu_ps(ci))));      \
            _mm256_storeu_ps(ci + 8, _mm256_fmadd_ps(va, x1,                    \
                                 _mm256_mul_ps(vb, _mm256_loadu_ps(ci + 8))));  \
        }                                                                       \
    } while (0)

/* The 6 x 16 tile lives in 12 ymm registers; each k costs two loads of b, six
   broadcasts of a and twelve FMAs. */
__attribute__((target("avx2,fma")))
static void kernel_avx2(int kc, const float *restrict a, const float *restrict b,
                        float *restrict c, ptrdiff_t ldc, float alpha, float beta)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00,
           c20 = c00, c21 = c00, c30 = c00, c31 = c00, c40 = c00, c41 = c00,
           c50 = c00, c51 = c00;
    for (int i = 0; i < MR; i++) _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
#pragma GCC unroll 4
    for (int k = 0; k < kc; k++, a += MR, b += NR) {
        __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8), x;
        x = _mm256_broadcast_ss(a + 0);
        c00 = _mm256_fmadd_ps(x, b0, c00); c01 = _mm256_fmadd_ps(x, b1, c01);
        x = _mm256_broadcast_ss(a + 1);
        c10 = _mm256_fmadd_ps(x, b0, c10); c11 = _mm256_fmadd_ps(x, b1, c11);
        x = _mm256_broadcast_ss(a + 2);
        c20 = _mm256_fmadd_ps(x, b0, c20); c21 = _mm256_fmadd_ps(x, b1, c21);
        x = _mm256_broadcast_ss(a + 3);
        c30 = _mm256_fmadd_ps(x, b0, c30); c31 = _mm256_fmadd_ps(x, b1, c31);
        x = _mm256_broadcast_ss(a + 4);
        c40 = _mm256_fmadd_ps(x, b0, c40); c41 = _mm256_fmadd_ps(x, b1, c41);
        x = _mm256_broadcast_ss(a + 5);
        c50 = _mm256_fmadd_ps(x, b0, c50); c51 = _mm256_fmadd_ps(x, b1, c51);
    }
    __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
    CF_STORE_ROW(0, c00, c01);
    CF_STORE_ROW(1, c10, c11);
    CF_STORE_ROW(2, c20, c21);
    CF_STORE_ROW(3, c30, c31);
    CF_STORE_ROW(4, c40, c41);
    CF_STORE_ROW(5, c50, c51);
}
#undef CF_STORE_ROW

/* One full A panel when op(A) = A: dst[k*MR + r] = src[r*lda + k] for r < MR. Eight
   k at a time: interleave the six rows so each k's six values land together. */
__attribute__((target("avx2,fma")))
static void pack_a_n_avx2(const float *src, ptrdiff_t lda, int kc, float *restrict dst)
{
    int k = 0;
    for (; k + 8 <= kc; k += 8, dst += 8 * MR) {
        const float *s = src + k;
        __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + lda),
               r2 = _mm256_loadu_ps(s + 2 * lda), r3 = _mm256_loadu_ps(s + 3 * lda),
               r4 = _mm256_loadu_ps(s + 4 * lda), r5 = _mm256_loadu_ps(s + 5 * lda);
        __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1),
               t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3),
               t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
        /* s_q holds rows 0-3 of columns q (low half) and q+4 (high half); t4/t5
           hold (row 4, row 5) pairs of columns 0,1,4,5 and 2,3,6,7. */
        __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE),
               s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
        __m128 p0 = _mm256_castps256_ps128(t4), p1 = _mm256_castps256_ps128(t5),
               p2 = _mm256_extractf128_ps(t4, 1), p3 = _mm256_extractf128_ps(t5, 1);
        _mm_storeu_ps(dst + 0, _mm256_castps256_ps128(s0)); _mm_storel_pi((__m64 *)(dst + 4), p0);
        _mm_storeu_ps(dst + 6, _mm256_castps256_ps128(s1)); _mm_storeh_pi((__m64 *)(dst + 10), p0);
        _mm_storeu_ps(dst + 12, _mm256_castps256_ps128(s2)); _mm_storel_pi((__m64 *)(dst + 16), p1);
        _mm_storeu_ps(dst + 18, _mm256_castps256_ps128(s3)); _mm_storeh_pi((__m64 *)(dst + 22), p1);
        _mm_storeu_ps(dst + 24, _mm256_extractf128_ps(s0, 1)); _mm_storel_pi((__m64 *)(dst + 28), p2);
        _mm_storeu_ps(dst + 30, _mm256_extractf128_ps(s1, 1)); _mm_storeh_pi((__m64 *)(dst + 34), p2);
        _mm_storeu_ps(dst + 36, _mm256_extractf128_ps(s2, 1)); _mm_storel_pi((__m64 *)(dst + 40), p3);
        _mm_storeu_ps(dst + 42, _mm256_extractf128_ps(s3, 1)); _mm_storeh_pi((__m64 *)(dst + 46), p3);
    }
    for (; k < kc; k++, dst += MR)
        for (int r = 0; r < MR; r++) dst[r] = src[r * lda + k];
}

/* One full A panel when op(A) = A^T: dst[k*MR + r] = src[k*lda + r] for r < MR. */
__attribute__((target("avx2,fma")))
static void pack_a_t_avx2(const float *src, ptrdiff_t lda, int kc, float *restrict dst)
{
    for (int k = 0; k < kc; k++, src += lda, dst += MR) {
        _mm_storeu_ps(dst, _mm_loadu_ps(src));
        _mm_storel_pi((__m64 *)(dst + 4), _mm_loadl_pi(_mm_setzero_ps(), (const __m64 *)(src + 4)));
    }
}

/* The eight columns of an 8 x 8 block of rows r0..r7, in place. */
#define CF_TRANSPOSE8(r0, r1, r2, r3, r4, r5, r6, r7)                              \
    do {                                                                          \
        __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1),  \
               t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3),  \
               t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),  \
               t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);  \
        __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE), \
               s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE), \
               s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE), \
               s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE); \
        r0 = _mm256_permute2f128_ps(s0, s4, 0x20); r1 = _mm256_permute2f128_ps(s1, s5, 0x20); \
        r2 = _mm256_permute2f128_ps(s2, s6, 0x20); r3 = _mm256_permute2f128_ps(s3, s7, 0x20); \
        r4 = _mm256_permute2f128_ps(s0, s4, 0x31); r5 = _mm256_permute2f128_ps(s1, s5, 0x31); \
        r6 = _mm256_permute2f128_ps(s2, s6, 0x31); r7 = _mm256_permute2f128_ps(s3, s7, 0x31); \
    } while (0)

/* One full B panel when op(B) = B^T: dst[k*NR + j] = src[j*ldb + k] for j < NR,
   as two 8-column halves transposed 8 x 8 at a time. */
__attribute__((target("avx2,fma")))
static void pack_b_t_avx2(const float *src, ptrdiff_t ldb, int kc, float *restrict dst)
{
    for (int h = 0; h < NR; h += 8) {
        const float *s = src + h * ldb;
        int k = 0;
        for (; k + 8 <= kc; k += 8) {
            __m256 r0 = _mm256_loadu_ps(s + k), r1 = _mm256_loadu_ps(s + ldb + k),
                   r2 = _mm256_loadu_ps(s + 2 * ldb + k), r3 = _mm256_loadu_ps(s + 3 * ldb + k),
                   r4 = _mm256_loadu_ps(s + 4 * ldb + k), r5 = _mm256_loadu_ps(s + 5 * ldb + k),
                   r6 = _mm256_loadu_ps(s + 6 * ldb + k), r7 = _mm256_loadu_ps(s + 7 * ldb + k);
            CF_TRANSPOSE8(r0, r1, r2, r3, r4, r5, r6, r7);
            float *d = dst + k * NR + h;
            _mm256_store_ps(d, r0); _mm256_store_ps(d + NR, r1);
            _mm256_store_ps(d + 2 * NR, r2); _mm256_store_ps(d + 3 * NR, r3);
            _mm256_store_ps(d + 4 * NR, r4); _mm256_store_ps(d + 5 * NR, r5);
            _mm256_store_ps(d + 6 * NR, r6); _mm256_store_ps(d + 7 * NR, r7);
        }
        for (; k < kc; k++)
            for (int j = 0; j < 8; j++) dst[k * NR + h + j] = s[j * ldb + k];
    }
}
#undef CF_TRANSPOSE8

/* One full B panel when op(B) = B: dst[k*NR + j] = src[k*ldb + j] for j < NR. */
__attribute__((target("avx2,fma")))
static void pack_b_n_avx2(const float *src, ptrdiff_t ldb, int kc, float *restrict dst)
{
    for (int k = 0; k < kc; k++, src += ldb, dst += NR) {
        _mm256_store_ps(dst, _mm256_loadu_ps(src));
        _mm256_store_ps(dst + 8, _mm256_loadu_ps(src + 8));
    }
}

static const impl_t impl_avx2 = {kernel_avx2, pack_a_n_avx2, pack_a_t_avx2,
                                 pack_b_n_avx2, pack_b_t_avx2};
#endif

/* The AVX2 implementation where the CPU has AVX2 and FMA, else the portable one. */
static const impl_t *pick_impl(void)
{
#ifdef CF_GEMM_X86
    if (!force_portable && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return &impl_avx2;
#endif
    return &impl_portable;
}

/* ---- blocking ---- */

/* Pack rows [i0, i0+mc) x columns [k0, k0+kc) of op(A) into MR-row panels
   (see pack_a_any), the last one zero-padded. */
static void pack_a(const impl_t *im, int ta, const float *A, ptrdiff_t lda, int i0,
                   int k0, int mc, int kc, float *dst)
{
    for (int ip = 0; ip < mc; ip += MR, dst += MR * kc) {
        const float *src = ta ? A + k0 * lda + i0 + ip : A + (i0 + ip) * lda + k0;
        if (mc - ip >= MR) (ta ? im->pack_a_t : im->pack_a_n)(src, lda, kc, dst);
        else pack_a_any(ta, src, lda, kc, mc - ip, dst);
    }
}

/* Pack rows [k0, k0+kc) x columns [j0, j0+nc) of op(B) into NR-column panels
   (see pack_b_any), the last one zero-padded. */
static void pack_b(const impl_t *im, int tb, const float *B, ptrdiff_t ldb, int k0,
                   int j0, int kc, int nc, float *dst)
{
    for (int jp = 0; jp < nc; jp += NR, dst += NR * kc) {
        const float *src = tb ? B + (j0 + jp) * ldb + k0 : B + k0 * ldb + j0 + jp;
        if (nc - jp >= NR) (tb ? im->pack_b_t : im->pack_b_n)(src, ldb, kc, dst);
        else pack_b_any(tb, src, ldb, kc, nc - jp, dst);
    }
}

/* C (mc x nc) = alpha * packed A block * packed B block + beta * C. Edge tiles are
   computed whole into a scratch tile and only their valid part is merged. */
static void macro_kernel(kernel_fn *kern, int mc, int nc, int kc, float alpha,
                         const float *pa, const float *pb, float beta, float *C,
                         ptrdiff_t ldc)
{
    _Alignas(64) float tile[MR * NR];
    for (int jr = 0; jr < nc; jr += NR) {
        int n = nc - jr < NR ? nc - jr : NR;
        for (int ir = 0; ir < mc; ir += MR) {
            int m = mc - ir < MR ? mc - ir : MR;
            const float *a = pa + ir * kc, *b = pb + jr * kc;
            float *c = C + ir * ldc + jr;
            if (m == MR && n == NR) {
                kern(kc, a, b, c, ldc, alpha, beta);
                continue;
            }
            kern(kc, a, b, tile, NR, 1.0f, 0.0f);
            for (int i = 0; i < m; i++)
                for (int j = 0; j < n; j++)
                    c[i * ldc + j] = beta == 0 ? alpha * tile[i * NR + j]
                                               : alpha * tile[i * NR + j] + beta * c[i * ldc + j];
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

void cf_gemm_builtin(int ta, int tb, int M, int N, int K, float alpha,
                     const float *A, int lda, const float *B, int ldb,
                     float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return;
    if (K <= 0 || alpha == 0) {
        scale_c(M, N, beta, C, ldc);
        return;
    }
    if (cf_gemm_builtin_reserve()) {
        gemm_unpacked(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    float *pack_a_buf = pack_buf, *pack_b_buf = pack_buf + MC * KC;
    const impl_t *im = pick_impl();
    int ncb = block_size(N, NC, NR), kcb = block_size(K, KC, 1), mcb = block_size(M, MC, MR);
    for (int jc = 0; jc < N; jc += ncb) {
        int nc = N - jc < ncb ? N - jc : ncb;
        for (int pc = 0; pc < K; pc += kcb) {
            int kc = K - pc < kcb ? K - pc : kcb;
            float b = pc == 0 ? beta : 1.0f; /* later K blocks accumulate */
            pack_b(im, tb, B, ldb, pc, jc, kc, nc, pack_b_buf);
            for (int ic = 0; ic < M; ic += mcb) {
                int mc = M - ic < mcb ? M - ic : mcb;
                pack_a(im, ta, A, lda, ic, pc, mc, kc, pack_a_buf);
                macro_kernel(im->kernel, mc, nc, kc, alpha, pack_a_buf, pack_b_buf, b,
                             C + (ptrdiff_t)ic * ldc + jc, ldc);
            }
        }
    }
}
