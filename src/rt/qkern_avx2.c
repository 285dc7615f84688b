/* qkern_avx2.c - the 8-bit product's kernels for AVX2 and for AVX-VNNI (qgemm.h).
 *
 * AVX2: vpmaddubsw multiplies unsigned bytes by signed ones and adds pairs into 16
 * bits with saturation; activations of 7 bits keep every pair within range (2 x 127
 * x 127 = 32,258), and vpmaddwd by ones adds the pairs of pairs into 32 bits: the
 * exact sum, 32 multiply-adds in three instructions. AVX-VNNI does the same in one,
 * vpdpbusd on 256 bits. This file is compiled twice: as it is for AVX2, and with
 * CF_QKERN_VNNI (qkern_avxvnni.c) for AVX-VNNI. A tile is 4 rows by 16 columns for
 * AVX2 (its temporaries need registers), 6 by 16 with VNNI. */
#include <immintrin.h>
#include <string.h>

#include "rt/qgemm.h"

#ifdef CF_QKERN_VNNI
enum { MR = 6, NR = 16 };
/* in assembly: GCC 12 copies every accumulator of _mm256_dpbusd_avx_epi32 each step */
#define MADD(acc, a, b) __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b))
#define IMPL cf_qgemm_avxvnni
#define NAME "avx-vnni"
#else
enum { MR = 4, NR = 16 };
#define MADD(acc, a, b) (acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), _mm256_set1_epi16(1))))
#define IMPL cf_qgemm_avx2
#define NAME "avx2"
#endif

/* The epilogue of a tile (qgemm.h), the same operations as cf_qtile_store in the
   same order: exact integers, one rounding to float, two products, the bias. Rows
   past mv are not stored, columns past nv masked off. */
__attribute__((always_inline)) static inline void store_tile(__m256i acc[MR][2], const cf_qtile *t)
{
    if (t->nv < NR) {   /* the edge: in plain C */
        int32_t c[MR * NR] __attribute__((aligned(32)));
        _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {
            _mm256_store_si256((__m256i *)(c + i * NR), acc[i][0]);
            _mm256_store_si256((__m256i *)(c + i * NR + 8), acc[i][1]);
        }
        cf_qtile_store(c, NR, t);
        return;
    }
    __m256i cs[2] = {_mm256_loadu_si256((const __m256i *)t->colsum), _mm256_loadu_si256((const __m256i *)(t->colsum + 8))};
    __m256 sc[2] = {_mm256_loadu_ps(t->col_scale), _mm256_loadu_ps(t->col_scale + 8)}, zero = _mm256_setzero_ps();
    __m256 bias[2] = {zero, zero};
    if (t->bias) bias[0] = _mm256_loadu_ps(t->bias), bias[1] = _mm256_loadu_ps(t->bias + 8);
    _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {
        if (i >= t->mv) break;
        __m256i zi = _mm256_set1_epi32(t->row_zero[i]);
        __m256 si = _mm256_set1_ps(t->row_scale[i]);
        _Pragma("GCC unroll 16") for (int h = 0; h < 2; h++) {
            __m256 v = _mm256_cvtepi32_ps(_mm256_sub_epi32(acc[i][h], _mm256_mullo_epi32(zi, cs[h])));
            v = _mm256_mul_ps(v, _mm256_mul_ps(si, sc[h]));
            if (t->bias) v = _mm256_add_ps(v, bias[h]);
            if (t->relu) v = _mm256_max_ps(v, zero);   /* maxps gives +0 for a NaN and for -0, as the C does */
            _mm256_storeu_ps(t->C + i * t->ldc + 8 * h, v);
        }
    }
}

static void kernel(int kq, const uint8_t *a, ptrdiff_t lda, const int8_t *b, const cf_qtile *t)
{
    __m256i acc[MR][2];
    _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = _mm256_setzero_si256();
    const char *pf = t->pf;
    int pfn = t->pf_lines;
    for (int q = 0; q < kq; q++, b += 4 * NR) {
        if (q < pfn) _mm_prefetch(pf + 64 * q, _MM_HINT_T0);   /* the caller's hint (cf_qtile) */
        __m256i b0 = _mm256_load_si256((const __m256i *)b), b1 = _mm256_load_si256((const __m256i *)(b + 32));
        _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {
            int32_t v;
            memcpy(&v, a + i * lda + 4 * q, 4);
            __m256i ai = _mm256_set1_epi32(v);
            MADD(acc[i][0], ai, b0);
            MADD(acc[i][1], ai, b1);
        }
    }
    store_tile(acc, t);
}

#ifndef CF_QKERN_VNNI   /* one copy of the helpers, shared with the VNNI kernels */
void cf_qkern_avx2_quant(const float *x, int n, float inv, int z, uint8_t *q);
void cf_qkern_avx2_minmax(const float *x, int n, float *lo, float *hi);

void cf_qkern_avx2_quant(const float *x, int n, float inv, int z, uint8_t *q)
{
    __m256 vi = _mm256_set1_ps(inv), lo = _mm256_set1_ps((float)-z), hi = _mm256_set1_ps((float)(CF_QA_MAX - z));
    __m256i vz = _mm256_set1_epi32(z);
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i r[2];
        _Pragma("GCC unroll 16") for (int h = 0; h < 2; h++) {
            __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i + 8 * h), vi);
            v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);   /* maxps gives lo for a NaN */
            r[h] = _mm256_add_epi32(_mm256_cvtps_epi32(v), vz);
        }
        __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(r[0], r[1]), 0xd8);   /* 16 shorts in order */
        __m128i b8 = _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
        _mm_storeu_si128((__m128i *)(q + i), b8);
    }
    float l = (float)-z, h = (float)(CF_QA_MAX - z);
    for (; i < n; i++) {   /* the same operations, one at a time */
        __m128 v = _mm_mul_ss(_mm_set_ss(x[i]), _mm_set_ss(inv));
        v = _mm_min_ss(_mm_max_ss(v, _mm_set_ss(l)), _mm_set_ss(h));
        q[i] = (uint8_t)(_mm_cvtss_si32(v) + z);
    }
}

void cf_qkern_avx2_minmax(const float *x, int n, float *lo, float *hi)
{
    __m256 l = _mm256_setzero_ps(), h = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        l = _mm256_min_ps(v, l);   /* minps gives l for a NaN */
        h = _mm256_max_ps(v, h);
    }
    float ls[8], hs[8], lf = 0, hf = 0;
    _mm256_storeu_ps(ls, l);
    _mm256_storeu_ps(hs, h);
    for (int k = 0; k < 8; k++) {
        lf = ls[k] < lf ? ls[k] : lf;
        hf = hs[k] > hf ? hs[k] : hf;
    }
    for (; i < n; i++) {
        lf = x[i] < lf ? x[i] : lf;
        hf = x[i] > hf ? x[i] : hf;
    }
    *lo = lf;
    *hi = hf;
}
#else
void cf_qkern_avx2_quant(const float *x, int n, float inv, int z, uint8_t *q);
void cf_qkern_avx2_minmax(const float *x, int n, float *lo, float *hi);
#endif

const cf_qgemm_impl IMPL = {NAME, MR, NR, kernel, cf_qkern_avx2_quant, cf_qkern_avx2_minmax, NULL};
