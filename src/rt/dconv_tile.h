/* dconv_tile.h - the direct convolution kernels of dconv.h, written once over GCC
 * vectors of 8 floats and included by each ISA's file after it defines
 *
 *   DC(name)     the file's prefix for each function: name ## _avx2
 *   DC_ENTRY     the table's variable: cf_dconv_avx2
 *
 * Forward: a tile is CF_DCONV_OB output channels by up to three vectors of eight
 * output columns (twelve accumulators); for each (c, ki, kj) it loads the three input
 * vectors and broadcasts the block's weights. Weight gradient: a tile is up to twelve
 * (c, ki, kj) by one or two vectors of output channels; for each output position it
 * loads dyT's row and broadcasts the input under each (c, ki, kj). Sums use fused
 * multiply-adds where the target has them (the compiler contracts them). */
#include <string.h>

#include "rt/dconv.h"

typedef float DC(v8) __attribute__((vector_size(32)));
typedef float DC(u8) __attribute__((vector_size(32), aligned(4)));   /* any float alignment */

#define OB CF_DCONV_OB

/* Output channels [0, rows) of a block, at the V vectors of outputs that start at
   xoff[v] in each input plane and at yoff[v] in each output plane, cnt[v] columns of
   them real. Inlined with a constant V, so the accumulators stay in registers. */
static inline __attribute__((always_inline)) void DC(fwd_tile)(int V, const cf_dconv_geom *g, const float *xp,
                                                               const float *wk, const int *xoff, float *y,
                                                               const int *yoff, const int *cnt, int rows, int add)
{
    DC(v8) acc[OB][3];
#pragma GCC unroll 4
    for (int o = 0; o < OB; o++)
#pragma GCC unroll 3
        for (int v = 0; v < V; v++) acc[o][v] = (DC(v8)){0};
    const float *w = wk;
    size_t plane = (size_t)g->Hp * g->Wr;
    for (int c = 0; c < g->C; c++)
        for (int ki = 0; ki < g->KH; ki++) {
            const float *xr = xp + c * plane + (size_t)ki * g->Wr;
            for (int kj = 0; kj < g->KW; kj++, w += OB) {
                DC(v8) xv[3];
#pragma GCC unroll 3
                for (int v = 0; v < V; v++) xv[v] = *(const DC(u8) *)(xr + xoff[v] + kj);
#pragma GCC unroll 4
                for (int o = 0; o < OB; o++)
#pragma GCC unroll 3
                    for (int v = 0; v < V; v++) acc[o][v] += w[o] * xv[v];
            }
        }
    size_t ysz = (size_t)g->OH * g->OW;
    for (int o = 0; o < rows; o++)
#pragma GCC unroll 3
        for (int v = 0; v < V; v++) {
            float *d = y + o * ysz + yoff[v];
            if (cnt[v] == 8) {
                DC(u8) *dv = (DC(u8) *)d;
                *dv = add ? *dv + acc[o][v] : acc[o][v];
            } else {
                float t[8];
                memcpy(t, &acc[o][v], sizeof t);
                for (int l = 0; l < cnt[v]; l++) d[l] = add ? d[l] + t[l] : t[l];
            }
        }
}

static void DC(forward)(const cf_dconv_geom *g, const float *xp, const float *wp, float *y, int add)
{
    int nvr = (g->OW + 7) / 8, nv = g->OH * nvr, K = g->C * g->KH * g->KW;
    size_t ysz = (size_t)g->OH * g->OW;
    for (int ob = 0; ob < g->O; ob += OB) {
        const float *wk = wp + (size_t)(ob / OB) * K * OB;
        int rows = g->O - ob < OB ? g->O - ob : OB;
        float *yo = y + ob * ysz;
        for (int v0 = 0; v0 < nv; v0 += 3) {
            int V = nv - v0 < 3 ? nv - v0 : 3, xoff[3] = {0}, yoff[3] = {0}, cnt[3] = {0};
            for (int v = 0; v < V; v++) {
                int i = (v0 + v) / nvr, j = (v0 + v) % nvr * 8;
                xoff[v] = i * g->Wr + j;
                yoff[v] = i * g->OW + j;
                cnt[v] = g->OW - j < 8 ? g->OW - j : 8;
            }
            if (V == 3) DC(fwd_tile)(3, g, xp, wk, xoff, yo, yoff, cnt, rows, add);
            else if (V == 2) DC(fwd_tile)(2, g, xp, wk, xoff, yo, yoff, cnt, rows, add);
            else DC(fwd_tile)(1, g, xp, wk, xoff, yo, yoff, cnt, rows, add);
        }
    }
}

/* The input gradient of a block of rows (<= OB) input channels for one kernel tap:
   for each of the V vectors of outputs (at voff[v] in each plane of dyv, at xoff[v]
   in each plane of dxp once moved by the tap), the sum over output channels of
   wt[o][c] dyv[o], added to dxp. Inlined with a constant V. */
static inline __attribute__((always_inline)) void DC(dx_tile)(int V, const cf_dconv_geom *g, const float *dyv,
                                                              const float *wt, const int *voff, float *dxp,
                                                              const int *xoff, int rows)
{
    DC(v8) acc[OB][3];
#pragma GCC unroll 4
    for (int c = 0; c < OB; c++)
#pragma GCC unroll 3
        for (int v = 0; v < V; v++) acc[c][v] = (DC(v8)){0};
    size_t dplane = (size_t)g->OH * ((g->OW + 7) / 8 * 8), xplane = (size_t)g->Hp * g->Wr;
    const float *d = dyv;
    for (int o = 0; o < g->O; o++, d += dplane, wt += OB) {
        DC(v8) dv[3];
#pragma GCC unroll 3
        for (int v = 0; v < V; v++) dv[v] = *(const DC(u8) *)(d + voff[v]);
#pragma GCC unroll 4
        for (int c = 0; c < OB; c++)
#pragma GCC unroll 3
            for (int v = 0; v < V; v++) acc[c][v] += wt[c] * dv[v];
    }
    for (int c = 0; c < rows; c++)
#pragma GCC unroll 3
        for (int v = 0; v < V; v++) *(DC(u8) *)(dxp + c * xplane + xoff[v]) += acc[c][v];
}

static void DC(input_grad)(const cf_dconv_geom *g, const float *dyv, const float *wt, float *dxp)
{
    int owv = (g->OW + 7) / 8 * 8, nvr = owv / 8, nv = g->OH * nvr, khw = g->KH * g->KW;
    size_t xplane = (size_t)g->Hp * g->Wr;
    for (int cb = 0; cb < g->C; cb += OB) {
        int rows = g->C - cb < OB ? g->C - cb : OB;
        for (int t = 0; t < khw; t++) {
            int ki = t / g->KW, kj = t % g->KW;
            const float *w = wt + ((size_t)(cb / OB) * khw + t) * g->O * OB;
            for (int v0 = 0; v0 < nv; v0 += 3) {
                int V = nv - v0 < 3 ? nv - v0 : 3, voff[3] = {0}, xoff[3] = {0};
                for (int v = 0; v < V; v++) {
                    int i = (v0 + v) / nvr, j = (v0 + v) % nvr * 8;
                    voff[v] = i * owv + j;
                    xoff[v] = (i + ki) * g->Wr + j + kj;
                }
                float *dx = dxp + cb * xplane;
                if (V == 3) DC(dx_tile)(3, g, dyv, w, voff, dx, xoff, rows);
                else if (V == 2) DC(dx_tile)(2, g, dyv, w, voff, dx, xoff, rows);
                else DC(dx_tile)(1, g, dyv, w, voff, dx, xoff, rows);
            }
        }
    }
}

/* dwT rows [k0, k0 + KB) (those below K) by the NV vectors of output channels from
   o0, summed over every output position. Inlined with constant KB and NV. */
static inline __attribute__((always_inline)) void DC(dw_tile)(int KB, int NV, const cf_dconv_geom *g,
                                                              const float *xp, const float *dyT, float *dwT,
                                                              int k0, int o0, int add)
{
    int K = g->C * g->KH * g->KW, Or = cf_dconv_or(g->O), khw = g->KH * g->KW;
    int koff[12];
#pragma GCC unroll 12
    for (int k = 0; k < KB; k++) {   /* past K: repeat the last row, computed and dropped */
        int kk = k0 + k < K ? k0 + k : K - 1, c = kk / khw, r = kk % khw;
        koff[k] = (c * g->Hp + r / g->KW) * g->Wr + r % g->KW;
    }
    DC(v8) acc[12][2];
#pragma GCC unroll 12
    for (int k = 0; k < KB; k++)
#pragma GCC unroll 2
        for (int n = 0; n < NV; n++) acc[k][n] = (DC(v8)){0};
    const float *d = dyT + o0;
    for (int i = 0; i < g->OH; i++) {
        const float *xq = xp + (size_t)i * g->Wr;
        for (int j = 0; j < g->OW; j++, d += Or) {
            DC(v8) dv[2];
#pragma GCC unroll 2
            for (int n = 0; n < NV; n++) dv[n] = *(const DC(u8) *)(d + 8 * n);
#pragma GCC unroll 12
            for (int k = 0; k < KB; k++) {
                float xs = xq[koff[k] + j];
#pragma GCC unroll 2
                for (int n = 0; n < NV; n++) acc[k][n] += xs * dv[n];
            }
        }
    }
    for (int k = 0; k < KB && k0 + k < K; k++)
#pragma GCC unroll 2
        for (int n = 0; n < NV; n++) {
            DC(u8) *t = (DC(u8) *)(dwT + (size_t)(k0 + k) * Or + o0 + 8 * n);
            *t = add ? *t + acc[k][n] : acc[k][n];
        }
}

static void DC(weight_grad)(const cf_dconv_geom *g, const float *xp, const float *dyT, float *dwT, int add)
{
    int K = g->C * g->KH * g->KW, Or = cf_dconv_or(g->O), o0 = 0;
    for (; o0 + 16 <= Or; o0 += 16) {   /* two vectors of channels by six rows */
        int k0 = 0;
        for (; k0 + 6 <= K; k0 += 6) DC(dw_tile)(6, 2, g, xp, dyT, dwT, k0, o0, add);
        for (; k0 < K; k0 += 2) DC(dw_tile)(2, 2, g, xp, dyT, dwT, k0, o0, add);
    }
    for (; o0 < Or; o0 += 8) {          /* one vector by twelve rows */
        int k0 = 0;
        for (; k0 + 12 <= K; k0 += 12) DC(dw_tile)(12, 1, g, xp, dyT, dwT, k0, o0, add);
        for (; k0 < K; k0 += 4) DC(dw_tile)(4, 1, g, xp, dyT, dwT, k0, o0, add);
    }
}

/* dyT (P x Or) = dy (O x P) transposed, zeros past O: eight by eight blocks through
   registers, the edges one float at a time. */
static void DC(transpose)(const float *dy, int O, size_t P, float *dyT)
{
    int Or = cf_dconv_or(O), o0 = 0;
    size_t q0 = 0;
    for (; o0 + 8 <= O; o0 += 8) {
        const float *s = dy + (size_t)o0 * P;
        for (q0 = 0; q0 + 8 <= P; q0 += 8) {
            DC(v8) r[8], t[8], u[8];
#pragma GCC unroll 8
            for (int i = 0; i < 8; i++) r[i] = *(const DC(u8) *)(s + i * P + q0);
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
            float *d = dyT + q0 * Or + o0;
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) {
                *(DC(u8) *)(d + i * Or) = __builtin_shufflevector(u[i], u[i + 4], 0, 1, 2, 3, 8, 9, 10, 11);
                *(DC(u8) *)(d + (i + 4) * Or) = __builtin_shufflevector(u[i], u[i + 4], 4, 5, 6, 7, 12, 13, 14, 15);
            }
        }
        for (size_t q = q0; q < P; q++)
            for (int o = o0; o < o0 + 8; o++) dyT[q * Or + o] = dy[(size_t)o * P + q];
    }
    for (size_t q = 0; q < P; q++)
        for (int o = o0; o < Or; o++) dyT[q * Or + o] = o < O ? dy[(size_t)o * P + q] : 0;
}

const cf_dconv_impl DC_ENTRY = {DC(forward), DC(input_grad), DC(weight_grad), DC(transpose)};

#undef OB
