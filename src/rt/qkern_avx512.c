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
#endif

const cf_qgemm_impl IMPL = {NAME, MR, NR, kernel, cf_qkern_avx512_quant, cf_qkern_avx512_minmax};
