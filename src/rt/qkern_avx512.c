/* qkern_avx512.c - the 8-bit product's kernels for AVX-512 VNNI (qgemm.h): vpdpbusd
 * sums four products of an unsigned and a signed byte into each 32-bit lane, 64
 * multiply-adds an instruction. Compiled with AVX-512 F/BW/VL and VNNI, called only
 * where cpuid says they run. A tile is 8 rows by 32 columns: 16 accumulators. This
 * file is compiled twice: as it is, and with CF_QKERN_NARROW (qkern_avx512_n16.c) for
 * products of at most 16 columns (a convolution of 8 or 16 channels), whose tile is 16
 * rows by 16 columns, so that no half of each accumulator is wasted. */
#include <immintrin.h>
#include <string.h>

#include "rt/qgemm.h"

#ifndef PF_HINT
#define PF_HINT _MM_HINT_T0
#endif

#ifdef CF_QKERN_NARROW
enum { MR = 16, NV = 1, NR = 16 * NV };
#define IMPL cf_qgemm_avx512vnni16
#define NAME "avx512-vnni-16"
#else
enum { MR = 8, NV = 2, NR = 16 * NV };   /* 8 x 32 measured faster than 6 x 64, 12 x 32, 4 x 64 */
#define IMPL cf_qgemm_avx512vnni
#define NAME "avx512-vnni"
#endif

/* acc += the four products of unsigned a and signed b in each lane. In assembly: GCC
   12 copies every accumulator of _mm512_dpbusd_epi32 to another register each step. */
#define DPBUSD(acc, a, b) __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b))

/* The epilogue of a tile (qgemm.h), the same operations as cf_qtile_store in the
   same order: exact integers, one rounding to float, two products, the bias. Rows
   past mv are not stored, columns past nv masked off. */
__attribute__((always_inline)) static inline void store_tile(__m512i acc[MR][NV], const cf_qtile *t)
{
    __m512i cs[NV];
    __m512 sc[NV], bias[NV], zero = _mm512_setzero_ps();
    __mmask16 m[NV];
    _Pragma("GCC unroll 16") for (int h = 0; h < NV; h++) {
        int left = t->nv - 16 * h;
        m[h] = left >= 16 ? (__mmask16)0xffff : left > 0 ? (__mmask16)((1u << left) - 1) : 0;
        cs[h] = _mm512_maskz_loadu_epi32(m[h], t->colsum + 16 * h);
        sc[h] = _mm512_maskz_loadu_ps(m[h], t->col_scale + 16 * h);
        bias[h] = t->bias ? _mm512_maskz_loadu_ps(m[h], t->bias + 16 * h) : zero;
    }
    _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {
        if (i >= t->mv) break;
        __m512i zi = _mm512_set1_epi32(t->row_zero[i]);
        __m512 si = _mm512_set1_ps(t->row_scale[i]);
        _Pragma("GCC unroll 16") for (int h = 0; h < NV; h++) {
            __m512 v = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[i][h], _mm512_mullo_epi32(zi, cs[h])));
            v = _mm512_mul_ps(v, _mm512_mul_ps(si, sc[h]));
            if (t->bias) v = _mm512_add_ps(v, bias[h]);
            if (t->relu) v = _mm512_max_ps(v, zero);   /* maxps gives +0 for a NaN and for -0, as the C does */
            _mm512_mask_storeu_ps(t->C + i * t->ldc + 16 * h, m[h], v);
        }
    }
}

static void kernel(int kq, const uint8_t *a, ptrdiff_t lda, const int8_t *b, const cf_qtile *t)
{
    __m512i acc[MR][NV];
    _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++)
        _Pragma("GCC unroll 16") for (int h = 0; h < NV; h++) acc[i][h] = _mm512_setzero_si512();
    const char *pf = t->pf;
    int pfn = t->pf_lines;
    for (int q = 0; q < kq; q++, b += 4 * NR) {
        if (q < pfn) _mm_prefetch(pf + 64 * q, PF_HINT);
        __m512i bv[NV];
        _Pragma("GCC unroll 16") for (int h = 0; h < NV; h++) bv[h] = _mm512_load_si512(b + 64 * h);
        _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {
            int32_t v;
            memcpy(&v, a + i * lda + 4 * q, 4);
            __m512i ai = _mm512_set1_epi32(v);
            _Pragma("GCC unroll 16") for (int h = 0; h < NV; h++) DPBUSD(acc[i][h], ai, bv[h]);
        }
    }
    store_tile(acc, t);
}

#ifndef CF_QKERN_NARROW   /* one copy of the helpers, which the narrow kernels share */
void cf_qkern_avx512_quant(const float *x, int n, float inv, int z, uint8_t *q);
void cf_qkern_avx512_minmax(const float *x, int n, float *lo, float *hi);
void cf_qkern_avx512_direct(const cf_qdirect *d);

/* acc += the four products of unsigned a and the signed word at p, broadcast. */
#define DPBUSD_B(acc, a, p) __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(a), "m"(*(const int32_t *)(p)))

/* cf_qdirect: a step is 48 positions (three vectors) by 8 channels, 24 accumulators;
   each word of the kernels broadcast from memory. The epilogue is store_tile's. */
void cf_qkern_avx512_direct(const cf_qdirect *d)
{
    enum { PV = CF_QDIRECT_POS / 16, OC = CF_QDIRECT_OC };
    int S = d->C * d->KH * d->G, blocks = (d->O + OC - 1) / OC;
    ptrdiff_t off[CF_QDIRECT_MAX_C * CF_QDIRECT_MAX_TAPS * (CF_QDIRECT_MAX_TAPS / 4)];
    for (int st = 0; st < S; st++) {
        int c = st / (d->KH * d->G), ki = st / d->G % d->KH, g = st % d->G;
        off[st] = (ptrdiff_t)c * (ptrdiff_t)d->plane + (ptrdiff_t)ki * d->Wp + 4 * g;
    }
    const __m512 zero = _mm512_setzero_ps();
    for (int ob = 0; ob < blocks; ob++) {
        const int32_t *wb = d->w + (size_t)ob * S * OC;
        for (int p0 = 0; p0 < d->npos; p0 += CF_QDIRECT_POS) {
            __m512i acc[PV][OC];
            _Pragma("GCC unroll 16") for (int p = 0; p < PV; p++)
                _Pragma("GCC unroll 16") for (int oc = 0; oc < OC; oc++) acc[p][oc] = _mm512_setzero_si512();
            const uint32_t *x = d->x4 + p0;
            const int32_t *w = wb;
            for (int st = 0; st < S; st++, w += OC) {
                __m512i a[PV];
                _Pragma("GCC unroll 16") for (int p = 0; p < PV; p++) a[p] = _mm512_loadu_si512(x + off[st] + 16 * p);
                _Pragma("GCC unroll 16") for (int oc = 0; oc < OC; oc++)
                    _Pragma("GCC unroll 16") for (int p = 0; p < PV; p++) DPBUSD_B(acc[p][oc], a[p], w + oc);
            }
            _Pragma("GCC unroll 16") for (int oc = 0; oc < OC; oc++) {
                int o = ob * OC + oc;
                if (o >= d->O) break;
                __m512i zc = _mm512_set1_epi32(d->zero * d->colsum[o]);
                __m512 sc = _mm512_set1_ps(d->scale[o]), bias = _mm512_set1_ps(d->bias[o]);
                float *y = d->out + (size_t)o * d->npos + p0;
                _Pragma("GCC unroll 16") for (int p = 0; p < PV; p++) {
                    __m512 v = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[p][oc], zc));
                    v = _mm512_add_ps(_mm512_mul_ps(v, sc), bias);
                    if (d->relu) v = _mm512_max_ps(v, zero);
                    _mm512_storeu_ps(y + 16 * p, v);
                }
            }
        }
    }
}

void cf_qkern_avx512_quant(const float *x, int n, float inv, int z, uint8_t *q)
{
    __m512 vi = _mm512_set1_ps(inv), lo = _mm512_set1_ps((float)-z), hi = _mm512_set1_ps((float)(CF_QA_MAX - z));
    __m512i vz = _mm512_set1_epi32(z);
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + i), vi);
        v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);   /* maxps gives lo for a NaN */
        __m512i r = _mm512_add_epi32(_mm512_cvtps_epi32(v), vz);
        _mm_storeu_si128((__m128i *)(q + i), _mm512_cvtepi32_epi8(r));
    }
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), vi);
        v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
        __m512i r = _mm512_add_epi32(_mm512_cvtps_epi32(v), vz);
        _mm512_mask_cvtepi32_storeu_epi8(q + i, m, r);
    }
}

void cf_qkern_avx512_minmax(const float *x, int n, float *lo, float *hi)
{
    __m512 l = _mm512_setzero_ps(), h = _mm512_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        l = _mm512_min_ps(v, l);   /* minps gives l for a NaN */
        h = _mm512_max_ps(v, h);
    }
    if (i < n) {
        __m512 v = _mm512_maskz_loadu_ps((__mmask16)((1u << (n - i)) - 1), x + i);   /* zeros past n */
        l = _mm512_min_ps(v, l);
        h = _mm512_max_ps(v, h);
    }
    *lo = _mm512_reduce_min_ps(l);
    *hi = _mm512_reduce_max_ps(h);
}

#else
void cf_qkern_avx512_quant(const float *x, int n, float inv, int z, uint8_t *q);
void cf_qkern_avx512_minmax(const float *x, int n, float *lo, float *hi);
void cf_qkern_avx512_direct(const cf_qdirect *d);
#endif

const cf_qgemm_impl IMPL = {NAME, MR, NR, kernel, cf_qkern_avx512_quant, cf_qkern_avx512_minmax, cf_qkern_avx512_direct};
