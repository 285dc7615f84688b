/* qkern_avx512.c - the 8-bit product's kernels for AVX-512 VNNI (qgemm.h): vpdpbusd
 * sums four products of an unsigned and a signed byte into each 32-bit lane, 64
 * multiply-adds an instruction. Compiled with AVX-512 F/BW/VL and VNNI, called only
 * where cpuid says they run. A tile is 8 rows by 32 columns: 16 accumulators. */
#include <immintrin.h>
#include <string.h>

#include "rt/qgemm.h"

enum { MR = 8, NR = 32 };

static void kernel(int kq, const uint8_t *a, ptrdiff_t lda, const int8_t *b, int32_t *c)
{
    __m512i acc[MR][2];
    for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = _mm512_setzero_si512();
    for (int q = 0; q < kq; q++, b += 4 * NR) {
        __m512i b0 = _mm512_load_si512(b), b1 = _mm512_load_si512(b + 64);
        for (int i = 0; i < MR; i++) {
            int32_t v;
            memcpy(&v, a + i * lda + 4 * q, 4);
            __m512i ai = _mm512_set1_epi32(v);
            acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], ai, b0);
            acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], ai, b1);
        }
    }
    for (int i = 0; i < MR; i++) {
        _mm512_store_si512(c + i * NR, acc[i][0]);
        _mm512_store_si512(c + i * NR + 16, acc[i][1]);
    }
}

static void quant(const float *x, int n, float inv, int z, uint8_t *q)
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

static void minmax(const float *x, int n, float *lo, float *hi)
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

const cf_qgemm_impl cf_qgemm_avx512vnni = {"avx512-vnni", MR, NR, kernel, quant, minmax};
