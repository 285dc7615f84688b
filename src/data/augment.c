/* augment.c - random transforms of training images: the spec's parser, each sample's
 * draws from its key alone, and the transforms (see augment.h). */
#include "augment.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/rng.h"

/* Random erasing's box, as torchvision's RandomErasing defaults: a share of the image
 * in [0.02, 0.33], an aspect ratio (height / width) in [0.3, 3.3] drawn uniformly in
 * its logarithm, up to 10 tries for a box that fits; the default probability. */
#define ERASE_AREA_LO 0.02
#define ERASE_AREA_HI 0.33
#define ERASE_RATIO_LO 0.3
#define ERASE_RATIO_HI 3.3
#define ERASE_TRIES 10
#define ERASE_P 0.5f

/* The words of a spec, for the message about one that is none of them. */
#define WORDS "crop:P, flip, erase or erase:P, or none alone"

/* The image's (C, H, W) from a model's input shape, its batch dimension dropped:
 * 0, or -1 when it is not of rank 3. */
static int image_of(cf_shape in, cf_augment *a)
{
    int k = in.rank > 0 && in.d[0] == CF_BATCH;
    if (in.rank - k != 3) return -1;
    a->c = in.d[k], a->h = in.d[k + 1], a->w = in.d[k + 2];
    return a->c > 0 && a->h > 0 && a->w > 0 ? 0 : -1;
}

/* One part of a spec, `len` bytes at p, into a. 0, or -1 with the message. */
static int parse_part(const char *spec, const char *p, size_t len, cf_augment *a, int *none)
{
    char part[64];
    snprintf(part, sizeof part, "%.*s", (int)(len < 60 ? len : 60), p);
    const char *colon = memchr(p, ':', len);
    size_t wlen = colon ? (size_t)(colon - p) : len;
    const char *val = colon ? colon + 1 : NULL;
    int seen;
    if (len == 0) return cf_seterr("error: --augment '%s': an empty part (the transforms are %s)", spec, WORDS);
    if (wlen == 4 && !strncmp(p, "none", 4) && !val) {
        *none = 1;
        return 0;
    }
    if (wlen == 4 && !strncmp(p, "flip", 4)) {
        if (val) return cf_seterr("error: --augment '%s': flip takes no value", part);
        seen = a->flip;
        a->flip = 1;
    } else if (wlen == 4 && !strncmp(p, "crop", 4)) {
        int most = (a->h < a->w ? a->h : a->w) - 1;
        char *end;
        errno = 0;
        long v = val && *val >= '0' && *val <= '9' ? strtol(val, &end, 10) : -1;
        if (v < 1 || v > most || errno || end != p + len)
            return cf_seterr("error: --augment '%s': crop:P pads P pixels on each side, a whole number from 1 to %d "
                             "(less than the images' %d x %d)", part, most, a->h, a->w);
        seen = a->pad > 0;
        a->pad = (int)v;
    } else if (wlen == 5 && !strncmp(p, "erase", 5)) {
        char *end = NULL;
        errno = 0;
        double v = !val ? ERASE_P : (*val >= '0' && *val <= '9') || *val == '.' ? strtod(val, &end) : -1;
        if (!(v > 0 && v <= 1) || errno || (val && end != p + len))
            return cf_seterr("error: --augment '%s': erase:P erases with probability P, a number above 0 and at most 1",
                             part);
        seen = a->erase > 0;
        a->erase = (float)v;
    } else {
        return cf_seterr("error: --augment '%s': '%s' is not a transform (%s)", spec, part, WORDS);
    }
    if (seen) return cf_seterr("error: --augment '%s': %.*s is given twice", spec, (int)wlen, p);
    return 0;
}

int cf_augment_parse(const char *spec, cf_shape input, cf_augment *a)
{
    memset(a, 0, sizeof *a);
    if (!spec || !strcmp(spec, "none")) return 0;   /* any model: it undoes a model file's line */
    int none = 0, parts = 0;
    char s[96];
    if (image_of(input, a))
        return cf_seterr("error: --augment transforms images, and the model's input is %s, not an image (C, H, W)",
                         cf_shape_format(input, s, sizeof s));
    for (const char *p = spec;; parts++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (parse_part(spec, p, len, a, &none)) return -1;
        if (!comma) break;
        p = comma + 1;
    }
    if (none && parts > 0) return cf_seterr("error: --augment '%s': none goes alone", spec);
    return 0;
}

int cf_augment_check(const char *spec, cf_shape input)
{
    cf_augment a;
    return cf_augment_parse(spec, input, &a);
}

const char *cf_augment_format(const cf_augment *a, char *buf, size_t size)
{
    size_t k = 0;
    buf[0] = 0;
    if (a->pad) k += (size_t)snprintf(buf + k, size - k, "crop:%d", a->pad);
    if (a->flip && k < size) k += (size_t)snprintf(buf + k, size - k, "%sflip", k ? "," : "");
    if (a->erase > 0 && k < size) k += (size_t)snprintf(buf + k, size - k, "%serase:%g", k ? "," : "", (double)a->erase);
    if (!k) snprintf(buf, size, "none");
    return buf;
}

uint64_t cf_augment_key(uint64_t seed, int epoch, size_t index)
{
    /* a stream of its own, apart from the shuffle's (which seeds with seed ^ a multiple of the epoch) */
    uint64_t k = cf_rng_mix(seed ^ 0x61756d656e746564ull);
    k = cf_rng_mix(k ^ (uint64_t)(unsigned)epoch * 0xd6e8feb86659fd93ull);
    return cf_rng_mix(k ^ (uint64_t)index * 0x9e3779b97f4a7c15ull);
}

/* A uniform number in [lo, hi). */
static double uniform(cf_rng *r, double lo, double hi) { return lo + (hi - lo) * (double)cf_rng_uniform(r); }

/* Random erasing's box for an h x w image, as torchvision's RandomErasing.get_params
 * (its sides rounded half to even, as Python's round); none (eh 0) when no try fits. */
static void erase_box(cf_rng *r, int h, int w, cf_augment_draws *d)
{
    double area = (double)h * w, lo = log(ERASE_RATIO_LO), hi = log(ERASE_RATIO_HI);
    for (int t = 0; t < ERASE_TRIES; t++) {
        double target = area * uniform(r, ERASE_AREA_LO, ERASE_AREA_HI), ratio = exp(uniform(r, lo, hi));
        int eh = (int)nearbyint(sqrt(target * ratio)), ew = (int)nearbyint(sqrt(target / ratio));
        if (!(eh < h && ew < w)) continue;
        d->ey = (int)cf_rng_below(r, (uint32_t)(h - eh + 1));
        d->ex = (int)cf_rng_below(r, (uint32_t)(w - ew + 1));
        d->eh = eh, d->ew = ew;
        return;
    }
}

void cf_augment_draw(const cf_augment *a, uint64_t key, cf_augment_draws *d)
{
    memset(d, 0, sizeof *d);
    cf_rng r;
    cf_rng_seed(&r, key);
    if (a->pad) {
        d->dy = (int)cf_rng_below(&r, (uint32_t)(2 * a->pad + 1)) - a->pad;
        d->dx = (int)cf_rng_below(&r, (uint32_t)(2 * a->pad + 1)) - a->pad;
    }
    if (a->flip) d->flip = cf_rng_uniform(&r) < 0.5f;
    if (a->erase > 0 && cf_rng_uniform(&r) < a->erase) erase_box(&r, a->h, a->w, d);
}

/* The crop and the flip of one sample x, through scratch: out(y, x) = in(y + dy, x' +
 * dx), x' = w - 1 - x flipped, else x; 0 where that is outside the image (the padding).
 * A row's source lies inside for x in [lo, hi), the same for every row (|dx| < w). */
static void shift_flip(const cf_augment *a, const cf_augment_draws *d, float *x, float *scratch)
{
    int h = a->h, w = a->w, dx = d->dx;
    int lo = d->flip ? dx : -dx, hi = d->flip ? w + dx : w - dx;
    if (lo < 0) lo = 0;
    if (hi > w) hi = w;
    size_t plane = (size_t)h * (size_t)w;
    memcpy(scratch, x, (size_t)a->c * plane * sizeof *x);
    for (int c = 0; c < a->c; c++)
        for (int y = 0; y < h; y++) {
            const float *in = scratch + (size_t)c * plane + (size_t)(y + d->dy) * w;
            float *out = x + (size_t)c * plane + (size_t)y * w;
            if (y + d->dy < 0 || y + d->dy >= h) {
                memset(out, 0, (size_t)w * sizeof *out);
                continue;
            }
            memset(out, 0, (size_t)lo * sizeof *out);
            memset(out + hi, 0, (size_t)(w - hi) * sizeof *out);
            if (!d->flip) memcpy(out + lo, in + lo + dx, (size_t)(hi - lo) * sizeof *out);
            else
                for (int xo = lo; xo < hi; xo++) out[xo] = in[w - 1 - xo + dx];
        }
}

/* The erased box of one sample: 0 in every plane. */
static void erase(const cf_augment *a, const cf_augment_draws *d, float *x)
{
    size_t plane = (size_t)a->h * (size_t)a->w;
    for (int c = 0; c < a->c; c++)
        for (int y = d->ey; y < d->ey + d->eh; y++)
            memset(x + (size_t)c * plane + (size_t)y * a->w + d->ex, 0, (size_t)d->ew * sizeof *x);
}

void cf_augment_apply(const cf_augment *a, int stage, float *x, size_t b, const size_t *idx, uint64_t seed, int epoch,
                      float *scratch)
{
    size_t sample = (size_t)a->c * a->h * a->w;
    for (size_t i = 0; i < b; i++) {
        cf_augment_draws d;
        cf_augment_draw(a, cf_augment_key(seed, epoch, idx[i]), &d);
        float *s = x + i * sample;
        if (stage == CF_AUGMENT_RAW && (d.dy || d.dx || d.flip)) shift_flip(a, &d, s, scratch);
        if (stage == CF_AUGMENT_STANDARDISED && d.eh) erase(a, &d, s);
    }
}
