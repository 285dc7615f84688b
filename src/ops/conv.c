/* conv.c - 2-D convolution (cross-correlation, as PyTorch's conv2d), NCHW.
 *
 *   x (B, C, H, W) * w (O, C/G, KH, KW) -> y (B, O, OH, OW)
 *   OH = (H + 2 pad_h - dil_h (KH - 1) - 1) / stride_h + 1, OW likewise.
 *
 * Attributes (node->attr.i): [0] stride_h, [1] stride_w, [2] pad_h, [3] pad_w (zeros
 * on both sides), [4] dil_h, [5] dil_w, [6] groups G. 0 means 1 for strides, dilations
 * and groups, so cf_op_at with fewer integers works.
 *
 * Forward, per sample b and group g: the columns col (K x P), K = C/G KH KW and
 * P = OH OW, gather the input patch of each output position (im2col), and
 * y[b, g] (O/G x P) = w[g] (O/G x K) col. The columns, laid out (B, G, K, P), are the
 * op's aux: backward reads them back.
 * Backward: dw[g] = sum over b of dy[b, g] col^T, in a fixed order; dcol = w[g]^T
 * dy[b, g], scattered back into dx (col2im). Samples are split into at most NCHUNK
 * chunks that depend on B alone, each with its own partial dw and dcol in the
 * workspace, and the partial dw are summed in chunk order: the same bits at any thread
 * count.
 *
 * A 1x1 kernel without padding takes this path too: its columns are x subsampled by
 * the stride, or x itself at stride 1 (no aux then, and dx is the product's output).
 *
 * The direct path (one group, a kernel larger than 1x1 or padded) runs rt/dconv.h's
 * kernels instead, at any stride and dilation, without im2col: forward pads each
 * sample's x with zeros into its chunk's workspace (backward pads it again from x,
 * which it keeps: no aux, and no padded copy of the batch to write and read back),
 * computes y transposed (positions x output channels: the kernels vectorise over
 * channels) and transposes it into y; backward transposes dy, sums, for each kernel
 * tap, w^T dy into a padded dx transposed where the tap puts it, and keeps its
 * middle (at stride 1, with padding smaller than the kernel, dx is instead the
 * forward kernel's over dy padded, by the kernel flipped: see dx_gathers); dw^T
 * sums, for each output position, dy's channels times the input under each tap.
 * Chunks, partial dw and their order are as above; the forward runs in the same
 * chunks, each with its own y transposed. */
#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "core/error.h"
#include "ops/op.h"
#include "rt/dconv.h"

#define NCHUNK 16

/* The geometry of one node's convolution, from its attributes and concrete shapes. */
typedef struct {
    int B, C, H, W;        /* input */
    int O, KH, KW, G;      /* weights, groups */
    int Cg, Og;            /* channels per group, in and out */
    int sh, sw, ph, pw, dh, dw;
    int OH, OW;
    size_t K, P;           /* column rows (Cg KH KW) and columns (OH OW) */
} geom;

static int attr_or_1(int v) { return v == 0 ? 1 : v; }

/* The attributes and the sizes of the output (-1: no output); for infer and kernels. */
static void geom_attrs(geom *g, const cf_node *n)
{
    const int *a = n->attr.i;
    g->sh = attr_or_1(a[0]), g->sw = attr_or_1(a[1]);
    g->ph = a[2], g->pw = a[3];
    g->dh = attr_or_1(a[4]), g->dw = attr_or_1(a[5]);
    g->G = attr_or_1(a[6]);
}

static void geom_of(geom *g, const cf_inst *k)
{
    geom_attrs(g, k->node);
    const cf_shape x = k->xs[0], w = k->xs[1];
    g->B = x.d[0], g->C = x.d[1], g->H = x.d[2], g->W = x.d[3];
    g->O = w.d[0], g->KH = w.d[2], g->KW = w.d[3];
    g->Cg = g->C / g->G, g->Og = g->O / g->G;
    g->OH = k->ys.d[2], g->OW = k->ys.d[3];
    g->K = (size_t)g->Cg * g->KH * g->KW;
    g->P = (size_t)g->OH * g->OW;
}

static int conv_infer(cf_node *n)
{
    cf_shape x = n->in[0]->shape, w = n->in[1]->shape;
    char sx[96], sw[96];
    if (x.rank != 4)
        return cf_seterr("error: conv2d takes x as (B, C, H, W), not %s (rank %d)", cf_shape_str(x, sx, sizeof sx),
                         x.rank);
    if (w.rank != 4 || n->in[1]->batched)
        return cf_seterr("error: conv2d takes weights as (O, C/groups, KH, KW) without the batch dimension, not %s",
                         cf_shape_str(w, sw, sizeof sw));
    cf_shape_str(x, sx, sizeof sx);
    cf_shape_str(w, sw, sizeof sw);
    geom g;
    geom_attrs(&g, n);
    if (g.sh < 0 || g.sw < 0 || g.dh < 0 || g.dw < 0 || g.ph < 0 || g.pw < 0 || g.G < 0)
        return cf_seterr("error: conv2d of x %s: stride %dx%d, padding %dx%d, dilation %dx%d and groups %d "
                         "cannot be negative",
                         sx, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.G);
    long long C = x.d[1], H = x.d[2], W = x.d[3], O = w.d[0], Cg = w.d[1], KH = w.d[2], KW = w.d[3];
    if (C != (long long)g.G * Cg && g.G == 1)
        return cf_seterr("error: conv2d channels do not match: x %s has %lld channels, weights %s take %lld", sx, C,
                         sw, Cg);
    if (C != (long long)g.G * Cg)
        return cf_seterr("error: conv2d channels do not match: x %s has %lld channels, weights %s take %d groups x "
                         "%lld = %lld",
                         sx, C, sw, g.G, Cg, (long long)g.G * Cg);
    if (O % g.G)
        return cf_seterr("error: conv2d: the %lld output channels of weights %s do not split into %d groups", O, sw,
                         g.G);
    long long eh = (long long)g.dh * (KH - 1) + 1, ew = (long long)g.dw * (KW - 1) + 1;   /* dilated kernel */
    long long hp = H + 2LL * g.ph, wp = W + 2LL * g.pw;                                    /* padded input */
    if (eh > hp || ew > wp) {
        char k[96] = "", in[96] = "";   /* dilation and padding, where there are some */
        if (g.dh > 1 || g.dw > 1) snprintf(k, sizeof k, " (%lldx%lld with dilation %dx%d)", eh, ew, g.dh, g.dw);
        if (g.ph || g.pw) snprintf(in, sizeof in, " (%lldx%lld with padding %dx%d)", hp, wp, g.ph, g.pw);
        return cf_seterr("error: conv2d kernel %lldx%lld%s is larger than the input %lldx%lld%s: x %s, weights %s", KH,
                         KW, k, H, W, in, sx, sw);
    }
    if (hp > INT_MAX || wp > INT_MAX)
        return cf_seterr("error: conv2d padding %dx%d of x %s is too large", g.ph, g.pw, sx);
    long long OH = (hp - eh) / g.sh + 1, OW = (wp - ew) / g.sw + 1;
    /* a positive stride always leaves one output once the kernel fits; this guards the
       arithmetic all the same */
    if (OH < 1 || OW < 1)
        return cf_seterr("error: conv2d stride %dx%d leaves no output from the input %lldx%lld (padded %lldx%lld) "
                         "and the kernel %lldx%lld",
                         g.sh, g.sw, H, W, hp, wp, eh, ew);
    /* the columns of a sample, C KH KW x OH OW, and their sides are matrix sizes (int) */
    if ((double)C * KH * KW * OH * OW > (double)CF_MAX_ELEMENTS || (double)O * OH * OW > (double)CF_MAX_ELEMENTS ||
        (double)Cg * KH * KW > INT_MAX || OH * OW > INT_MAX)
        return cf_seterr("error: conv2d of x %s by weights %s is too large (%lldx%lld outputs per channel)", sx, sw,
                         OH, OW);
    n->shape = x;
    n->shape.d[1] = (int)O;
    n->shape.d[2] = (int)OH;
    n->shape.d[3] = (int)OW;
    n->batched = n->in[0]->batched;
    return 0;
}

static int nchunks(int B) { return B < NCHUNK ? B : NCHUNK; }

/* ---- the direct path's geometry ---- */

/* Whether the kernel is 1x1 without padding: a matrix product of the weights and x
 * (subsampled, with a stride), which the matrix-product engine runs best. */
static int is_1x1(const geom *g) { return g->KH == 1 && g->KW == 1 && g->ph == 0 && g->pw == 0; }

/* Whether x itself is the columns: a 1x1 kernel at stride 1 without padding. */
static int is_pointwise(const geom *g) { return is_1x1(g) && g->sh == 1 && g->sw == 1; }

/* Whether the direct kernels run this convolution (see the top of the file); their
 * offsets within a sample's padded input are ints. */
static int is_direct(const geom *g)
{
    return g->G == 1 && !is_1x1(g) && (double)(g->H + 2.0 * g->ph) * (g->W + 2.0 * g->pw) * cf_dconv_or(g->C) < INT_MAX;
}

static size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

/* The direct path's buffers, in floats (each rounded to 16, so that they stay aligned). */
typedef struct {
    cf_dconv_geom dg;         /* x padded -> y */
    cf_dconv_geom dgx;        /* with gather: dy padded -> dx */
    int gather;               /* dx as a forward over dy padded (stride 1, see dx_gathers) */
    int Or, Cr;               /* output and input channels rounded up to vectors */
    size_t xp;                /* one sample's padded x: C planes of dg.Hp x dg.Wr */
    size_t wp, wt;            /* weights packed for forward (K x Or), and for dx */
    size_t yT;                /* per chunk (forward): y transposed, P x Or; then a
                                 padded x (xp) */
    size_t dxT, dyT, dwT;     /* per chunk (backward): the padded dx transposed (Hp Wr x
                                 Cr), dy transposed with rows of zeros after, a
                                 partial dw^T (K x Or); then pl: */
    size_t pl;                /* the padded dx (xp), or with gather the padded dy; once
                                 dx is done, the padded x for dw (so at least xp) */
} dsizes;

/* Whether dx is a forward over dy padded with KH - 1 - ph rows above and KW - 1 - pw
 * columns to the left, by the kernel flipped and transposed (C x O x KH x KW): at
 * stride 1 without dilation, with padding smaller than the kernel; dx is then written
 * once, not summed tap by tap into a buffer. */
static int dx_gathers(const geom *g)
{
    return g->sh == 1 && g->sw == 1 && g->dh == 1 && g->dw == 1 && g->ph < g->KH && g->pw < g->KW &&
           (double)g->O * (g->H + g->KH - 1) * (g->W + g->KW - 1) < INT_MAX;
}

static dsizes dsizes_of(const geom *g)
{
    dsizes d;
    d.dg = (cf_dconv_geom){g->C, g->H + 2 * g->ph, g->W + 2 * g->pw, g->O, g->KH, g->KW, g->OH, g->OW,
                           g->sh, g->sw, g->dh, g->dw};
    d.gather = dx_gathers(g);
    d.dgx = (cf_dconv_geom){g->O, g->H + g->KH - 1, g->W + g->KW - 1, g->C, g->KH, g->KW, g->H, g->W, 1, 1, 1, 1};
    d.Or = cf_dconv_or(g->O);
    d.Cr = cf_dconv_or(g->C);
    d.xp = round16((size_t)g->C * d.dg.Hp * d.dg.Wr);
    d.wp = round16(g->K * d.Or);
    d.wt = round16((size_t)g->KH * g->KW * g->O * d.Cr);
    d.yT = round16(g->P * d.Or);
    d.dxT = round16((size_t)d.dg.Hp * d.dg.Wr * d.Cr);
    d.dyT = round16((g->P + CF_DCONV_QPAD) * d.Or);
    d.dwT = round16(g->K * d.Or);
    size_t pdy = d.gather ? round16((size_t)g->O * d.dgx.Hp * d.dgx.Wr) : 0;
    d.pl = pdy > d.xp ? pdy : d.xp;
    return d;
}

/* Per chunk of the forward's and of the backward's workspace. */
static size_t fchunk(const dsizes *d) { return d->yT + d->xp; }
static size_t dchunk(const dsizes *d) { return d->dxT + d->dyT + d->dwT + d->pl; }

/* The columns of every sample, B G K P (none for a pointwise kernel, x is its columns;
 * none on the direct path). */
static size_t conv_aux(const cf_inst *k)
{
    geom g;
    geom_of(&g, k);
    if (is_direct(&g)) return 0;
    return is_pointwise(&g) ? 0 : (size_t)g.B * g.G * g.K * g.P;
}

/* Direct: the packed weights and, per chunk, y transposed and a padded x (forward);
 * or the weights packed for dx and, per chunk, dx transposed, dy transposed, a
 * partial dw^T and a padded dx or dy, then x (backward, see dsizes). Else, per
 * chunk: a partial dw (O K floats) and the columns' gradient of one sample (G K P). */
static size_t conv_workspace(const cf_inst *k)
{
    geom g;
    geom_of(&g, k);
    if (is_direct(&g)) {
        dsizes d = dsizes_of(&g);
        size_t fwd = d.wp + (size_t)nchunks(g.B) * fchunk(&d), bwd = d.wt + (size_t)nchunks(g.B) * dchunk(&d);
        return bwd > fwd ? bwd : fwd;
    }
    return (size_t)nchunks(g.B) * ((size_t)g.O * g.K + (size_t)g.G * g.K * g.P);
}

/* The output columns [*lo, *hi) whose input index i * s + off falls in [0, n). */
static void valid_range(int n, int s, int off, int out, int *lo, int *hi)
{
    long long l = off >= 0 ? 0 : (-(long long)off + s - 1) / s;
    long long h = (long long)n - off <= 0 ? 0 : ((long long)n - off + s - 1) / s;
    *lo = (int)(l < out ? l : out);
    *hi = (int)(h < out ? h : out);
    if (*hi < *lo) *hi = *lo;
}

/* col (G K x P) = the patches of one sample's x (C, H, W). */
static void im2col(const geom *g, const float *restrict x, float *restrict col)
{
    for (int c = 0; c < g->C; c++)
        for (int ki = 0; ki < g->KH; ki++)
            for (int kj = 0; kj < g->KW; kj++) {
                int offw = kj * g->dw - g->pw, lo, hi;
                valid_range(g->W, g->sw, offw, g->OW, &lo, &hi);
                for (int oh = 0; oh < g->OH; oh++, col += g->OW) {
                    int ih = oh * g->sh - g->ph + ki * g->dh;
                    if (ih < 0 || ih >= g->H) {
                        memset(col, 0, (size_t)g->OW * sizeof *col);
                        continue;
                    }
                    const float *row = x + ((size_t)c * g->H + ih) * g->W;   /* ow reads row[ow sw + offw] */
                    for (int ow = 0; ow < lo; ow++) col[ow] = 0;
                    if (g->sw == 1)
                        memcpy(col + lo, row + lo + offw, (size_t)(hi - lo) * sizeof *col);
                    else
                        for (int ow = lo; ow < hi; ow++) col[ow] = row[(ptrdiff_t)ow * g->sw + offw];
                    for (int ow = hi; ow < g->OW; ow++) col[ow] = 0;
                }
            }
}

/* dx (C, H, W) += the columns' gradient dcol (G K x P), scattered back. */
static void col2im(const geom *g, const float *restrict dcol, float *restrict dx)
{
    for (int c = 0; c < g->C; c++)
        for (int ki = 0; ki < g->KH; ki++)
            for (int kj = 0; kj < g->KW; kj++) {
                int offw = kj * g->dw - g->pw, lo, hi;
                valid_range(g->W, g->sw, offw, g->OW, &lo, &hi);
                for (int oh = 0; oh < g->OH; oh++, dcol += g->OW) {
                    int ih = oh * g->sh - g->ph + ki * g->dh;
                    if (ih < 0 || ih >= g->H) continue;
                    float *row = dx + ((size_t)c * g->H + ih) * g->W;
                    for (int ow = lo; ow < hi; ow++) row[(ptrdiff_t)ow * g->sw + offw] += dcol[ow];
                }
            }
}

typedef struct {
    const cf_inst *k;
    geom g;
    dsizes d;                    /* the direct path */
    const cf_dconv_impl *impl;
} job;

/* ---- the direct path's kernels ---- */

/* dst = n planes of h x w from src, each padded with zeros to hp x wr: ph rows above,
 * pw columns to the left, the rest below and to the right. */
static void pad_planes(const float *restrict src, int n, int h, int w, int ph, int pw, float *restrict dst, int hp,
                       int wr)
{
    for (int c = 0; c < n; c++, src += (size_t)h * w)
        for (int i = 0; i < hp; i++, dst += wr) {
            int si = i - ph;
            if (si < 0 || si >= h) {
                memset(dst, 0, (size_t)wr * sizeof *dst);
                continue;
            }
            const float *row = src + (size_t)si * w;
            int j = 0;
            for (; j < pw; j++) dst[j] = 0;
            for (; j < pw + w; j++) dst[j] = row[j - pw];
            for (; j < wr; j++) dst[j] = 0;
        }
}

/* Zeros in columns [from, ld) of the rows of m (ld floats apart). */
static void zero_cols(float *m, size_t rows, int from, int ld)
{
    if (from < ld)
        for (size_t r = 0; r < rows; r++) memset(m + r * ld + from, 0, (size_t)(ld - from) * sizeof *m);
}

/* The forward kernel's weights: w (O x K) transposed, K x Or, zeros past O. */
static void pack_weights(const job *j, const float *restrict w, float *restrict wp)
{
    j->impl->transpose(w, j->g.O, (int)j->g.K, j->g.K, wp, (size_t)j->d.Or, 0);
    zero_cols(wp, j->g.K, j->g.O, j->d.Or);
}

/* The input gradient kernel's weights: for each tap t of (ki, kj), for each o, the
 * row of w[o][c][t] over c (zeros past C). With gather, the forward kernel's for dy:
 * for each o, for each tap t, the row of w[o][c][KH KW - 1 - t] (the kernel flipped). */
static void pack_for_dx(const geom *g, const dsizes *d, const float *restrict w, float *restrict wt)
{
    size_t khw = (size_t)g->KH * g->KW;
    for (size_t t = 0; t < khw; t++)
        for (int o = 0; o < g->O; o++) {
            float *r = d->gather ? wt + ((size_t)o * khw + khw - 1 - t) * d->Cr : wt + (t * g->O + o) * d->Cr;
            for (int c = 0; c < d->Cr; c++) r[c] = c < g->C ? w[((size_t)o * g->C + c) * khw + t] : 0;
        }
}

/* The samples [*b0, *b1) of chunk c. */
static void chunk_of(int B, int c, size_t *b0, size_t *b1)
{
    int nc = nchunks(B);
    *b0 = (size_t)B * c / nc, *b1 = (size_t)B * (c + 1) / nc;
}

/* Chunk c of the samples (direct): pads each sample's x, and y. */
static void forward_chunk_direct(void *p, int c)
{
    const job *j = p;
    const cf_inst *k = j->k;
    const geom *g = &j->g;
    const dsizes *d = &j->d;
    size_t xsz = (size_t)g->C * g->H * g->W, ysz = (size_t)g->O * g->P, b0, b1;
    float *yT = k->ws + d->wp + (size_t)c * fchunk(d), *xp = yT + d->yT;
    chunk_of(g->B, c, &b0, &b1);
    for (size_t s = b0; s < b1; s++) {
        pad_planes(k->x[0] + s * xsz, g->C, g->H, g->W, g->ph, g->pw, xp, d->dg.Hp, d->dg.Wr);
        j->impl->forward(&d->dg, xp, k->ws, yT);
        j->impl->transpose(yT, (int)g->P, g->O, (size_t)d->Or, k->y + s * ysz, g->P, 0);
    }
}

/* dx (C, H, W) = (or +=, with acc) the middle of the padded gradient dxp (C planes of
 * Hp x Wr). */
static void crop_planes(const float *restrict dxp, const geom *g, const dsizes *d, float *restrict dx, int acc)
{
    int H = g->H, W = g->W, Hp = d->dg.Hp, Wr = d->dg.Wr;
    for (int c = 0; c < g->C; c++)
        for (int i = 0; i < H; i++, dx += W) {
            const float *restrict r = dxp + ((size_t)c * Hp + i + g->ph) * Wr + g->pw;
            if (acc)   /* rows are short: a loop, not memcpy's call */
                for (int q = 0; q < W; q++) dx[q] += r[q];
            else
                for (int q = 0; q < W; q++) dx[q] = r[q];
        }
}

/* Chunk c of the samples (direct): dx of each, and its partial dw^T. */
static void backward_chunk_direct(void *p, int c)
{
    const job *j = p;
    const cf_inst *k = j->k;
    const geom *g = &j->g;
    const dsizes *d = &j->d;
    size_t xsz = (size_t)g->C * g->H * g->W, ysz = (size_t)g->O * g->P, b0, b1;
    float *dxT = k->ws + d->wt + (size_t)c * dchunk(d), *dyT = dxT + d->dxT, *dwT = dyT + d->dyT, *pl = dwT + d->dwT;
    chunk_of(g->B, c, &b0, &b1);
    memset(dyT + g->P * d->Or, 0, CF_DCONV_QPAD * d->Or * sizeof *dyT);
    for (size_t s = b0; s < b1; s++) {
        j->impl->transpose(k->dy + s * ysz, g->O, (int)g->P, g->P, dyT, (size_t)d->Or, 0);
        zero_cols(dyT, g->P, g->O, d->Or);
        if (k->dx[0] && d->gather) {
            pad_planes(k->dy + s * ysz, g->O, g->OH, g->OW, g->KH - 1 - g->ph, g->KW - 1 - g->pw, pl, d->dgx.Hp,
                       d->dgx.Wr);
            j->impl->forward(&d->dgx, pl, k->ws, dxT);
            j->impl->transpose(dxT, g->H * g->W, g->C, (size_t)d->Cr, k->dx[0] + s * xsz, (size_t)g->H * g->W,
                               k->acc[0]);
        } else if (k->dx[0]) {
            memset(dxT, 0, d->dxT * sizeof *dxT);
            j->impl->input_grad(&d->dg, dyT, k->ws, dxT);
            j->impl->transpose(dxT, d->dg.Hp * d->dg.Wr, g->C, (size_t)d->Cr, pl, (size_t)d->dg.Hp * d->dg.Wr, 0);
            crop_planes(pl, g, d, k->dx[0] + s * xsz, k->acc[0]);
        }
        if (k->dx[1]) {
            pad_planes(k->x[0] + s * xsz, g->C, g->H, g->W, g->ph, g->pw, pl, d->dg.Hp, d->dg.Wr);
            j->impl->weight_grad(&d->dg, pl, dyT, dwT, s != b0);
        }
    }
}

/* dw's rows [r0, r1) (direct): the chunks' partial dw^T summed into the first in chunk
   order, transposed. */
static void dw_rows(void *p, size_t r0, size_t r1)
{
    const job *j = p;
    const cf_inst *k = j->k;
    const geom *g = &j->g;
    const dsizes *d = &j->d;
    int nc = nchunks(g->B);
    float *part = k->ws + d->wt + d->dxT + d->dyT + r0 * d->Or;
    size_t n = (r1 - r0) * d->Or;
    for (int c = 1; c < nc; c++) {
        const float *pc = part + c * dchunk(d);
        for (size_t i = 0; i < n; i++) part[i] += pc[i];
    }
    j->impl->transpose(part, (int)(r1 - r0), g->O, (size_t)d->Or, k->dx[1] + r0, g->K, k->acc[1]);
}

static void conv_backward_direct(job *j)
{
    const cf_inst *k = j->k;
    const geom *g = &j->g;
    const dsizes *d = &j->d;
    int nc = nchunks(g->B);
    if (k->dx[0]) pack_for_dx(g, d, k->x[1], k->ws);
    cf_gemm_add_flops(2.0 * g->B * g->O * g->K * g->P * (!!k->dx[0] + !!k->dx[1]));
    cf_parallel_for(nc, backward_chunk_direct, j);
    if (k->dx[1]) cf_parallel_range(g->K, (size_t)nc * d->Or, dw_rows, j);
}

static void forward_range(void *p, size_t b, size_t e)
{
    const job *j = p;
    const cf_inst *k = j->k;
    const geom *g = &j->g;
    size_t xsz = (size_t)g->C * g->H * g->W, ysz = (size_t)g->O * g->P, csz = (size_t)g->G * g->K * g->P;
    for (size_t s = b; s < e; s++) {
        const float *col = k->x[0] + s * xsz;   /* a pointwise kernel's columns */
        if (!is_pointwise(g)) {
            im2col(g, col, k->aux + s * csz);
            col = k->aux + s * csz;
        }
        for (int gr = 0; gr < g->G; gr++)
            cf_gemm(0, 0, g->Og, (int)g->P, (int)g->K, 1.0f, k->x[1] + (size_t)gr * g->Og * g->K, (int)g->K,
                    col + gr * g->K * g->P, (int)g->P, 0.0f, k->y + s * ysz + (size_t)gr * g->Og * g->P, (int)g->P);
    }
}

static int conv_forward(const cf_inst *k)
{
    job j = {.k = k};
    geom_of(&j.g, k);
    if (is_direct(&j.g)) {
        j.d = dsizes_of(&j.g);
        j.impl = cf_dconv_pick();
        pack_weights(&j, k->x[1], k->ws);
        cf_gemm_add_flops(2.0 * j.g.B * j.g.O * j.g.K * j.g.P);
        cf_parallel_for(nchunks(j.g.B), forward_chunk_direct, &j);
        return 0;
    }
    cf_parallel_range((size_t)j.g.B, (size_t)j.g.O * j.g.K * j.g.P + 1, forward_range, &j);
    return 0;
}

/* Chunk c of the samples: its partial dw, and dx of each of its samples. */
static void backward_chunk(void *p, int c)
{
    const job *j = p;
    const cf_inst *k = j->k;
    const geom *g = &j->g;
    size_t b0, b1, xsz = (size_t)g->C * g->H * g->W, ysz = (size_t)g->O * g->P, csz = (size_t)g->G * g->K * g->P;
    size_t wsz = (size_t)g->O * g->K;
    float *dwp = k->ws + c * (wsz + csz), *dcol = dwp + wsz;
    chunk_of(g->B, c, &b0, &b1);
    const float *w = k->x[1];
    float *dx = k->dx[0];
    int pw = is_pointwise(g);   /* x is the columns, dx their gradient */
    for (size_t s = b0; s < b1; s++) {
        const float *dy = k->dy + s * ysz, *col = pw ? k->x[0] + s * xsz : k->aux + s * csz;
        float *dc = pw && dx ? dx + s * xsz : dcol;
        for (int gr = 0; gr < g->G; gr++) {
            const float *dyg = dy + (size_t)gr * g->Og * g->P;
            const float *wg = w + (size_t)gr * g->Og * g->K;
            if (k->dx[1])
                cf_gemm(0, 1, g->Og, (int)g->K, (int)g->P, 1.0f, dyg, (int)g->P, col + gr * g->K * g->P, (int)g->P,
                        s == b0 ? 0.0f : 1.0f, dwp + (size_t)gr * g->Og * g->K, (int)g->K);
            if (dx)
                cf_gemm(1, 0, (int)g->K, (int)g->P, g->Og, 1.0f, wg, (int)g->K, dyg, (int)g->P,
                        pw && k->acc[0] ? 1.0f : 0.0f, dc + gr * g->K * g->P, (int)g->P);
        }
        if (dx && !pw) {
            float *dxs = dx + s * xsz;
            if (!k->acc[0]) memset(dxs, 0, xsz * sizeof *dxs);
            col2im(g, dcol, dxs);
        }
    }
}

static void conv_backward(const cf_inst *k)
{
    job j = {.k = k};
    geom_of(&j.g, k);
    if (is_direct(&j.g)) {
        j.d = dsizes_of(&j.g);
        j.impl = cf_dconv_pick();
        conv_backward_direct(&j);
        return;
    }
    const geom *g = &j.g;
    int nc = nchunks(g->B);
    cf_parallel_for(nc, backward_chunk, &j);
    if (!k->dx[1]) return;
    /* dw: the chunks' partial sums, in chunk order */
    size_t wsz = (size_t)g->O * g->K, stride = wsz + (size_t)g->G * g->K * g->P;
    float *dw = k->dx[1];
    cf_put(dw, k->ws, wsz, k->acc[1]);
    for (int c = 1; c < nc; c++) cf_put(dw, k->ws + c * stride, wsz, 1);
}

/* Each output element C/G KH KW multiply-adds; dx and dK the same again, as the
 * kernels count them. */
static void conv_flops(const cf_node *n, const unsigned char *want, double *fwd, double *bwd)
{
    cf_shape w = n->in[1]->shape;
    *fwd = 2 * cf_count1(n->shape) * (double)w.d[1] * w.d[2] * w.d[3];
    *bwd = *fwd * cf_grads_wanted(n, want);
}

const cf_opdef cf_op_conv2d = {
    .name = "conv2d", .what = "2-D convolution", .infer = conv_infer, .aux = conv_aux,
    .workspace = conv_workspace, .forward = conv_forward, .backward = conv_backward, .flags = CF_BWD_X,
    .nin = 2,
    .flops = conv_flops,
};
