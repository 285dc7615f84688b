/* pixels.c - an image's rows into a sample's floats, for every image reader (png.c,
 * jpeg.c), so that the same pixels make the same floats whatever file held them:
 *   - values are scaled as the IDX reader scales images: an 8-bit value b is
 *     (float)b / 255, the very float idx.c makes; a 16-bit value v is v / 65535
 *     rounded once to float (so v = 257 b gives the float of b)
 *   - transparency (an alpha channel) is composited over black: value * alpha
 *   - Adobe's inverted CMYK (c, k the stored values, 0 full ink, as their floats) is
 *     RGB by R = c k, G = m k, B = y k: the ink's complement, darkened by black's
 *     (the naive conversion; no colour profile, as for every other format)
 *   - colour to grey: ITU-R BT.601 luma, 0.299 R + 0.587 G + 0.114 B; grey to
 *     colour: the grey in all three planes
 *   - each axis is resized on its own: kept when it matches; shrunk by area averaging
 *     (an output pixel is the mean of the source area it covers, fractional overlaps
 *     weighted; the weights are exact ratios of whole numbers); enlarged by bilinear
 *     interpolation with pixel centres at i + 0.5, clamped at the edges. The second
 *     half of an axis takes the mirror of the first half's weights, so that a
 *     mirrored image gives the mirrored result bit for bit.
 * Every sample is first its float value; the arithmetic after it (CMYK, luma, alpha,
 * the resizing: rows along x, then columns along y) is in double, rounded to float
 * once at the end. A pixel that needs none of it keeps its float exactly. Rows come
 * one at a time; the rows resized along x wait in a block of (C, source height, W)
 * doubles. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "data/pixels.h"

/* ---- resizing ---- */

static void axis_free(cf_axis *a)
{
    free(a->at);
    free(a->j);
    free(a->w);
    memset(a, 0, sizeof *a);
}

/* The terms of output i (of an axis from n to m) into j and w; their count. */
static int terms(int i, int n, int m, int *j, double *w)
{
    if (n == m) {
        j[0] = i;
        w[0] = 1;
        return 1;
    }
    if (n > m) {
        /* in units of 1/m source pixel: output i covers [i n, (i + 1) n), source
         * pixel s covers [s m, (s + 1) m); the weight is the overlap over n */
        int64_t lo = (int64_t)i * n, hi = lo + n;
        int k = 0;
        for (int64_t s = lo / m; s * m < hi; s++) {
            int64_t a = s * m > lo ? s * m : lo, b = (s + 1) * m < hi ? (s + 1) * m : hi;
            if (b > a) {
                j[k] = (int)s;
                w[k++] = (double)(b - a) / (double)n;
            }
        }
        return k;
    }
    /* enlarging: output i's centre sits at (i + 0.5) n / m - 0.5 = num / den source pixels */
    int64_t num = (int64_t)(2 * i + 1) * n - m, den = 2 * (int64_t)m;
    int64_t s = num <= 0 ? 0 : num / den, rem = num <= 0 ? 0 : num % den;
    if (s >= n - 1) {
        s = n - 1;
        rem = 0;
    }
    j[0] = (int)s;
    w[0] = 1;
    if (rem == 0) return 1;
    double f = (double)rem / (double)den;
    w[0] = 1 - f;
    j[1] = (int)s + 1;
    w[1] = f;
    return 2;
}

/* The terms of every output of an axis from n to m; the second half mirrors the first.
 * 0, or -1 with the message (out of memory). */
static int axis_make(cf_axis *a, int n, int m, const char *name)
{
    size_t cap = (size_t)n + 2 * (size_t)m + 2;
    a->at = malloc(((size_t)m + 1) * sizeof *a->at);
    a->j = malloc(cap * sizeof *a->j);
    a->w = malloc(cap * sizeof *a->w);
    if (!a->at || !a->j || !a->w)
        return cf_seterr("error: %s: out of memory (asking for %zu bytes)", name,
                         ((size_t)m + 1) * sizeof *a->at + cap * (sizeof *a->j + sizeof *a->w));
    int k = 0;
    for (int i = 0; i < m; i++) {
        a->at[i] = k;
        int mi = m - 1 - i;
        if (mi < i) {
            for (int t = a->at[mi]; t < a->at[mi + 1]; t++) {
                a->j[k] = n - 1 - a->j[t];
                a->w[k++] = a->w[t];
            }
        } else {
            k += terms(i, n, m, a->j + k, a->w + k);
        }
    }
    a->at[m] = k;
    return 0;
}

/* ---- the rows ---- */

int cf_pixels_start(cf_pixels *p, const char *name, int channels, int h, int w, float *out, int W, int H,
                    int layout, int bits, int exact)
{
    memset(p, 0, sizeof *p);
    p->name = name;
    p->channels = channels, p->h = h, p->w = w, p->out = out;
    p->layout = layout, p->bits = bits, p->W = W, p->H = H;
    if (exact && (W != w || H != h))
        return cf_seterr("error: %s: the image is %dx%d pixels, not the %dx%d asked for (images of another size are "
                         "not resized here)", name, W, H, w, h);
    size_t line = (size_t)channels * W * sizeof *p->line;
    if (!(p->line = malloc(line))) return cf_seterr("error: %s: out of memory (asking for %zu bytes)", name, line);
    p->same = W == w && H == h;
    if (p->same) return 0;
    char what[300];
    snprintf(what, sizeof what, "%s: the image", name);
    if (!(p->tmp = cf_mem_alloc((size_t)channels * H * w * sizeof *p->tmp, what))) return -1;
    if (axis_make(&p->ax, W, w, name) || axis_make(&p->ay, H, h, name)) return -1;
    return 0;
}

void cf_pixels_free(cf_pixels *p)
{
    cf_mem_free(p->tmp);
    free(p->line);
    axis_free(&p->ax);
    axis_free(&p->ay);
    p->tmp = NULL;
    p->line = NULL;
}

/* A sample's value as a double holding its float: 8 bits b / 255, 16 bits v / 65535. */
static inline double sample(const unsigned char *s, int bits)
{
    if (bits == 8) return (float)s[0] / 255.0f;
    return (float)((double)((unsigned)s[0] << 8 | s[1]) / 65535.0);
}

/* One row of the source's pixels into p->line as the channels wanted. */
static void convert(cf_pixels *p, const unsigned char *row)
{
    int bytes = p->bits / 8, n = p->layout == CF_PIX_CMYK ? 4 : p->layout;
    int colour = p->layout >= CF_PIX_RGB, alpha = p->layout == CF_PIX_GREY_ALPHA || p->layout == CF_PIX_RGBA;
    int width = p->W;
    float *line = p->line;
    if (p->layout == CF_PIX_GREY && p->bits == 8 && p->channels == 1) {   /* the common case: as sample() */
        for (int x = 0; x < width; x++) line[x] = (float)row[x] / 255.0f;
        return;
    }
    for (int x = 0; x < width; x++) {
        const unsigned char *s = row + (size_t)x * (size_t)(n * bytes);
        double v[4] = {0, 0, 0, 0};
        for (int c = 0; c < n; c++) v[c] = sample(s + c * bytes, p->bits);
        double a = alpha ? v[n - 1] : 1;
        if (p->layout == CF_PIX_CMYK)
            for (int c = 0; c < 3; c++) v[c] *= v[3];
        if (p->channels == 1) {
            double g = colour ? 0.299 * v[0] + 0.587 * v[1] + 0.114 * v[2] : v[0];
            line[x] = (float)(g * a);
        } else {
            for (int c = 0; c < 3; c++) line[(size_t)c * width + x] = (float)((colour ? v[c] : v[0]) * a);
        }
    }
}

void cf_pixels_row(cf_pixels *p, int y, const unsigned char *row)
{
    convert(p, row);
    if (p->same) {   /* resizing by 1 is one term of weight 1: the same floats */
        for (int c = 0; c < p->channels; c++)
            memcpy(p->out + ((size_t)c * p->h + y) * p->w, p->line + (size_t)c * p->W, (size_t)p->w * sizeof *p->out);
        return;
    }
    const cf_axis *a = &p->ax;
    int width = p->W;
    for (int c = 0; c < p->channels; c++) {
        const float *src = p->line + (size_t)c * width;
        double *dst = p->tmp + ((size_t)c * p->H + y) * p->w;
        for (int i = 0; i < p->w; i++) {
            double s = 0;
            for (int k = a->at[i]; k < a->at[i + 1]; k++) s += a->w[k] * src[a->j[k]];
            dst[i] = s;
        }
    }
}

void cf_pixels_finish(cf_pixels *p)
{
    if (p->same) return;
    const cf_axis *a = &p->ay;
    size_t w = (size_t)p->w;
    for (int c = 0; c < p->channels; c++) {
        const double *src = p->tmp + (size_t)c * p->H * w;
        float *dst = p->out + (size_t)c * p->h * w;
        for (int i = 0; i < p->h; i++)
            for (size_t x = 0; x < w; x++) {
                double s = 0;
                for (int k = a->at[i]; k < a->at[i + 1]; k++) s += a->w[k] * src[(size_t)a->j[k] * w + x];
                dst[(size_t)i * w + x] = (float)s;
            }
    }
}
