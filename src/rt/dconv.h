/* dconv.h - direct convolution kernels: any stride and dilation, one group, over an
 * input already padded with zeros (what conv2d runs for such layers, src/ops/conv.c).
 * No im2col and no packing of the image: the kernels vectorise over channels, output
 * channels for the output and the weights' gradient, input channels for the input's
 * gradient, and take each input or output-gradient value at a position by broadcast,
 * so that the stride, the dilation and the width of the image (7, 14, 28 ...) cost
 * nothing in wasted lanes. The output and the gradients in between are laid out
 * position by position (P x channels); transpose moves them to and from the planes of
 * NCHW.
 *
 * The padded input xp is C planes of Hp x Wr floats (Wr = W + 2 pad_w). Rows of
 * channel-major matrices are CF_DCONV_VMAX-rounded (cf_dconv_or), so that the buffers'
 * sizes do not depend on which implementation runs. One implementation per
 * instruction set (dconv_tile.h); conv2d picks the one of the matrix-product engine's
 * ISA (cf_dconv_pick). */
#ifndef CF_RT_DCONV_H
#define CF_RT_DCONV_H

#include <stddef.h>

/* The widest vector of any implementation, in floats. */
#define CF_DCONV_VMAX 16
/* Rows past the last output position that the input-gradient kernel may read in dyT
   (zeros there), for its last tile of positions. */
#define CF_DCONV_QPAD 24

typedef struct cf_dconv_geom {
    int C, Hp, Wr;    /* padded input: C planes of Hp rows, Wr floats apart */
    int O, KH, KW;    /* output channels, kernel */
    int OH, OW;       /* output plane */
    int sh, sw;       /* stride, vertical and horizontal */
    int dh, dw;       /* dilation */
} cf_dconv_geom;

/* Channels rounded up to whole vectors of every implementation: the row length (the
   leading dimension) of yT, dyT, dwT, dxpT and the packed weights. */
static inline int cf_dconv_or(int n) { return (n + CF_DCONV_VMAX - 1) / CF_DCONV_VMAX * CF_DCONV_VMAX; }

typedef struct cf_dconv_impl {
    /* yT[q][o] = sum over k = (c, ki, kj) of wp[k][o] xp[c][i sh + ki dh][j sw + kj dw]
       for output position q = i OW + j; yT is P x cf_dconv_or(O), wp (the weights
       transposed) C KH KW x cf_dconv_or(O) with zeros past O. */
    void (*forward)(const cf_dconv_geom *g, const float *xp, const float *wp, float *yT);
    /* The input's gradient, padded and laid out as positions x channels:
       dxpT[(i sh + ki dh) Wr + j sw + kj dw][c] += sum over o of wt[t][o][c] dyT[q][o]
       for each tap t = (ki, kj) and output position q = i OW + j. dyT is P x
       cf_dconv_or(O), with CF_DCONV_QPAD rows of zeros after; wt is, for each tap,
       O x cf_dconv_or(C) (zeros past C); dxpT is Hp Wr x cf_dconv_or(C). */
    void (*input_grad)(const cf_dconv_geom *g, const float *dyT, const float *wt, float *dxpT);
    /* The weights' gradient, transposed: dwT[k][o] = sum over output positions q of
       dyT[q][o] xp[c][i sh + ki dh][j sw + kj dw], for k = (c, ki, kj), or dwT += that
       when add; dwT is C KH KW x cf_dconv_or(O). */
    void (*weight_grad)(const cf_dconv_geom *g, const float *xp, const float *dyT, float *dwT, int add);
    /* dst[c ldd + r] = src[r lds + c] (or += that, with add), r < R, c < C. */
    void (*transpose)(const float *src, int R, int C, size_t lds, float *dst, size_t ldd, int add);
} cf_dconv_impl;

extern const cf_dconv_impl cf_dconv_portable;
#if defined(__x86_64__)
extern const cf_dconv_impl cf_dconv_avx2, cf_dconv_avx512;
#endif

/* The implementation for the ISA of the matrix-product engine in use (rt/gemm.c):
   the portable one under builtin-portable, AVX2 under builtin-avx2, else the widest
   this CPU runs. */
const cf_dconv_impl *cf_dconv_pick(void);

#endif
