/* qgemm.c - the 8-bit integer product (qgemm.h): choosing the kernels, packing the
 * weights, quantizing rows of A, splitting the work over the pool, and the portable
 * kernels.
 *
 * The work is split into blocks of rows, a contiguous run of them to each thread: a
 * block's rows are quantized into the scratch (each row padded with zeros to Kp, the
 * block to a whole tile), then the kernel runs over each panel of W and each tile of
 * rows, and the epilogue turns the tile's integers into floats in C. Meanwhile the
 * kernels prefetch the next block's rows of A, a line every step of their loop until
 * the block is in: a batch of inputs far larger than the caches (an MLP's first
 * layer reads 3 kB a row) then arrives while the integers are summed, not after.
 * (Prefetches issued all at once between kernels measured no faster: they queue
 * behind each other.) A product of fewer rows than threads splits the panels
 * of W instead, after quantizing its rows on the calling thread. Every integer sum is
 * exact, so no split changes a bit. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt/cpu.h"
#include "rt/pool.h"
#include "rt/qgemm.h"


static size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

/* ---- The portable kernels ---- */

static void kernel_portable(int kq, const uint8_t *a, ptrdiff_t lda, const int8_t *b, const cf_qtile *t)
{
    enum { MR = 4, NR = 16 };
    int32_t acc[MR][NR] = {{0}};
    for (int q = 0; q < kq; q++, b += 4 * NR)
        for (int i = 0; i < MR; i++) {
            const uint8_t *ai = a + i * lda + 4 * q;
            for (int j = 0; j < NR; j++)
                acc[i][j] += ai[0] * b[4 * j] + ai[1] * b[4 * j + 1] + ai[2] * b[4 * j + 2] + ai[3] * b[4 * j + 3];
        }
    cf_qtile_store(&acc[0][0], NR, t);
}

void cf_qtile_store(const int32_t *c, int nr, const cf_qtile *t)
{
    for (int i = 0; i < t->mv; i++) {
        float *y = t->C + i * t->ldc, sa = t->row_scale[i];
        int za = t->row_zero[i];
        for (int j = 0; j < t->nv; j++) {
            float v = (float)(c[i * nr + j] - za * t->colsum[j]) * (sa * t->col_scale[j]);
            if (t->bias) v += t->bias[j];
            y[j] = t->relu && !(v > 0) ? 0 : v;
        }
    }
}

static void quant_portable(const float *x, int n, float inv, int z, uint8_t *q)
{
    float lo = (float)-z, hi = (float)(CF_QA_MAX - z);
    for (int i = 0; i < n; i++) {
        float v = x[i] * inv;
        v = v > lo ? v : lo;   /* a NaN becomes lo, as maxps does it */
        v = v < hi ? v : hi;
        q[i] = (uint8_t)((int)nearbyintf(v) + z);
    }
}

static void minmax_portable(const float *x, int n, float *lo, float *hi)
{
    float l = 0, h = 0;
    for (int i = 0; i < n; i++) {
        l = x[i] < l ? x[i] : l;
        h = x[i] > h ? x[i] : h;
    }
    *lo = l;
    *hi = h;
}

const cf_qgemm_impl cf_qgemm_portable = {"portable", 4, 16, kernel_portable, quant_portable, minmax_portable, NULL};

/* ---- Choosing the kernels ---- */

static const cf_qgemm_impl *impl;
static char why[256];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static _Atomic unsigned long long ops;

/* The implementations this CPU runs, best first. */
static int impls(const cf_qgemm_impl **out, const char **reason)
{
    int n = 0;
    *reason = "no x86-64 vector kernels in this build";
#if defined(__x86_64__)
    const cf_cpu_info *c = cf_cpu();
    if (cf_cpu_avx512(c) && c->avx512vnni) out[n++] = &cf_qgemm_avx512vnni, out[n++] = &cf_qgemm_avx512vnni16;
    if (cf_cpu_avx2(c) && c->avxvnni) out[n++] = &cf_qgemm_avxvnni;
    if (cf_cpu_avx2(c)) out[n++] = &cf_qgemm_avx2;
    *reason = cf_cpu_avx512(c) && c->avx512vnni ? "the CPU has AVX-512 VNNI (vpdpbusd on 512 bits)"
              : cf_cpu_avx2(c) && c->avxvnni    ? "the CPU has AVX-VNNI (vpdpbusd on 256 bits), not AVX-512 VNNI"
              : cf_cpu_avx2(c)                  ? "the CPU has AVX2 (vpmaddubsw) but no VNNI"
                                                : "the CPU has no AVX2";
#endif
    out[n++] = &cf_qgemm_portable;
    return n;
}

const cf_qgemm_impl *cf_qgemm_impl_named(const char *name)
{
    const cf_qgemm_impl *all[6];
    const char *reason;
    int n = impls(all, &reason);
    for (int i = 0; i < n; i++)
        if (strcmp(all[i]->name, name) == 0) return all[i];
    return NULL;
}

static void choose(void)
{
    const cf_qgemm_impl *all[6] = {0};
    const char *reason, *env = getenv("CFLUX_QGEMM");
    impls(all, &reason);
    impl = all[0];
    snprintf(why, sizeof why, "%s", reason);
    if (env && *env) {
        const cf_qgemm_impl *named = cf_qgemm_impl_named(env);
        if (named) {
            impl = named;
            snprintf(why, sizeof why, "CFLUX_QGEMM=%s", env);
        } else {   /* the tool refuses this (its name differs from the one chosen) */
            int n = snprintf(why, sizeof why, "'%s' is not an 8-bit kernel this build and CPU run (they run:", env);
            for (int i = 0; all[i] && n < (int)sizeof why; i++)
                n += snprintf(why + n, sizeof why - (size_t)n, "%s %s", i ? "," : "", all[i]->name);
            if (n < (int)sizeof why) snprintf(why + n, sizeof why - (size_t)n, ")");
        }
    }
}

const cf_qgemm_impl *cf_qgemm_for(const cf_qgemm_impl *im, int N)
{
#if defined(__x86_64__)
    if (im == &cf_qgemm_avx512vnni && N <= 16) return &cf_qgemm_avx512vnni16;
#endif
    (void)N;
    return im;
}

const cf_qgemm_impl *cf_qgemm_default(void)
{
    pthread_once(&once, choose);
    return impl;
}

const char *cf_qgemm_name(void) { return cf_qgemm_default()->name; }

const char *cf_qgemm_why(void)
{
    cf_qgemm_default();
    return why;
}

double cf_qgemm_ops(void) { return (double)atomic_load_explicit(&ops, memory_order_relaxed); }

/* ---- Weights ---- */

static size_t packed_bytes(const cf_qgemm_impl *im, int K, int N)
{
    return round_up((size_t)round_up((size_t)N, (size_t)im->nr) * round_up((size_t)K, 4), 64);
}

size_t cf_qweights_bytes(const cf_qgemm_impl *im, int K, int N)
{
    return packed_bytes(im, K, N) + round_up((size_t)N, (size_t)im->nr) * (sizeof(int32_t) + sizeof(float)) + 64;
}

void cf_qweights_pack(cf_qweights *qw, const cf_qgemm_impl *im, int K, int N, const int8_t *w, ptrdiff_t sk,
                      ptrdiff_t sn, const float *scale, void *buf)
{
    int nr = im->nr, Kp = (int)round_up((size_t)K, 4), panels = (N + nr - 1) / nr;
    int8_t *p = (int8_t *)round_up((size_t)(uintptr_t)buf, 64);
    *qw = (cf_qweights){.K = K, .N = N, .Kp = Kp, .panels = panels, .im = im, .packed = p,
                        .colsum = (int32_t *)(p + packed_bytes(im, K, N))};
    qw->scale = (float *)(qw->colsum + panels * nr);
    for (int pn = 0; pn < panels; pn++)
        for (int q = 0; q < Kp / 4; q++)
            for (int j = 0; j < nr; j++)
                for (int t = 0; t < 4; t++) {
                    int k = 4 * q + t, col = pn * nr + j;
                    *p++ = k < K && col < N ? w[k * sk + col * sn] : 0;
                }
    for (int j = 0; j < panels * nr; j++) {
        int32_t s = 0;
        for (int k = 0; k < K && j < N; k++) s += w[k * sk + j * sn];
        qw->colsum[j] = s;
        qw->scale[j] = j < N ? scale[j] : 0;
    }
}

size_t cf_qdirect_words(int O, int C, int KH, int KW)
{
    return round_up((size_t)O, CF_QDIRECT_OC) * (size_t)C * (size_t)KH * (size_t)((KW + 3) / 4);
}

void cf_qdirect_pack(int32_t *w, const int8_t *k, int O, int C, int KH, int KW)
{
    int G = (KW + 3) / 4, S = C * KH * G, blocks = (O + CF_QDIRECT_OC - 1) / CF_QDIRECT_OC;
    for (int ob = 0; ob < blocks; ob++)
        for (int st = 0; st < S; st++)
            for (int oc = 0; oc < CF_QDIRECT_OC; oc++) {
                int o = ob * CF_QDIRECT_OC + oc, c = st / (KH * G), ki = st / G % KH, g = st % G;
                uint32_t word = 0;
                for (int t = 0; t < 4; t++) {
                    int kj = 4 * g + t;
                    int8_t v = o < O && kj < KW ? k[(((size_t)o * C + c) * KH + ki) * KW + kj] : 0;
                    word |= (uint32_t)(uint8_t)v << (8 * t);
                }
                memcpy(w++, &word, 4);
            }
}

/* ---- Activations ---- */

void cf_qact_range(float lo, float hi, float *scale, int *zero)
{
    lo = lo < 0 ? lo : 0;
    hi = hi > 0 ? hi : 0;
    float s = (hi - lo) / CF_QA_MAX;
    if (!(s > 0) || !isfinite(s) || !(s * CF_QA_MAX < INFINITY)) {
        *scale = 1;
        *zero = 0;
        return;
    }
    float z = nearbyintf(-lo / s);
    *scale = s;
    *zero = z < 0 ? 0 : z > CF_QA_MAX ? CF_QA_MAX : (int)z;
}

/* ---- The product ---- */

typedef struct job {
    const cf_qweights *w;
    const float *col_scale;   /* N: w's scales, or the caller's */
    int M;
    const float *A;
    ptrdiff_t lda, ldc;
    const cf_qact *qa;
    float *C;
    const cf_gemm_ep *ep;
    const uint8_t *qa_rows;   /* rows of quantized A, qlda bytes apart, M rounded up to the tile */
    ptrdiff_t qlda;
    float *row_scale;
    int *row_zero;
} job;

/* Quantize rows [r0, r1) of A, and zero the rows from M to r1p (the tile's padding). */
static void quantize_rows(const job *jb, int r0, int r1, int r1p)
{
    const cf_qgemm_impl *im = jb->w->im;
    int K = jb->w->K, Kp = jb->w->Kp;
    for (int i = r0; i < r1; i++) {
        const float *x = jb->A + i * jb->lda;
        float s = jb->qa->scale;
        int z = jb->qa->zero;
        if (jb->qa->dynamic) {
            float lo, hi;
            im->minmax(x, K, &lo, &hi);
            cf_qact_range(lo, hi, &s, &z);
        }
        jb->row_scale[i] = s;
        jb->row_zero[i] = z;
        uint8_t *q = (uint8_t *)jb->qa_rows + (size_t)i * Kp;
        im->quant(x, K, 1 / s, z, q);
        memset(q + K, 0, (size_t)(Kp - K));
    }
    if (r1p > r1) memset((uint8_t *)jb->qa_rows + (size_t)r1 * Kp, 0, (size_t)(r1p - r1) * Kp);
}

/* Rows [r0, r1) (quantized) against panels [p0, p1) of W, the kernels prefetching
   the pf_bytes at pf (NULL: none) in equal shares meanwhile. */
static void compute(const job *jb, int r0, int r1, int p0, int p1, const char *pf, size_t pf_bytes)
{
    const cf_qweights *w = jb->w;
    const cf_qgemm_impl *im = w->im;
    int mr = im->mr, nr = im->nr, Kp = w->Kp;
    int relu = jb->ep && jb->ep->relu;
    size_t lines = pf ? (pf_bytes + 63) / 64 : 0, calls = (size_t)(p1 - p0) * (size_t)((r1 - r0 + mr - 1) / mr);
    size_t per = calls ? (lines + calls - 1) / calls : 0, done = 0;
    for (int p = p0; p < p1; p++) {
        const int8_t *b = w->packed + (size_t)p * Kp * nr;
        int j0 = p * nr, nv = w->N - j0 < nr ? w->N - j0 : nr;
        for (int i0 = r0; i0 < r1; i0 += mr) {
            cf_qtile t = {.row_scale = jb->row_scale + i0, .row_zero = jb->row_zero + i0, .colsum = w->colsum + j0,
                          .col_scale = jb->col_scale + j0, .bias = jb->ep && jb->ep->bias ? jb->ep->bias + j0 : NULL,
                          .relu = relu, .mv = r1 - i0 < mr ? r1 - i0 : mr, .nv = nv, .C = jb->C + i0 * jb->ldc + j0,
                          .ldc = jb->ldc};
            if (done < lines) {
                t.pf = pf + 64 * done;
                t.pf_lines = (int)(lines - done < per ? lines - done : per);
                done += (size_t)t.pf_lines;
            }
            im->kernel(Kp / 4, jb->qa_rows + (size_t)i0 * jb->qlda, jb->qlda, b, &t);
        }
    }
}

/* Blocks [b, e) of rows, in order: each quantized, then multiplied while the next
   block's rows of A are prefetched. */
static void row_blocks(void *ctx, size_t b, size_t e)
{
    const job *jb = ctx;
    for (size_t t = b; t < e; t++) {
        int r0 = (int)t * CF_QGEMM_ROWS, r1 = r0 + CF_QGEMM_ROWS < jb->M ? r0 + CF_QGEMM_ROWS : jb->M;
        int n1 = jb->M - r1 < CF_QGEMM_ROWS ? jb->M - r1 : CF_QGEMM_ROWS;   /* the next block's rows */
        quantize_rows(jb, r0, r1, (int)round_up((size_t)r1, (size_t)jb->w->im->mr));
        const float *next = jb->A + (size_t)r1 * jb->lda;
        size_t bytes = t + 1 < e ? ((size_t)(n1 - 1) * jb->lda + jb->w->K) * sizeof(float) : 0;
        compute(jb, r0, r1, 0, jb->w->panels, (const char *)next, bytes);
    }
}

static void panel_task(void *ctx, int p)
{
    const job *jb = ctx;
    compute(jb, 0, jb->M, p, p + 1, NULL, 0);
}

size_t cf_qgemm_ws_bytes(const cf_qweights *w, int M)
{
    size_t rows = round_up((size_t)M, CF_QGEMM_ROWS);
    return round_up(rows * (size_t)w->Kp, 64) + rows * (sizeof(float) + sizeof(int));
}

void cf_qgemm(const cf_qweights *w, int M, const float *A, ptrdiff_t lda, const cf_qact *qa, float *C,
              ptrdiff_t ldc, const cf_gemm_ep *ep, void *ws)
{
    if (M <= 0 || w->N <= 0) return;
    size_t rows = round_up((size_t)M, CF_QGEMM_ROWS);
    uint8_t *q = ws;
    float *rs = (float *)(q + round_up(rows * (size_t)w->Kp, 64));
    job jb = {.w = w, .col_scale = w->scale, .M = M, .A = A, .lda = lda, .ldc = ldc, .qa = qa, .C = C, .ep = ep,
              .qa_rows = q, .qlda = w->Kp, .row_scale = rs, .row_zero = (int *)(rs + rows)};
    double n_ops = (double)M * w->N * w->K;
    atomic_fetch_add_explicit(&ops, (unsigned long long)n_ops, memory_order_relaxed);
    int tasks = (M + CF_QGEMM_ROWS - 1) / CF_QGEMM_ROWS, threads = cf_threads();
    if (n_ops < CF_QGEMM_SERIAL_OPS || threads == 1) {
        row_blocks(&jb, 0, (size_t)tasks);
    } else if (tasks >= threads) {
        cf_parallel_range((size_t)tasks, CF_QGEMM_SERIAL_OPS, row_blocks, &jb);
    } else {
        quantize_rows(&jb, 0, M, (int)round_up((size_t)M, (size_t)w->im->mr));
        cf_parallel_for(w->panels, panel_task, &jb);
    }
}

void cf_qgemm_rows(const cf_qweights *w, int M, const uint8_t *qa, ptrdiff_t lda, const float *row_scale,
                   const int *row_zero, const float *col_scale, float *C, ptrdiff_t ldc, const cf_gemm_ep *ep,
                   const void *prefetch, size_t prefetch_bytes)
{
    if (M <= 0 || w->N <= 0) return;
    job jb = {.w = w, .col_scale = col_scale ? col_scale : w->scale, .M = M, .ldc = ldc, .C = C, .ep = ep,
              .qa_rows = qa, .qlda = lda, .row_scale = (float *)row_scale, .row_zero = (int *)row_zero};
    atomic_fetch_add_explicit(&ops, (unsigned long long)((double)M * w->N * w->K), memory_order_relaxed);
    compute(&jb, 0, M, 0, w->panels, prefetch, prefetch_bytes);
}

void cf_qgemm_quantize(const cf_qweights *w, int M, const float *A, ptrdiff_t lda, const cf_qact *qa, uint8_t *q,
                       float *row_scale, int *row_zero)
{
    job jb = {.w = w, .M = M, .A = A, .lda = lda, .qa = qa, .qa_rows = q, .qlda = w->Kp, .row_scale = row_scale,
              .row_zero = row_zero};
    quantize_rows(&jb, 0, M, (int)round_up((size_t)M, (size_t)w->im->mr));
}

const char *cf_int8_kernel(void) { return cf_qgemm_name(); }
const char *cf_int8_kernel_why(void) { return cf_qgemm_why(); }
