/* dconv.h - direct convolution kernels: stride 1, no dilation, one group, over an
 * input already padded with zeros (what conv2d runs for such layers, src/ops/conv.c).
 * No im2col and no packing of the image: each kernel reads windows of the padded
 * input in place, eight output columns to a vector.
 *
 * The padded input xp is C planes of Hp rows, Wr floats apart, where
 * Wr = cf_dconv_row(OW, KW): the row holds the input and at least the columns that the
 * last vector of outputs reads past OW (zeros), so that no read leaves the plane.
 * One implementation per instruction set (dconv_tile.h); conv2d picks the one of the
 * matrix-product engine's ISA (cf_dconv_pick). */
#ifndef CF_RT_DCONV_H
#define CF_RT_DCONV_H

#include <stddef.h>

/* Output rows (channels) that one forward tile computes: weights are packed in
   blocks of this many. */
#define CF_DCONV_OB 4

typedef struct cf_dconv_geom {
    int C, Hp, Wr;    /* padded input: C planes of Hp rows, Wr floats apart */
    int O, KH, KW;    /* output channels, kernel */
    int OH, OW;       /* output plane: OH = Hp - KH + 1, OW <= Wr - KW + 1 */
} cf_dconv_geom;

/* The row stride of a padded input whose output rows are OW wide: OW rounded up to 8,
   plus KW - 1. */
static inline int cf_dconv_row(int OW, int KW) { return (OW + 7) / 8 * 8 + KW - 1; }

/* Output channels rounded up to whole vectors: the width of dyT and dwT. */
static inline int cf_dconv_or(int O) { return (O + 7) / 8 * 8; }

typedef struct cf_dconv_impl {
    /* y[o][i][j] = sum over c, ki, kj of w[o][c][ki][kj] xp[c][i + ki][j + kj], or
       y += that when add; y is (O, OH, OW). wp holds w packed: for each block of
       CF_DCONV_OB output channels, for each (c, ki, kj) in order, the block's
       weights (zeros past O). */
    void (*forward)(const cf_dconv_geom *g, const float *xp, const float *wp, float *y, int add);
    /* The input's gradient, padded as xp is: dxp[c][i + ki][j + kj] += sum over o of
       w[o][c][ki][kj] dyv[o][i][j], for i < OH, j < OW. dyv is dy with its rows
       padded to OW rounded up to 8 (what lies past OW lands in dxp's columns past
       the padded input, to be dropped). wt holds w packed: for each block of
       CF_DCONV_OB input channels, for each tap (ki, kj), for each o, the block's
       w[o][c][ki][kj] (zeros past C). */
    void (*input_grad)(const cf_dconv_geom *g, const float *dyv, const float *wt, float *dxp);
    /* The weights' gradient, transposed: dwT[k][o] = sum over i < OH, j < OW of
       dyT[i OW + j][o] xp[c][i + ki][j + kj] for k = (c, ki, kj), or dwT += that when
       add. dyT is the output's gradient transposed, (OH OW) x Or with Or =
       cf_dconv_or(O) (zeros past O); dwT is (C KH KW) x Or. */
    void (*weight_grad)(const cf_dconv_geom *g, const float *xp, const float *dyT, float *dwT, int add);
    /* dyT (P x Or) = dy (O x P) transposed, zeros in the columns past O. */
    void (*transpose)(const float *dy, int O, size_t P, float *dyT);
} cf_dconv_impl;

extern const cf_dconv_impl cf_dconv_portable;
#if defined(__x86_64__)
extern const cf_dconv_impl cf_dconv_avx2;
#endif

/* The implementation for the ISA of the matrix-product engine in use (rt/gemm.c):
   the portable one under builtin-portable, else the widest this CPU runs. */
const cf_dconv_impl *cf_dconv_pick(void);

#endif
