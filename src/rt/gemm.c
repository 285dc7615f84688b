/* gemm.c - the one entry for matrix products: chooses the engine (a built-in
 * implementation per instruction set, or OpenBLAS), says why, and spreads large
 * products over the pool.
 *
 * The choice is made once, from what cpuid says this CPU runs (rt/cpu.h), never from
 * OpenBLAS's own detection: Debian's OpenBLAS 0.3.21 runs its generic Prescott (SSE3)
 * kernels on Xeons it does not know. The rule, in order:
 *   1. $CFLUX_GEMM or cf_set_gemm names an engine: that one.
 *   2. The CPU has AVX-512 (F, BW, DQ, VL): builtin-avx512. It has AVX2 and FMA:
 *      builtin-avx2. On the small and mid-sized products of training (batch 64 x a
 *      few hundred) these measured faster than OpenBLAS's own Zen and Haswell kernels
 *      (docs/performance.md), and they do not depend on OpenBLAS knowing the CPU.
 *   3. Otherwise OpenBLAS when it runs a kernel of its own for this CPU, else
 *      builtin-portable.
 * OpenBLAS runs single-threaded here (its own pool busy-waits, which costs several
 * times over on a loaded machine); our pool splits C into column or row panels, each a
 * single-threaded call. The split depends only on the sizes and the thread count, so
 * results are bitwise repeatable for a given thread count and engine. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "rt/cpu.h"
#include "rt/gemm.h"
#include "rt/gemm_builtin.h"
#include "rt/gemm_impl.h"
#include "rt/pool.h"

#ifdef CFLUX_HAVE_BLAS
#include <cblas.h>
void openblas_set_num_threads(int);
char *openblas_get_corename(void);
#endif

static const cf_gemm_impl *impl;   /* the built-in implementation, or NULL: OpenBLAS */
static char name[32];
static char why[256];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static _Atomic unsigned long long flops;

/* The built-in implementations this CPU can run, widest first. */
static int builtin_impls(const cf_gemm_impl **out)
{
    int n = 0;
#if defined(__x86_64__)
    const cf_cpu_info *c = cf_cpu();
    if (cf_cpu_avx512(c)) out[n++] = &cf_gemm_avx512;
    if (cf_cpu_avx2(c)) out[n++] = &cf_gemm_avx2;
#endif
    out[n++] = &cf_gemm_portable;
    return n;
}

/* Whether OpenBLAS's kernels are its own for a CPU with these features, not a
 * generic fallback: for AVX-512 one of its AVX-512 cores, for AVX2 an AVX2 one. */
static int openblas_fits(const char *core, const cf_cpu_info *c)
{
    static const char *avx512[] = {"SkylakeX", "CooperLake", "SapphireRapids"};
    static const char *avx2[] = {"Haswell", "Zen", "SkylakeX", "CooperLake", "SapphireRapids"};
    const char **list = cf_cpu_avx512(c) ? avx512 : avx2;
    int n = cf_cpu_avx512(c) ? 3 : 5;
    if (!cf_cpu_avx2(c)) return strcmp(core, "Prescott") != 0 && strcmp(core, "Core2") != 0 &&
                                strcmp(core, "Katmai") != 0 && strcmp(core, "Generic") != 0;
    for (int i = 0; i < n; i++)
        if (strcasecmp(core, list[i]) == 0) return 1;
    return 0;
}

static const char *openblas_core(void)
{
#ifdef CFLUX_HAVE_BLAS
    const char *c = openblas_get_corename();
    return c ? c : "unknown";
#else
    return NULL;
#endif
}

/* Set the engine by name; NULL if the name is not one of this build's engines. */
static const char *choose(const char *want)
{
    const cf_gemm_impl *all[3];
    int n = builtin_impls(all);
    if (strcmp(want, "builtin") == 0) {
        impl = all[0];
        return "builtin";
    }
    for (int i = 0; i < n; i++)
        if (strncmp(want, "builtin-", 8) == 0 && strcmp(want + 8, all[i]->name) == 0) {
            impl = all[i];
            return want;
        }
#ifdef CFLUX_HAVE_BLAS
    if (strcmp(want, "openblas") == 0) {
        impl = NULL;
        return want;
    }
#endif
    return NULL;
}

static void set_name(void)
{
    if (impl) snprintf(name, sizeof name, "builtin-%s", impl->name);
#ifdef CFLUX_HAVE_BLAS   /* without it, every engine is a built-in one */
    else snprintf(name, sizeof name, "openblas-%s", openblas_core());
#endif
}

/* The default engine, by the rule at the top; 0, or -1 when $CFLUX_GEMM names none
   of this build's engines (the rule's own choice is made then, and says so). */
static int choose_default(void)
{
    const cf_cpu_info *c = cf_cpu();
    const cf_gemm_impl *all[3];
    builtin_impls(all);
    const char *env = getenv("CFLUX_GEMM"), *core = openblas_core();
    char bad[128] = "";
    if (env && *env) {
        if (choose(env)) {
            set_name();
            snprintf(why, sizeof why, "chosen by CFLUX_GEMM=%s", env);
            return 0;
        }
        snprintf(bad, sizeof bad, "CFLUX_GEMM=%.40s is not an engine of this build (see cflux version); ", env);
    }
    if (all[0] != &cf_gemm_portable) {
        impl = all[0];
        set_name();
        snprintf(why, sizeof why, "%sthe CPU has %s: built-in kernels for it%s%s%s%s", bad,
                 cf_cpu_avx512(c) ? "AVX-512" : "AVX2 and FMA", core ? " (OpenBLAS would run its " : "",
                 core && !openblas_fits(core, c) ? "generic " : "", core ? core : "", core ? " kernels)" : "");
    } else if (core && openblas_fits(core, c)) {
        impl = NULL;
        set_name();
        snprintf(why, sizeof why, "%sthe CPU has no AVX2; OpenBLAS runs its '%s' kernels for it", bad, core);
    } else {
        impl = &cf_gemm_portable;
        set_name();
        snprintf(why, sizeof why, "%sthe CPU has no AVX2%s%s%s", bad, core ? "; OpenBLAS's '" : "", core ? core : "",
                 core ? "' kernels are generic" : "");
    }
    return bad[0] ? -1 : 0;
}

static void gemm_init(void)
{
#ifdef CFLUX_HAVE_BLAS
    openblas_set_num_threads(1);
#endif
    (void)choose_default();
}

int cf_set_gemm(const char *want)
{
    pthread_once(&once, gemm_init);
    const char *env = getenv("CFLUX_GEMM");
    if (!want && choose_default() == 0) return 0;
    if (!want) want = env;   /* $CFLUX_GEMM names no engine: say which there are */
    else if (choose(want)) {
        set_name();
        snprintf(why, sizeof why, "chosen by cf_set_gemm(\"%s\")", want);
        return 0;
    }
    const cf_gemm_impl *all[3];
    int n = builtin_impls(all);
    char list[128];
    size_t len = (size_t)snprintf(list, sizeof list, "builtin");
    for (int i = 0; i < n; i++) len += (size_t)snprintf(list + len, sizeof list - len, ", builtin-%s", all[i]->name);
#ifdef CFLUX_HAVE_BLAS
    snprintf(list + len, sizeof list - len, ", openblas");
#endif
    return cf_seterr("error: unknown matrix-product engine '%s' (this build and CPU have: %s)",
                     want ? want : "(null)", list);
}

const char *cf_gemm_name(void)
{
    pthread_once(&once, gemm_init);
    return name;
}

const char *cf_gemm_why(void)
{
    pthread_once(&once, gemm_init);
    return why;
}

double cf_gemm_flops(void) { return (double)atomic_load_explicit(&flops, memory_order_relaxed); }

void cf_gemm_add_flops(double n)
{
    atomic_fetch_add_explicit(&flops, (unsigned long long)n, memory_order_relaxed);
}

const struct cf_gemm_impl *cf_gemm_builtin_impl(void)
{
    pthread_once(&once, gemm_init);
    if (impl) return impl;
    const cf_gemm_impl *all[3];
    builtin_impls(all);
    return all[0];
}

static void gemm1(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                  const float *B, int ldb, float beta, float *C, int ldc, const cf_gemm_ep *ep)
{
    if (M <= 0 || N <= 0) return;
#ifdef CFLUX_HAVE_BLAS
    if (!impl) {
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K,
                    alpha, A, lda, B, ldb, beta, C, ldc);
        if (ep) cf_gemm_ep_apply(ep, M, N, C, ldc);
        return;
    }
#endif
    cf_gemm_builtin_ep(impl, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ep);
}

typedef struct {
    int ta, tb, M, N, K, lda, ldb, ldc, by_rows, per;   /* per: rows or columns a panel */
    const cf_gemm_ep *ep;
    float alpha, beta;
    const float *A, *B;
    float *C;
} job;

static void panel(void *p, int i)
{
    const job *j = p;
    int len = j->by_rows ? j->M : j->N;
    int b = i * j->per, e = b + j->per < len ? b + j->per : len;
    if (b >= e) return;
    if (j->by_rows) {
        const float *A = j->ta ? j->A + b : j->A + (size_t)b * j->lda;
        gemm1(j->ta, j->tb, e - b, j->N, j->K, j->alpha, A, j->lda, j->B, j->ldb, j->beta,
              j->C + (size_t)b * j->ldc, j->ldc, j->ep);
    } else {
        const float *B = j->tb ? j->B + (size_t)b * j->ldb : j->B + b;
        cf_gemm_ep ep = {j->ep && j->ep->bias ? j->ep->bias + b : NULL, j->ep ? j->ep->relu : 0};
        gemm1(j->ta, j->tb, j->M, e - b, j->K, j->alpha, j->A, j->lda, B, j->ldb, j->beta, j->C + b, j->ldc,
              j->ep ? &ep : NULL);
    }
}

/* The threading rule. A thread is worth waking for a share of at least share_min()
 * multiply-adds: about 8 us of one core's work at the engine's speed, against a few
 * microseconds to hand a task to a worker and to pack the operand that every panel
 * needs once more. On a 2-core Zen 1 (docs/performance.md), 64 x 64 x 128 (2^19,
 * shares of 2^18) ran 1.4-1.8x faster on two threads, and 64 x 10 x 64 (2^15) stays
 * on one. The rule depends on the sizes, thread count and engine only, so a result is
 * bitwise the same from run to run. */
static double share_min(void)
{
    if (!impl) return 1 << 17;                          /* OpenBLAS */
    if (impl == &cf_gemm_portable) return 1 << 15;      /* several times slower a core */
#if defined(__x86_64__)
    if (impl == &cf_gemm_avx512) return 1 << 18;        /* twice as fast as AVX2 */
#endif
    return 1 << 17;
}

void cf_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
             const float *B, int ldb, float beta, float *C, int ldc)
{
    cf_gemm_ep_run(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL);
}

void cf_gemm_ep_run(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                    const float *B, int ldb, float beta, float *C, int ldc, const cf_gemm_ep *ep)
{
    pthread_once(&once, gemm_init);
    atomic_fetch_add_explicit(&flops, 2ull * (unsigned long long)M * (unsigned long long)N * (unsigned long long)K,
                              memory_order_relaxed);
    int t = cf_threads();
    double work = (double)M * N * K;
    int tasks = t;
    if (tasks > work / share_min()) tasks = (int)(work / share_min());
    /* split C where the operand packed again by every panel is the smaller: by rows
       each panel packs all of op(B) (K x N), by columns all of op(A) (M x K) */
    int mr = impl ? impl->mr : 16, nr = impl ? impl->nr : 16;
    int by_rows = M >= N;
    if (by_rows && M < 2 * mr) by_rows = 0;
    if (!by_rows && N < 2 * nr) by_rows = M >= 2 * mr;
    int len = by_rows ? M : N, unit = by_rows ? mr : nr;
    if (tasks > len / unit) tasks = len / unit;
    if (tasks <= 1) {
        gemm1(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ep);
        return;
    }
    /* panels of whole register tiles, as equal as they can be */
    int per = ((len + tasks - 1) / tasks + unit - 1) / unit * unit;
    job j = {ta, tb, M, N, K, lda, ldb, ldc, by_rows, per, ep, alpha, beta, A, B, C};
    cf_parallel_for((len + per - 1) / per, panel, &j);
}

size_t cf_gemm_pb_floats(int K, int N) { return (size_t)((N + 31) / 32 * 32) * (size_t)(K > 0 ? K : 0); }

void cf_gemm_pb_make(cf_gemm_pb *p, int tb, int K, int N, const float *B, int ldb, float *buf)
{
    pthread_once(&once, gemm_init);
    *p = (cf_gemm_pb){tb, K, N, ldb, B, NULL, impl};
    if (impl && K > 0 && N > 0 && buf) {
        cf_gemm_builtin_pack_b(impl, tb, K, N, B, ldb, buf);
        p->packed = buf;
    }
}

void cf_gemm_pb_run(const cf_gemm_pb *p, int M, int j0, int n, float alpha, const float *A, int lda, float beta,
                    float *C, int ldc)
{
    if (M <= 0 || n <= 0) return;
    cf_gemm_add_flops(2.0 * M * n * p->K);
    if (p->packed &&
        cf_gemm_builtin_packed(p->im, M, j0, n, p->K, p->N, alpha, A, lda, p->packed, beta, C, ldc) == 0)
        return;
    const float *B = p->tb ? p->B + (size_t)j0 * p->ldb : p->B + j0;
    gemm1(0, p->tb, M, n, p->K, alpha, A, lda, B, p->ldb, beta, C, ldc, NULL);
}
