/* qconv.c - a 2-D convolution as an 8-bit integer product, with its bias and, folded
 * into the product's epilogue, an evaluation-mode batch norm and a relu after it: what
 * the quantize pass (src/exec/quantize.c) makes of a conv2d node whose kernels the
 * model holds quantized (core/quant.h), in inference binds. One group.
 *
 * Inputs: x (B, C, H, W), K (O, C, KH, KW), then b (O numbers) when attr i[7] has bit 0,
 * then gamma, beta, running mean and variance (O numbers each) when it has bit 1; bit
 * 2: relu; bit 3: 2x2 max-pooling by 2 at the end (the output's planes halved, rounded
 * down). Attributes i[0..6] are conv2d's (ops/conv.c), f[0] the batch norm's eps.
 *
 * Per sample: x is transposed to channels last and quantized (7 bits, with the file's
 * fixed range, or one measured on the sample) into a padded copy, whose padding holds
 * the zero point
 * (the integer of 0); each output position's patch (KH KW C bytes, taps outer,
 * channels inner) is a row of the product, whose columns are the output channels (K
 * reordered alike by the pass); rt/qgemm.h's product gives the positions x channels
 * in float32, with the bias, the batch norm (y a + (b - mean) a + beta, a = gamma /
 * sqrt(var + eps), as scales and a bias of the epilogue) and relu, then pooled (the
 * maximum of four rows: channels last, every channel at once); they are transposed
 * into y. Samples are split into at most NCHUNK chunks, each with its own scratch;
 * every sum is exact, so no split changes a bit. No backward. */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "core/quant.h"
#include "ops/op.h"
#include "rt/dconv.h"
#include "rt/pool.h"
#include "rt/qgemm.h"

#define NCHUNK 16

enum { HAS_BIAS = 1, HAS_BN = 2, RELU = 4, POOL = 8 };

typedef struct {
    int B, C, H, W, O, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw, Hp, Wp;
    int pool, YH, YW;      /* 2x2 max-pooling after; the output's planes */
    size_t K, Kp, P, Prows;
    int direct;            /* computed by the kernels' direct convolution (rt/qgemm.h's cf_qdirect) */
    size_t npos, plane4, planeq;   /* its positions, and its planes of words and of bytes */
} geom;

static int or1(int v) { return v ? v : 1; }
static size_t up(size_t n, size_t m) { return (n + m - 1) / m * m; }

/* Whether w's kernels run the direct convolution for g: packed for it (which the
   quantize pass does for few channels and taps, where the implementation has one),
   at stride and dilation 1. */
static int direct_fits(const geom *g, const cf_qweights *w)
{
    return w && w->direct && g->sh == 1 && g->sw == 1 && g->dh == 1 && g->dw == 1;
}

static void geom_of(geom *g, const cf_inst *k, const cf_qweights *qw)
{
    const int *a = k->node->attr.i;
    cf_shape x = k->xs[0], w = k->xs[1];
    *g = (geom){.B = x.d[0], .C = x.d[1], .H = x.d[2], .W = x.d[3], .O = w.d[0], .KH = w.d[2], .KW = w.d[3],
                .sh = or1(a[0]), .sw = or1(a[1]), .ph = a[2], .pw = a[3], .dh = or1(a[4]), .dw = or1(a[5]),
                .pool = (a[7] & POOL) != 0, .YH = k->ys.d[2], .YW = k->ys.d[3]};
    g->Hp = g->H + 2 * g->ph, g->Wp = g->W + 2 * g->pw;
    g->OH = (g->Hp - g->dh * (g->KH - 1) - 1) / g->sh + 1;
    g->OW = (g->Wp - g->dw * (g->KW - 1) - 1) / g->sw + 1;
    g->K = (size_t)g->C * g->KH * g->KW, g->Kp = up(g->K, 4);
    g->P = (size_t)g->OH * g->OW, g->Prows = up(g->P, CF_QGEMM_ROW_PAD);
    g->direct = direct_fits(g, qw);
    if (g->direct) {   /* full rows of Wp positions; words read up to the last one's last tap */
        g->npos = up((size_t)g->OH * g->Wp, CF_QDIRECT_POS);
        g->plane4 = up(g->npos + (size_t)(g->KH - 1) * g->Wp + 4 * (size_t)((g->KW + 3) / 4 - 1), 16);
        g->planeq = up(g->plane4 + 3, 64);
    }
}

/* conv2d's shape, halved (rounded down) by the pooling when there is one. */
static int qconv_infer(cf_node *n)
{
    if (cf_ops[CF_OP_CONV2D]->infer(n)) return -1;
    if (n->attr.i[7] & POOL) n->shape.d[2] /= 2, n->shape.d[3] /= 2;
    return 0;
}

static int chunks(int B) { return B < NCHUNK ? B : NCHUNK; }

/* The rows' stride: room for a copy's overrun past K (gather_rows), whole words. */
static size_t rows_lda(const geom *g) { return up(g->K + 16, 16); }

/* One chunk's scratch, in bytes: the padded input, the rows, the product, each row's
   scale and zero point, and the sample transposed (or the pooled product); for the
   direct convolution, the byte planes, the word planes, the channels' planes and
   their scales. */
static size_t chunk_bytes(const geom *g)
{
    size_t direct = !g->direct ? 0
                               : up((size_t)g->C * g->planeq, 64) + up((size_t)g->C * g->plane4 * 4, 64) +
                                     up((size_t)g->O * g->npos * sizeof(float), 64) + up((size_t)g->O * sizeof(float), 64);
    size_t plane = (size_t)g->C * g->H * g->W * sizeof(float), pooled = (size_t)g->YH * g->YW * g->O * sizeof(float);
    size_t rows = up((size_t)g->Hp * g->Wp * g->C + 16, 64) + up(g->Prows * rows_lda(g), 64) +
                  up(g->P * g->O * sizeof(float), 64) + up(g->Prows * (sizeof(float) + sizeof(int)), 64) +
                  up(plane > pooled ? plane : pooled, 64);
    return direct > rows ? direct : rows;
}

static cf_qparam *qparam(const cf_inst *k) { return cf_model_qparam(k->node->model, k->node->in[1]->index); }

static const cf_qweights *packed(const cf_inst *k)
{
    const cf_qparam *qp = qparam(k);
    return qp ? qp->packed : NULL;
}

static size_t qconv_workspace(const cf_inst *k)
{
    geom g;
    geom_of(&g, k, packed(k));
    size_t bytes = 2 * up((size_t)g.O * sizeof(float), 64) + (size_t)chunks(g.B) * chunk_bytes(&g) + 64;
    return (bytes + 3) / 4;
}

typedef struct job {
    const cf_inst *k;
    const geom *g;
    const cf_qweights *w;
    const cf_qparam *qp;
    const float *col_scale, *bias;
    unsigned char *scratch;
    int nchunk, relu;
} job;

/* Sample x quantized, channels last, into xq (Hp x Wp x C, the padding the zero
   point): x transposed into xt (H W x C floats), then each row of the image (W C
   floats) quantized into its place; its scale and zero point. */
static void quantize_sample(const job *j, const float *x, float *xt, uint8_t *xq, float *s, int *z)
{
    const geom *g = j->g;
    const cf_qgemm_impl *im = j->w->im;
    const int C = g->C, H = g->H, W = g->W, Wp = g->Wp, ph = g->ph, pw = g->pw;
    *s = j->qp->act_scale, *z = j->qp->act_zero;
    if (!j->qp->act_static) {
        float lo, hi;
        im->minmax(x, C * H * W, &lo, &hi);
        cf_qact_range(lo, hi, s, z);
    }
    if (ph || pw) memset(xq, *z, (size_t)g->Hp * Wp * C);   /* the padding (the rows below fill the rest) */
    const float *rows = x;
    if (C > 1) {
        cf_dconv_pick()->transpose(x, C, H * W, (size_t)H * W, xt, (size_t)C, 0);
        rows = xt;
    }
    float inv = 1 / *s;
    for (int i = 0; i < H; i++) im->quant(rows + (size_t)i * W * C, W * C, inv, *z, xq + ((size_t)(i + ph) * Wp + pw) * C);
}

/* n bytes from s to d, sixteen at a time, the last sixteen overlapping: up to 16 - n
   bytes past d + n are written (with what follows s + n), which the rows' stride
   leaves room for. */
static inline void copy_taps(uint8_t *restrict d, const uint8_t *restrict s, size_t n)
{
    if (n <= 16) {
        memcpy(d, s, 16);
        return;
    }
    size_t t = 0;
    for (; t + 16 < n; t += 16) memcpy(d + t, s + t, 16);
    memcpy(d + n - 16, s + n - 16, 16);
}

/* Each output position's patch, a row of lda bytes (K of them used; the kernel reads
   Kp, and what lies past K meets zero weights): the taps of a kernel row are adjacent
   in xq when the dilation across is 1, one copy each. Kernel rows outer, so that the
   bytes a copy writes past its taps are written over by the next. */
static void gather_rows(const geom *g, const uint8_t *restrict xq, uint8_t *restrict rows, size_t lda)
{
    const int OH = g->OH, OW = g->OW, KH = g->KH, sh = g->sh, sw = g->sw, dh = g->dh, dw = g->dw, Wp = g->Wp;
    const size_t C = (size_t)g->C;
    const size_t tapw = dw == 1 ? (size_t)g->KW * C : C, step = (size_t)sw * C;
    const int taps = dw == 1 ? 1 : g->KW;
    for (int oh = 0; oh < OH; oh++)
        for (int ki = 0; ki < KH; ki++)
            for (int kj = 0; kj < taps; kj++) {
                const uint8_t *src = xq + ((size_t)(oh * sh + ki * dh) * Wp + kj * dw) * C;
                uint8_t *dst = rows + (size_t)oh * OW * lda + (size_t)(ki * taps + kj) * tapw;
                for (int ow = 0; ow < OW; ow++, src += step, dst += lda) copy_taps(dst, src, tapw);
            }
}

/* 2x2 max-pooling of ct (positions x channels) into pooled (YH YW x O): each window's
   greatest value (the first of equals, rows then columns, as maxpool takes it). */
static void pool_rows(const geom *g, const float *restrict ct, float *restrict pooled)
{
    const int YH = g->YH, YW = g->YW, O = g->O, OW = g->OW;
    for (int i = 0; i < YH; i++)
        for (int jj = 0; jj < YW; jj++) {
            const float *restrict a = ct + ((size_t)(2 * i) * OW + 2 * jj) * O, *restrict b = a + O,
                                  *restrict c = a + (size_t)OW * O, *restrict d = c + O;
            float *restrict y = pooled + ((size_t)i * YW + jj) * O;
            for (int o = 0; o < O; o++) {
                float m = a[o];
                m = b[o] > m ? b[o] : m;
                m = c[o] > m ? c[o] : m;
                y[o] = d[o] > m ? d[o] : m;
            }
        }
}

/* Sample x quantized into planes of planeq bytes (Hp x Wp, the padding and what lies
   past it the zero point), then into planes of words for cf_qdirect; its scale and
   zero point. */
static void quantize_planes(const job *j, const float *x, uint8_t *xq, uint32_t *x4, float *s, int *z)
{
    const geom *g = j->g;
    const cf_qgemm_impl *im = j->w->im;
    const int C = g->C, H = g->H, W = g->W, Wp = g->Wp;
    *s = j->qp->act_scale, *z = j->qp->act_zero;
    if (!j->qp->act_static) {
        float lo, hi;
        im->minmax(x, C * H * W, &lo, &hi);
        cf_qact_range(lo, hi, s, z);
    }
    memset(xq, *z, (size_t)C * g->planeq);
    float inv = 1 / *s;
    for (int c = 0; c < C; c++) {
        uint8_t *q = xq + (size_t)c * g->planeq;
        for (int i = 0; i < H; i++)
            im->quant(x + ((size_t)c * H + i) * W, W, inv, *z, q + (size_t)(i + g->ph) * Wp + g->pw);
        uint32_t *w4 = x4 + (size_t)c * g->plane4;
        for (size_t i = 0; i < g->plane4; i++)
            w4[i] = (uint32_t)q[i] | (uint32_t)q[i + 1] << 8 | (uint32_t)q[i + 2] << 16 | (uint32_t)q[i + 3] << 24;
    }
}

/* The channels' planes (npos floats each, rows Wp apart) into y (O planes of YH x YW):
   each 2x2 window's greatest value as pool_rows takes it, or the first OW of each row. */
static void planes_out(const geom *g, const float *restrict out, float *restrict y)
{
    const int Wp = g->Wp, YH = g->YH, YW = g->YW;
    for (int o = 0; o < g->O; o++, out += g->npos)
        for (int i = 0; i < YH; i++, y += YW) {
            if (!g->pool) {
                memcpy(y, out + (size_t)i * Wp, (size_t)YW * sizeof(float));
                continue;
            }
            const float *restrict a = out + (size_t)(2 * i) * Wp, *restrict c = a + Wp;
            for (int jj = 0; jj < YW; jj++) {
                float m = a[2 * jj];
                m = a[2 * jj + 1] > m ? a[2 * jj + 1] : m;
                m = c[2 * jj] > m ? c[2 * jj] : m;
                y[jj] = c[2 * jj + 1] > m ? c[2 * jj + 1] : m;
            }
        }
}

/* Samples [b0, b1) by the direct convolution. */
static void direct_samples(const job *j, unsigned char *base, int b0, int b1)
{
    const geom *g = j->g;
    uint8_t *xq = base;
    uint32_t *x4 = (uint32_t *)(base + up((size_t)g->C * g->planeq, 64));
    float *out = (float *)((unsigned char *)x4 + up((size_t)g->C * g->plane4 * 4, 64));
    float *scale = (float *)((unsigned char *)out + up((size_t)g->O * g->npos * sizeof(float), 64));
    cf_qdirect d = {.x4 = x4, .plane = g->plane4, .C = g->C, .KH = g->KH, .G = (g->KW + 3) / 4, .Wp = g->Wp,
                    .O = g->O, .npos = (int)g->npos, .w = j->w->direct, .colsum = j->w->colsum, .scale = scale,
                    .bias = j->bias, .relu = j->relu, .out = out};
    size_t ysize = (size_t)g->O * g->YH * g->YW;
    for (int b = b0; b < b1; b++) {
        float s;
        quantize_planes(j, j->k->x[0] + (size_t)b * g->C * g->H * g->W, xq, x4, &s, &d.zero);
        for (int o = 0; o < g->O; o++) scale[o] = s * j->col_scale[o];   /* as the product's epilogue rounds it */
        j->w->im->direct(&d);
        planes_out(g, out, j->k->y + (size_t)b * ysize);
    }
}

static void chunk_task(void *ctx, int c)
{
    const job *j = ctx;
    const geom *g = j->g;
    const cf_inst *k = j->k;
    unsigned char *base = j->scratch + (size_t)c * chunk_bytes(g);
    size_t lda = rows_lda(g);
    uint8_t *xq = base, *rows = xq + up((size_t)g->Hp * g->Wp * g->C + 16, 64);
    float *ct = (float *)(rows + up(g->Prows * lda, 64)), *rs = (float *)((unsigned char *)ct + up(g->P * g->O * 4, 64));
    int *rz = (int *)(rs + g->Prows);
    unsigned char *last = (unsigned char *)rs + up(g->Prows * (sizeof(float) + sizeof(int)), 64);
    const cf_dconv_impl *tr = cf_dconv_pick();
    cf_gemm_ep ep = {j->bias, j->relu};
    size_t ysize = (size_t)g->O * g->YH * g->YW;
    int b0 = (int)((long)g->B * c / j->nchunk), b1 = (int)((long)g->B * (c + 1) / j->nchunk);
    if (g->direct) {
        direct_samples(j, base, b0, b1);
        return;
    }
    for (int b = b0; b < b1; b++) {
        float s;
        int z;
        quantize_sample(j, k->x[0] + (size_t)b * g->C * g->H * g->W, (float *)last, xq, &s, &z);
        gather_rows(g, xq, rows, lda);
        for (size_t p = 0; p < g->Prows; p++) rs[p] = s, rz[p] = z;
        cf_qgemm_rows(j->w, (int)g->P, rows, (ptrdiff_t)lda, rs, rz, j->col_scale, ct, g->O, &ep, NULL, 0);
        const float *out = ct;
        if (g->pool) {
            pool_rows(g, ct, (float *)last);
            out = (const float *)last;
        }
        tr->transpose(out, g->YH * g->YW, g->O, (size_t)g->O, k->y + (size_t)b * ysize, (size_t)g->YH * g->YW, 0);
    }
}

static int qconv_forward(const cf_inst *k)
{
    const cf_qparam *qp = qparam(k);
    if (!qp || !qp->packed)
        return cf_seterr("error: the model's parameters were trained after this executor was bound, which dropped "
                         "its quantization: bind it again");
    geom g;
    geom_of(&g, k, qp->packed);
    unsigned flags = (unsigned)k->node->attr.i[7];
    const cf_qweights *w = qp->packed;
    unsigned char *ws = (unsigned char *)(((uintptr_t)k->ws + 63) & ~(uintptr_t)63);
    float *col_scale = (float *)ws, *bias = (float *)(ws + up((size_t)g.O * 4, 64));
    const float *b = flags & HAS_BIAS ? k->x[2] : NULL;
    int at = flags & HAS_BIAS ? 3 : 2;
    for (int o = 0; o < g.O; o++) {
        float a = 1, sh = 0;
        if (flags & HAS_BN) {   /* (v - mean) a + beta, a = gamma / sqrt(var + eps) */
            const float *gamma = k->x[at], *beta = k->x[at + 1], *mean = k->x[at + 2], *var = k->x[at + 3];
            a = gamma[o] / sqrtf(var[o] + k->node->attr.f[0]);
            sh = beta[o] - mean[o] * a;
        }
        col_scale[o] = w->scale[o] * a;
        bias[o] = (b ? b[o] * a : 0) + sh;
    }
    job j = {.k = k, .g = &g, .w = w, .qp = qp, .col_scale = col_scale, .bias = bias,
             .scratch = ws + 2 * up((size_t)g.O * 4, 64), .nchunk = chunks(g.B), .relu = (flags & RELU) != 0};
    if (g.B == 1 || cf_threads() == 1) {
        for (int c = 0; c < j.nchunk; c++) chunk_task(&j, c);
    } else {
        cf_parallel_for(j.nchunk, chunk_task, &j);
    }
    return 0;
}

/* As the float ops count them: the convolution's 2 per multiply-add, and 1 per output
   element for each of the bias, the batch norm and relu. */
static void qconv_flops(const cf_node *n, const unsigned char *want, double *fwd, double *bwd)
{
    cf_shape y = n->shape, w = n->in[1]->shape;
    double E = (double)cf_shape_count_b(y, 1), K = (double)w.d[1] * w.d[2] * w.d[3];
    unsigned flags = (unsigned)n->attr.i[7];
    (void)want;
    if (flags & POOL) E *= 4;   /* the convolution's outputs, four a pooled one */
    *fwd = 2 * E * K + E * (((flags & HAS_BIAS) != 0) + ((flags & HAS_BN) != 0) + ((flags & RELU) != 0) +
                            ((flags & POOL) != 0));
    *bwd = 0;
}

const cf_opdef cf_op_qconv2d = {
    .name = "qconv2d", .what = "8-bit convolution", .infer = qconv_infer, .workspace = qconv_workspace,
    .forward = qconv_forward, .nograd = ~0u, .nin = CF_NIN_ANY, .flops = qconv_flops,
};
