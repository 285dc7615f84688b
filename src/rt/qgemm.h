/* qgemm.h - the engine's 8-bit integer matrix product, for quantized inference.
 *
 * C (M x N floats) = epilogue(A W), where A (M x K floats) is quantized on the fly to
 * unsigned 7-bit integers (0..127) with a scale and a zero point, per row measured at
 * run time (dynamic) or one for the whole tensor fixed by calibration (static), and W
 * (K x N) is int8 (-127..127) with a scale per column (per output channel),
 * symmetric. With q the integers and s the scales:
 *
 *     C[i][j] = (float)(sum_k qa[i][k] qw[k][j] - za[i] colsum[j]) * (sa[i] * sw[j]) + bias[j]
 *
 * then relu if asked: the sum is exact in 32-bit integers, so every kernel, thread
 * count and split gives the same bits. Activations keep 7 bits so that AVX2's
 * vpmaddubsw, which saturates its 16-bit sums of two products, never can: 2 x 127 x
 * 127 = 32,258 < 32,767 (the choice of fbgemm's and onnxruntime's reduce_range).
 *
 * Kernels, chosen once by cpuid (rt/cpu.h) like the float32 ones: AVX-512 VNNI
 * (vpdpbusd on 512 bits), AVX-VNNI (vpdpbusd on 256), AVX2 (vpmaddubsw, vpmaddwd) and
 * a portable one in C; $CFLUX_QGEMM names one instead (cf_qgemm_name says which runs
 * and why). */
#ifndef CF_RT_QGEMM_H
#define CF_RT_QGEMM_H

#include <stddef.h>
#include <stdint.h>

#include "core/quant.h"   /* the ranges: CF_QA_MAX, CF_QW_MAX, CF_QGEMM_MAX_K */
#include "rt/gemm.h"

/* What a kernel does with its tile of sums: the epilogue (qgemm.h's formula) into C,
   for rows i < mv and columns j < nv of the tile. */
typedef struct cf_qtile {
    const float *row_scale;   /* mr: each row's scale */
    const int *row_zero;      /* mr: its zero point */
    const int32_t *colsum;    /* nr: each column's sum of weight integers */
    const float *col_scale;   /* nr: its scale */
    const float *bias;        /* nr, or NULL */
    int relu, mv, nv;
    float *C;                 /* the tile's first element */
    ptrdiff_t ldc;
    const char *pf;           /* pf_lines lines of 64 bytes to prefetch meanwhile, one a step */
    int pf_lines;             /* (a hint: kernels may ignore it) */
} cf_qtile;

/* Rows a task takes at a time: a whole number of every kernel's mr. */
#define CF_QGEMM_ROWS 48
/* Multiply-adds below which a product runs on the calling thread alone. */
#define CF_QGEMM_SERIAL_OPS (1 << 20)

/* A convolution of few input channels (an image's first layer: 1 to CF_QDIRECT_MAX_C)
   at stride 1, computed directly with the output positions as a vector's lanes: no
   rows of patches to gather, and each output channel's plane written as it lies. The
   input is quantized into planes of Hp x Wp bytes (the padding the zero point); word i
   of x4's plane holds bytes i..i+3 of the byte plane, so that the taps 4g..4g+3 of a
   kernel row, for positions i..i+15, are one load. Positions are full rows of Wp (the
   output's OW and the Wp - OW past it, whose values do not matter):

       out[o][p] = epilogue(sum over c < C, ki < KH, g < G of the four products of
                   x4[c][p + ki Wp + 4 g]'s bytes and w's word (o, c, ki, g))

   the epilogue qgemm.h's, with the input's zero point and the column sums and scales
   of the channels (scale[o]: the input's scale times the kernel's, as the product
   rounds it). Bit for bit what the product of the gathered rows gives. */
#define CF_QDIRECT_MAX_C 4
#define CF_QDIRECT_MAX_TAPS 16   /* KH and KW at most */
#define CF_QDIRECT_POS 48        /* positions a step: npos is a multiple */
#define CF_QDIRECT_OC 8          /* channels a step: w holds O rounded up to a multiple (zeros past O) */
typedef struct cf_qdirect {
    const uint32_t *x4;       /* C planes, plane words apart, each readable (with anything past Hp Wp) up
                                 to npos + (KH - 1) Wp + 4 (G - 1) */
    size_t plane;
    int C, KH, G, Wp, O, npos;
    const int32_t *w;         /* per block of 8 channels, C KH G words x 8 channels, each word taps 4g..4g+3
                                 of row ki of channel c (zeros past KW and past O) */
    const int32_t *colsum;    /* per channel: the sum of its kernel's integers */
    const float *scale, *bias;
    int zero, relu;
    float *out;               /* channels' planes, npos floats each */
} cf_qdirect;

/* Words the kernels of a convolution of O channels, C inputs, KH x KW taps take in
   cf_qdirect's layout; the packing of k (O, C, KH, KW) into w. */
size_t cf_qdirect_words(int O, int C, int KH, int KW);
void cf_qdirect_pack(int32_t *w, const int8_t *k, int O, int C, int KH, int KW);

/* One instruction set's kernels. */
typedef struct cf_qgemm_impl {
    const char *name;    /* "avx512-vnni", "avx-vnni", "avx2", "portable" */
    int mr, nr;          /* the tile: mr rows of A, nr columns of W */
    /* The tile's sums c[i][j] = sum over q < kq, t < 4 of a[i lda + 4q + t]
       b[(q nr + j) 4 + t], for i < mr, j < nr (rows of quantized A as they lie, lda
       bytes apart; one packed panel of W, cf_qweights), then the epilogue t. */
    void (*kernel)(int kq, const uint8_t *a, ptrdiff_t lda, const int8_t *b, const cf_qtile *t);
    /* q[i] = clamp(rne(x[i] inv) + z, 0, 127), i < n: the float clamped first to
       [-z, 127 - z] (a NaN to -z), rounded half to even */
    void (*quant)(const float *x, int n, float inv, int z, uint8_t *q);
    /* *lo and *hi: the least and greatest of n floats (NaNs skipped), with 0 */
    void (*minmax)(const float *x, int n, float *lo, float *hi);
    /* The direct convolution (cf_qdirect), or NULL: none for this instruction set */
    void (*direct)(const cf_qdirect *d);
} cf_qgemm_impl;

/* The epilogue in plain C over a tile of sums c (nr apart): what every kernel's
   vectors compute, bit for bit, and what they call at the tile's edges. */
void cf_qtile_store(const int32_t *c, int nr, const cf_qtile *t);

extern const cf_qgemm_impl cf_qgemm_portable;
#if defined(__x86_64__)
extern const cf_qgemm_impl cf_qgemm_avx2, cf_qgemm_avxvnni, cf_qgemm_avx512vnni, cf_qgemm_avx512vnni16;
#endif

/* The implementation for products of N columns with im chosen: a narrower tile of
   the same instruction set where one fits N better (avx512-vnni-16 for N <= 16 under
   avx512-vnni), else im. */
const cf_qgemm_impl *cf_qgemm_for(const cf_qgemm_impl *im, int N);

/* The implementation products use (chosen on first call), its name ("avx512-vnni")
   and why it was chosen; NULL from cf_qgemm_impl_named for a name this CPU or build
   cannot run. */
const cf_qgemm_impl *cf_qgemm_default(void);
const char *cf_qgemm_name(void);
const char *cf_qgemm_why(void);
const cf_qgemm_impl *cf_qgemm_impl_named(const char *name);

/* W packed for one implementation: ceil(N / nr) panels of Kp x nr bytes (Kp = K
   rounded up to 4, zeros past K and past N), the column sums of the integers, and
   the scales. */
typedef struct cf_qweights {
    int K, N, Kp, panels;
    const cf_qgemm_impl *im;
    int8_t *packed;      /* 64-byte aligned */
    int32_t *colsum;     /* panels x nr, zeros past N */
    float *scale;        /* panels x nr, zeros past N */
    int32_t *direct;     /* a convolution's kernels for im->direct (cf_qdirect), or NULL */
} cf_qweights;

/* Bytes that cf_qweights_pack needs in buf (the packed panels, column sums and scales). */
size_t cf_qweights_bytes(const cf_qgemm_impl *im, int K, int N);
/* Pack the integers w[k sk + j sn] (k < K, j < N) into buf, 64-byte aligned, for im. */
void cf_qweights_pack(cf_qweights *qw, const cf_qgemm_impl *im, int K, int N, const int8_t *w, ptrdiff_t sk,
                      ptrdiff_t sn, const float *scale, void *buf);

/* How A is quantized: per row at run time (dynamic), or with one scale and zero point. */
typedef struct cf_qact {
    int dynamic;
    float scale;
    int zero;
} cf_qact;

/* Scale and zero point for values in [lo, hi] (widened to hold 0): what calibration
   and the dynamic rows both use. A range of nothing gives 1 and 0. */
void cf_qact_range(float lo, float hi, float *scale, int *zero);

/* Bytes of scratch cf_qgemm needs for M rows. */
size_t cf_qgemm_ws_bytes(const cf_qweights *w, int M);
/* C = the quantized product of A (M x K, rows lda floats apart) and w, with the
   epilogue ep (bias, relu; NULL: none), rows of C ldc floats apart; ws of
   cf_qgemm_ws_bytes, 64-byte aligned. Split over the pool when it pays. */
void cf_qgemm(const cf_qweights *w, int M, const float *A, ptrdiff_t lda, const cf_qact *qa, float *C,
              ptrdiff_t ldc, const cf_gemm_ep *ep, void *ws);

/* Rows of A quantized already (what a convolution gathers from its quantized input):
   C (M x N) = the product of the rows qa (M of them, lda bytes apart, lda a multiple
   of 4 and at least w->Kp, zeros past K; allocated for M rounded up to
   CF_QGEMM_ROW_PAD rows, whose contents past M do not matter) with w, row i's scale
   and zero point row_scale[i] and row_zero[i] (also CF_QGEMM_ROW_PAD-rounded), and
   col_scale (N floats) in place of w's scales when not NULL; the epilogue ep. On the
   calling thread. The kernels meanwhile prefetch the prefetch_bytes at prefetch
   (NULL: none; the next rows the caller will quantize, say). */
#define CF_QGEMM_ROW_PAD 16
void cf_qgemm_rows(const cf_qweights *w, int M, const uint8_t *qa, ptrdiff_t lda, const float *row_scale,
                   const int *row_zero, const float *col_scale, float *C, ptrdiff_t ldc, const cf_gemm_ep *ep,
                   const void *prefetch, size_t prefetch_bytes);

/* Rows of A quantized as cf_qgemm quantizes them for w: row i of A (M rows, lda floats
   apart) into q + i w->Kp (zeros past K, and whole rows of zeros up to M rounded up to
   the kernel's tile), its scale and zero point into row_scale[i], row_zero[i]. With
   cf_qgemm_rows, the same bits as cf_qgemm, on the calling thread. */
void cf_qgemm_quantize(const cf_qweights *w, int M, const float *A, ptrdiff_t lda, const cf_qact *qa, uint8_t *q,
                       float *row_scale, int *row_zero);

/* Integer multiply-adds computed by cf_qgemm so far (for GOP/s figures). */
double cf_qgemm_ops(void);

#endif
