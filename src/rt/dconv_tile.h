/* dconv_tile.h - the direct convolution kernels of dconv.h, written once over GCC
 * vectors of DC_VW floats and included by each ISA's file after it defines
 *
 *   DC(name)     the file's prefix for each function: name ## _avx2
 *   DC_ENTRY     the table's variable: cf_dconv_avx2
 *   DC_VW        floats per vector: 8, or 16 for AVX-512
 *   DC_NP        rows per tile of two vectors of channels: DC_NP x 2 accumulators and
 *                the operands fill the ISA's vector registers
 *   DC_NP1       rows per tile of one vector: at most what keeps the rows' offsets in
 *                general registers (each broadcast is then one load, not two)
 *
 * Each kernel computes tiles of NP rows (output positions, or weight rows k = (c, ki,
 * kj) for the weights' gradient) by NV vectors of channels: NV = 2 with NP = DC_NP,
 * or NV = 1 with NP = DC_NP1 for an odd vector left at the end. For each term of its
 * sum a tile loads NV vectors of one operand along the channels and broadcasts one
 * value of the other per row. The rows left after the whole tiles go in tiles a third
 * as tall; the last may run past the end, where it repeats the last row (its reads
 * stay in place) and drops the results. Each result is summed in one fixed order,
 * whatever the thread count. Sums use fused multiply-adds where the target has them
 * (the compiler contracts them).
 *
 * One vector of channels takes a broadcast per multiply-add, which bounds it; for a
 * kernel three wide at stride 1 (most layers), the forward and dw walk output rows
 * instead (fwd_row_tile, dw_row_tile), so that each input value, broadcast once,
 * serves the three taps that read it. A 3x3 kernel's forward tiles unroll a channel's
 * nine taps into one loop body: the loop over taps (three long) cost a fifth of the
 * forward's time. */
#include <string.h>

#include "rt/dconv.h"

typedef float DC(vf) __attribute__((vector_size(DC_VW * 4)));
typedef float DC(uf) __attribute__((vector_size(DC_VW * 4), aligned(4)));   /* any float alignment */
typedef float DC(v8) __attribute__((vector_size(32)));
typedef float DC(u8) __attribute__((vector_size(32), aligned(4)));

#define NPMAX (DC_NP > DC_NP1 ? DC_NP : DC_NP1)
#define INLINE static inline __attribute__((always_inline))

/* Runs TILE(NP, NV, r0, c0, ...) over the rows [0, n) and the vectors of channels
   [0, nchan): pairs of vectors, then one, each over whole tiles of rows and a third
   of a tile for the rest. */
#define DC_TILES(n, NV, c0, TILE, ...)                                                    \
    do {                                                                                  \
        enum { NP_ = (NV) == 2 ? DC_NP : DC_NP1, NR_ = NP_ / 3 };                         \
        int r_ = 0;                                                                       \
        for (; r_ + NP_ <= (n); r_ += NP_) TILE(NP_, NV, r_, c0, __VA_ARGS__);            \
        for (; r_ < (n); r_ += NR_) TILE(NR_, NV, r_, c0, __VA_ARGS__);                   \
    } while (0)
#define DC_BLOCKS(nchan, n, TILE, ...)                                                    \
    do {                                                                                  \
        int vn_ = ((nchan) + DC_VW - 1) / DC_VW, v_ = 0;                                  \
        for (; v_ + 2 <= vn_; v_ += 2) DC_TILES(n, 2, v_ * DC_VW, TILE, __VA_ARGS__);     \
        if (v_ < vn_) DC_TILES(n, 1, v_ * DC_VW, TILE, __VA_ARGS__);                      \
    } while (0)

/* pos[p] = where the window of output position q0 + p starts (tap 0, 0) in a padded
   input plane, for p < NP; positions past the last repeat it. One division a tile. */
INLINE void DC(positions)(int NP, const cf_dconv_geom *g, int q0, int *pos)
{
    int P = g->OH * g->OW, i = q0 / g->OW, j = q0 % g->OW;
#pragma GCC unroll 24
    for (int p = 0; p < NP; p++) {
        pos[p] = i * g->sh * g->Wr + j * g->sw;
        if (q0 + p + 1 < P && ++j == g->OW) j = 0, i++;
    }
}

/* koff[r] = where the tap (ki, kj) of channel c, k0 + r = (c, ki, kj), is in the
   padded input, for r < NP; rows past K - 1 repeat K - 1. One division a tile: the
   taps after the first step along the kernel. */
INLINE void DC(k_offs)(int NP, const cf_dconv_geom *g, int k0, int *koff)
{
    int K = g->C * g->KH * g->KW, khw = g->KH * g->KW, c = k0 / khw, t = k0 % khw, ki = t / g->KW, kj = t % g->KW;
#pragma GCC unroll 24
    for (int r = 0; r < NP; r++) {
        koff[r] = (c * g->Hp + ki * g->dh) * g->Wr + kj * g->dw;
        if (k0 + r + 1 < K && ++kj == g->KW && (kj = 0, ++ki == g->KH)) ki = 0, c++;
    }
}

/* yT rows [q0, q0 + NP) (those below P) by the NV vectors of output channels from
   o0: for each k, the weights' vectors times the input under each position. KH and
   KW are the kernel's size when known where it is called (3 and 3: the taps of a
   channel unroll into one body), else 0 (the geometry's, in loops). */
INLINE void DC(fwd_tile_k)(int NP, int NV, int KH, int KW, int q0, int o0, const cf_dconv_geom *g, const float *xp,
                           const float *wp, float *yT)
{
    int P = g->OH * g->OW, ld = cf_dconv_or(g->O), pos[NPMAX], kh = KH ? KH : g->KH, kw = KW ? KW : g->KW;
    DC(positions)(NP, g, q0, pos);
    DC(vf) acc[NPMAX][2];
#pragma GCC unroll 24
    for (int p = 0; p < NP; p++)
#pragma GCC unroll 2
        for (int n = 0; n < NV; n++) acc[p][n] = (DC(vf)){0};
    const float *w = wp + o0;
    size_t plane = (size_t)g->Hp * g->Wr;
    for (int c = 0; c < g->C; c++) {
#pragma GCC unroll 3
        for (int ki = 0; ki < kh; ki++) {
            const float *xr = xp + c * plane + (size_t)ki * g->dh * g->Wr;
#pragma GCC unroll 3
            for (int kj = 0; kj < kw; kj++, w += ld) {
                const float *xk = xr + kj * g->dw;
                DC(vf) wv[2];
#pragma GCC unroll 2
                for (int n = 0; n < NV; n++) wv[n] = *(const DC(uf) *)(w + n * DC_VW);
#pragma GCC unroll 24
                for (int p = 0; p < NP; p++) {
                    float xs = xk[pos[p]];
#pragma GCC unroll 2
                    for (int n = 0; n < NV; n++) acc[p][n] += xs * wv[n];
                }
            }
        }
    }
    for (int p = 0; p < NP && q0 + p < P; p++)
#pragma GCC unroll 2
        for (int n = 0; n < NV; n++) *(DC(uf) *)(yT + (size_t)(q0 + p) * ld + o0 + n * DC_VW) = acc[p][n];
}

INLINE void DC(fwd_tile)(int NP, int NV, int q0, int o0, const cf_dconv_geom *g, const float *xp, const float *wp,
                         float *yT)
{
    DC(fwd_tile_k)(NP, NV, 0, 0, q0, o0, g, xp, wp, yT);
}

INLINE void DC(fwd_tile33)(int NP, int NV, int q0, int o0, const cf_dconv_geom *g, const float *xp, const float *wp,
                           float *yT)
{
    DC(fwd_tile_k)(NP, NV, 3, 3, q0, o0, g, xp, wp, yT);
}

/* yT at the NP positions from (i, j0) along output row i (j0 + NP <= OW) by the one
   vector of output channels from o0, for a kernel three wide at stride 1 along rows
   and no dilation along them: each input value, broadcast once, feeds the (up to)
   three positions whose windows hold it, a third of fwd_tile's broadcasts. The sum of
   each position is in fwd_tile's order. */
INLINE void DC(fwd_row_tile)(int NP, const cf_dconv_geom *g, const float *xp, const float *wp, float *yT, int i,
                             int j0, int o0)
{
    int ld = cf_dconv_or(g->O);
    DC(vf) acc[NPMAX];
#pragma GCC unroll 24
    for (int p = 0; p < NP; p++) acc[p] = (DC(vf)){0};
    const float *w = wp + o0;
    for (int c = 0; c < g->C; c++)
        for (int ki = 0; ki < g->KH; ki++, w += 3 * ld) {
            const float *xr = xp + ((size_t)c * g->Hp + (size_t)i * g->sh + (size_t)ki * g->dh) * g->Wr + j0;
            DC(vf) w0 = *(const DC(uf) *)w, w1 = *(const DC(uf) *)(w + ld), w2 = *(const DC(uf) *)(w + 2 * ld);
#pragma GCC unroll 26
            for (int m = 0; m < NP + 2; m++) {
                float xs = xr[m];
                if (m < NP) acc[m] += xs * w0;
                if (m >= 1 && m <= NP) acc[m - 1] += xs * w1;
                if (m >= 2) acc[m - 2] += xs * w2;
            }
        }
    float *y = yT + ((size_t)i * g->OW + j0) * ld + o0;
#pragma GCC unroll 24
    for (int p = 0; p < NP; p++) *(DC(uf) *)(y + (size_t)p * ld) = acc[p];
}

/* The one vector of output channels from o0 by rows (see fwd_row_tile): whole tiles,
   then tiles of 4, 2 and 1, so that no tile reads past its row. */
static void DC(fwd_rows)(const cf_dconv_geom *g, const float *xp, const float *wp, float *yT, int o0)
{
    for (int i = 0; i < g->OH; i++) {
        int j = 0;
        for (; j + DC_NP1 <= g->OW; j += DC_NP1) DC(fwd_row_tile)(DC_NP1, g, xp, wp, yT, i, j, o0);
        for (; j + 4 <= g->OW; j += 4) DC(fwd_row_tile)(4, g, xp, wp, yT, i, j, o0);
        for (; j + 2 <= g->OW; j += 2) DC(fwd_row_tile)(2, g, xp, wp, yT, i, j, o0);
        for (; j < g->OW; j++) DC(fwd_row_tile)(1, g, xp, wp, yT, i, j, o0);
    }
}

static void DC(forward)(const cf_dconv_geom *g, const float *xp, const float *wp, float *yT)
{
    int P = g->OH * g->OW, vn = (g->O + DC_VW - 1) / DC_VW, v = 0;
    if (g->KH == 3 && g->KW == 3)
        for (; v + 2 <= vn; v += 2) DC_TILES(P, 2, v * DC_VW, DC(fwd_tile33), g, xp, wp, yT);
    else
        for (; v + 2 <= vn; v += 2) DC_TILES(P, 2, v * DC_VW, DC(fwd_tile), g, xp, wp, yT);
    if (v == vn) return;
    if (g->KW == 3 && g->sw == 1 && g->dw == 1)
        DC(fwd_rows)(g, xp, wp, yT, v * DC_VW);
    else
        DC_TILES(P, 1, v * DC_VW, DC(fwd_tile), g, xp, wp, yT);
}

/* For tap (ki, kj): the input gradient at the NP positions from q0 (those below P),
   NV vectors of input channels from c0, summed over output channels and added where
   the tap takes each position's window in dxpT. wt is the tap's O x ldc weights. */
INLINE void DC(dx_tile)(int NP, int NV, int q0, int c0, const cf_dconv_geom *g, const float *dyT, const float *wt,
                        float *dxpT, int ki, int kj)
{
    int P = g->OH * g->OW, ldo = cf_dconv_or(g->O), ldc = cf_dconv_or(g->C), pos[NPMAX];
    DC(vf) acc[NPMAX][2];
#pragma GCC unroll 24
    for (int p = 0; p < NP; p++)
#pragma GCC unroll 2
        for (int n = 0; n < NV; n++) acc[p][n] = (DC(vf)){0};
    const float *d = dyT + (size_t)q0 * ldo, *w = wt + c0;   /* dyT's rows past P are zeros */
    for (int o = 0; o < g->O; o++, d++, w += ldc) {
        DC(vf) wv[2];
#pragma GCC unroll 2
        for (int n = 0; n < NV; n++) wv[n] = *(const DC(uf) *)(w + n * DC_VW);
#pragma GCC unroll 24
        for (int p = 0; p < NP; p++) {
            float ds = d[(size_t)p * ldo];
#pragma GCC unroll 2
            for (int n = 0; n < NV; n++) acc[p][n] += ds * wv[n];
        }
    }
    int tap = ki * g->dh * g->Wr + kj * g->dw;
    DC(positions)(NP, g, q0, pos);
    for (int p = 0; p < NP && q0 + p < P; p++) {
        float *t = dxpT + (size_t)(pos[p] + tap) * ldc + c0;
#pragma GCC unroll 2
        for (int n = 0; n < NV; n++) *(DC(uf) *)(t + n * DC_VW) += acc[p][n];
    }
}

static void DC(input_grad)(const cf_dconv_geom *g, const float *dyT, const float *wt, float *dxpT)
{
    int khw = g->KH * g->KW;
    size_t wtap = (size_t)g->O * cf_dconv_or(g->C);
    for (int t = 0; t < khw; t++)
        DC_BLOCKS(g->C, g->OH * g->OW, DC(dx_tile), g, dyT, wt + t * wtap, dxpT, t / g->KW, t % g->KW);
}

/* dwT rows [k0, k0 + NP) (those below K) by the NV vectors of output channels from
   o0, summed over every output position. */
INLINE void DC(dw_tile)(int NP, int NV, int k0, int o0, const cf_dconv_geom *g, const float *xp, const float *dyT,
                        float *dwT, int add)
{
    int K = g->C * g->KH * g->KW, ld = cf_dconv_or(g->O), koff[NPMAX];
    DC(k_offs)(NP, g, k0, koff);
    DC(vf) acc[NPMAX][2];
#pragma GCC unroll 24
    for (int k = 0; k < NP; k++)
#pragma GCC unroll 2
        for (int n = 0; n < NV; n++) acc[k][n] = (DC(vf)){0};
    /* one loop over the output positions, row after row: short rows (7, 14) would
       spend their time between rows */
    const float *d = dyT + o0, *xq = xp, *xj = xp;
    for (int q = 0, j = 0, P = g->OH * g->OW; q < P; q++, d += ld) {
        DC(vf) dv[2];
#pragma GCC unroll 2
        for (int n = 0; n < NV; n++) dv[n] = *(const DC(uf) *)(d + n * DC_VW);
#pragma GCC unroll 24
        for (int k = 0; k < NP; k++) {
            float xs = xj[koff[k]];
#pragma GCC unroll 2
            for (int n = 0; n < NV; n++) acc[k][n] += xs * dv[n];
        }
        if (++j == g->OW)
            j = 0, xq += (size_t)g->sh * g->Wr, xj = xq;
        else
            xj += g->sw;
    }
    for (int k = 0; k < NP && k0 + k < K; k++)
#pragma GCC unroll 2
        for (int n = 0; n < NV; n++) {
            DC(uf) *t = (DC(uf) *)(dwT + (size_t)(k0 + k) * ld + o0 + n * DC_VW);
            *t = add ? *t + acc[k][n] : acc[k][n];
        }
}

/* dwT's rows of the NR kernel rows (c, ki) from r0 (three taps each, k = 3 r + kj)
   by the one vector of output channels from o0, for a kernel three wide at stride 1
   along rows and no dilation along them: along each output row, each input value,
   broadcast once, meets the output gradients of the three positions whose windows
   hold it (kept in registers as they slide), a third of dw_tile's broadcasts. Each
   sum runs over the positions in dw_tile's order. */
INLINE void DC(dw_row_tile)(int NR, const cf_dconv_geom *g, const float *xp, const float *dyT, float *dwT, int r0,
                            int o0, int add)
{
    int ld = cf_dconv_or(g->O), roff[NPMAX];
#pragma GCC unroll 8
    for (int r = 0; r < NR; r++) roff[r] = ((r0 + r) / g->KH * g->Hp + (r0 + r) % g->KH * g->dh) * g->Wr;
    DC(vf) acc[NPMAX][3];
#pragma GCC unroll 8
    for (int r = 0; r < NR; r++)
#pragma GCC unroll 3
        for (int t = 0; t < 3; t++) acc[r][t] = (DC(vf)){0};
    for (int i = 0; i < g->OH; i++) {
        const float *xq = xp + (size_t)i * g->sh * g->Wr, *d = dyT + (size_t)i * g->OW * ld + o0;
        DC(vf) d0 = {0}, d1 = {0}, d2 = {0};   /* dy at positions m, m - 1, m - 2 (zeros outside) */
        for (int m = 0; m < g->OW + 2; m++) {
            d2 = d1, d1 = d0;
            d0 = m < g->OW ? *(const DC(uf) *)(d + (size_t)m * ld) : (DC(vf)){0};
#pragma GCC unroll 8
            for (int r = 0; r < NR; r++) {
                float xs = xq[roff[r] + m];
                acc[r][0] += xs * d0;
                acc[r][1] += xs * d1;
                acc[r][2] += xs * d2;
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < NR; r++)
#pragma GCC unroll 3
        for (int t = 0; t < 3; t++) {
            DC(uf) *o = (DC(uf) *)(dwT + (size_t)(3 * (r0 + r) + t) * ld + o0);
            *o = add ? *o + acc[r][t] : acc[r][t];
        }
}

static void DC(weight_grad)(const cf_dconv_geom *g, const float *xp, const float *dyT, float *dwT, int add)
{
    int vn = (g->O + DC_VW - 1) / DC_VW, v = 0, K = g->C * g->KH * g->KW, nr = g->C * g->KH, r = 0;
    for (; v + 2 <= vn; v += 2) DC_TILES(K, 2, v * DC_VW, DC(dw_tile), g, xp, dyT, dwT, add);
    if (v == vn) return;
    if (g->KW != 3 || g->sw != 1 || g->dw != 1) {
        DC_TILES(K, 1, v * DC_VW, DC(dw_tile), g, xp, dyT, dwT, add);
        return;
    }
    for (; r + DC_NP1 / 3 <= nr; r += DC_NP1 / 3) DC(dw_row_tile)(DC_NP1 / 3, g, xp, dyT, dwT, r, v * DC_VW, add);
    for (; r < nr; r++) DC(dw_row_tile)(1, g, xp, dyT, dwT, r, v * DC_VW, add);
}

INLINE void DC(put)(float *d, float v, int add) { *d = add ? *d + v : v; }

/* dst[c ldd + r] (+)= src[r lds + c]: eight by eight blocks through registers, the
   edges one float at a time. */
static void DC(transpose)(const float *src, int R, int C, size_t lds, float *dst, size_t ldd, int add)
{
    int r0 = 0, c0 = 0;
    for (; r0 + 8 <= R; r0 += 8) {
        const float *s = src + (size_t)r0 * lds;
        for (c0 = 0; c0 + 8 <= C; c0 += 8) {
            DC(v8) r[8], t[8], u[8];
#pragma GCC unroll 8
            for (int i = 0; i < 8; i++) r[i] = *(const DC(u8) *)(s + i * lds + c0);
#pragma GCC unroll 4
            for (int i = 0; i < 8; i += 2) {
                t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
                t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
            }
#pragma GCC unroll 2
            for (int i = 0; i < 8; i += 4) {
                u[i] = __builtin_shufflevector(t[i], t[i + 2], 0, 1, 8, 9, 4, 5, 12, 13);
                u[i + 1] = __builtin_shufflevector(t[i], t[i + 2], 2, 3, 10, 11, 6, 7, 14, 15);
                u[i + 2] = __builtin_shufflevector(t[i + 1], t[i + 3], 0, 1, 8, 9, 4, 5, 12, 13);
                u[i + 3] = __builtin_shufflevector(t[i + 1], t[i + 3], 2, 3, 10, 11, 6, 7, 14, 15);
            }
            float *d = dst + (size_t)c0 * ldd + r0;
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) {
                DC(v8) lo = __builtin_shufflevector(u[i], u[i + 4], 0, 1, 2, 3, 8, 9, 10, 11);
                DC(v8) hi = __builtin_shufflevector(u[i], u[i + 4], 4, 5, 6, 7, 12, 13, 14, 15);
                DC(u8) *a = (DC(u8) *)(d + i * ldd), *b = (DC(u8) *)(d + (i + 4) * ldd);
                *a = add ? *a + lo : lo;
                *b = add ? *b + hi : hi;
            }
        }
        for (int c = c0; c < C; c++)
            for (int r = r0; r < r0 + 8; r++) DC(put)(dst + (size_t)c * ldd + r, src[(size_t)r * lds + c], add);
    }
    for (int r = r0; r < R; r++)
        for (int c = 0; c < C; c++) DC(put)(dst + (size_t)c * ldd + r, src[(size_t)r * lds + c], add);
}

const cf_dconv_impl DC_ENTRY = {DC(forward), DC(input_grad), DC(weight_grad), DC(transpose)};

#undef NPMAX
#undef INLINE
#undef DC_TILES
#undef DC_BLOCKS
