/* test_png.c - PNG images in (cf_dataset_load_images) and out (cf_png_encode,
 * cf_png_write): every colour type and bit depth, written here with libpng itself, and
 * their floats (scaling, grey and colour, alpha, 16 bits, palettes, tRNS, interlace);
 * the layouts a sample shape asks for; shrinking and enlarging (exact block means,
 * constants kept, mirror symmetry); every error, naming its file, with nothing left
 * allocated; encoding round trips. And the one that matters for `cflux predict`: the
 * first Fashion-MNIST test images as PNG files predict bit for bit as the IDX file
 * does, for the MLP and the CNN. */
#include <png.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <zlib.h>

#include "cflux.h"
#include "data/png.h"
#include "test.h"
#include "tmpdir.h"

/* The floats the IDX reader makes of a byte, and a 16-bit value's. */
static float b8(unsigned b) { return (float)b / 255.0f; }
static float b16(unsigned v) { return (float)(v / 65535.0); }

static int channels_of(int color)
{
    switch (color) {
    case PNG_COLOR_TYPE_GRAY_ALPHA: return 2;
    case PNG_COLOR_TYPE_RGB: return 3;
    case PNG_COLOR_TYPE_RGB_ALPHA: return 4;
    default: return 1;   /* grey, palette */
    }
}

/* A PNG written with libpng: w x h pixels of the colour type and bit depth, from v
 * (w * h * channels sample values, palette indices for a palette), with a palette and
 * tRNS (alpha per palette entry, or the transparent colour) when given. 0 or -1. */
static int write_png_ex(const char *path, int w, int h, int color, int depth, int interlace, const uint16_t *v,
                        const png_color *pal, int npal, const png_byte *trns, int ntrns, png_color_16 *trans)
{
    int ch = channels_of(color);
    size_t rowbytes = ((size_t)w * ch * depth + 7) / 8;
    unsigned char *data = calloc((size_t)h, rowbytes);
    png_bytep *rows = malloc((size_t)h * sizeof *rows);
    FILE *f = fopen(path, "wb");
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!data || !rows || !f || !info) {
        fprintf(stderr, "write_png: cannot start %s\n", path);
        exit(1);
    }
    for (int y = 0; y < h; y++) {
        unsigned char *row = rows[y] = data + (size_t)y * rowbytes;
        for (int k = 0; k < w * ch; k++) {
            unsigned s = v[(size_t)y * w * ch + k];
            if (depth == 16) {
                row[2 * k] = (unsigned char)(s >> 8);
                row[2 * k + 1] = (unsigned char)s;
            } else if (depth == 8) {
                row[k] = (unsigned char)s;
            } else {   /* packed, most significant bits first */
                int per = 8 / depth, shift = 8 - depth * (k % per + 1);
                row[k / per] |= (unsigned char)(s << shift);
            }
        }
    }
    int rc = 0;
    if (setjmp(png_jmpbuf(png))) {
        rc = -1;
    } else {
        png_init_io(png, f);
        png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, color,
                     interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                     PNG_FILTER_TYPE_DEFAULT);
        if (pal) png_set_PLTE(png, info, pal, npal);
        if (trns || trans) png_set_tRNS(png, info, trns, ntrns, trans);
        png_write_info(png, info);
        png_write_image(png, rows);
        png_write_end(png, NULL);
    }
    png_destroy_write_struct(&png, &info);
    fclose(f);
    free(rows);
    free(data);
    return rc;
}

static int write_png(const char *path, int w, int h, int color, int depth, int interlace, const uint16_t *v)
{
    return write_png_ex(path, w, h, color, depth, interlace, v, NULL, 0, NULL, 0, NULL);
}

static cf_dataset *load1(const char *path, cf_shape s)
{
    const char *p[1] = {path};
    return cf_dataset_load_images(p, 1, s);
}

/* Load path as shape s and compare its floats with want, bit for bit. */
static int same_floats(const char *path, cf_shape s, const float *want, size_t n)
{
    cf_dataset *d = load1(path, s);
    if (!d) {
        fprintf(stderr, "  %s: %s\n", path, cf_last_error());
        return 0;
    }
    int ok = cf_dataset_count(d) == 1 && cf_shape_count(cf_dataset_sample_shape(d)) == n;
    for (size_t i = 0; ok && i < n; i++)
        if (cf_dataset_x(d)[i] != want[i]) {
            fprintf(stderr, "  %s: value %zu is %.9g, expected %.9g\n", path, i, cf_dataset_x(d)[i], want[i]);
            ok = 0;
        }
    cf_dataset_free(d);
    return ok;
}

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* ---- values ---- */

TEST(grey8)
{
    uint16_t v[256];
    float want[256];
    for (int i = 0; i < 256; i++) v[i] = (uint16_t)i, want[i] = b8((unsigned)i);
    CHECK(write_png(tmp("g8.png"), 16, 16, PNG_COLOR_TYPE_GRAY, 8, 0, v) == 0);
    CHECK(same_floats(tmp("g8.png"), CF_SHAPE(16, 16), want, 256));
    CHECK(same_floats(tmp("g8.png"), CF_SHAPE(1, 16, 16), want, 256));
    CHECK(same_floats(tmp("g8.png"), CF_SHAPE(256), want, 256));
    CHECK(same_floats(tmp("g8.png"), CF_SHAPE(CF_BATCH, 256), want, 256));
    CHECK(same_floats(tmp("g8.png"), CF_SHAPE(CF_BATCH, 1, 16, 16), want, 256));
    cf_dataset *d = load1(tmp("g8.png"), CF_SHAPE(CF_BATCH, 1, 16, 16));
    CHECK(d != NULL);
    if (d) {
        cf_shape s = cf_dataset_sample_shape(d);
        CHECK(s.rank == 3 && s.d[0] == 1 && s.d[1] == 16 && s.d[2] == 16);
        CHECK(cf_dataset_target_size(d) == 1 && cf_dataset_y(d)[0] == 0 && cf_dataset_classes(d) == 0);
        CHECK(strcmp(cf_dataset_name(d), tmp("g8.png")) == 0);
    }
    cf_dataset_free(d);
    CHECK(cf_memory_in_use() == 0);
}

TEST(grey_low_bits)
{
    for (int depth = 1; depth <= 4; depth *= 2) {
        int max = (1 << depth) - 1, w = 7, h = 3;   /* 7: rows end inside a byte */
        uint16_t v[21];
        float want[21];
        for (int i = 0; i < w * h; i++) {
            v[i] = (uint16_t)((i * 5 + 1) % (max + 1));
            want[i] = b8((unsigned)(v[i] * 255 / max));
        }
        char name[32];
        snprintf(name, sizeof name, "g%d.png", depth);
        CHECK(write_png(tmp(name), w, h, PNG_COLOR_TYPE_GRAY, depth, 0, v) == 0);
        CHECK(same_floats(tmp(name), CF_SHAPE(3, 7), want, 21));
        CHECK(want[0] == b8((unsigned)(1 * 255 / max)));
    }
}

TEST(grey16)
{
    /* 257 b for every byte b, then a few others */
    uint16_t v[272];
    float want[272];
    for (int i = 0; i < 256; i++) v[i] = (uint16_t)(257 * i);
    uint16_t more[16] = {1, 2, 255, 256, 1000, 12345, 32767, 32768, 40000, 50000, 65000, 65533, 65534, 65535, 0, 7};
    memcpy(v + 256, more, sizeof more);
    for (int i = 0; i < 272; i++) want[i] = b16(v[i]);
    for (int i = 0; i < 256; i++) CHECK(want[i] == b8((unsigned)i));   /* 16 bits scale as 8 bits do */
    CHECK(want[257] == (float)(2 / 65535.0) && want[269] == 1.0f && want[270] == 0.0f);
    CHECK(write_png(tmp("g16.png"), 16, 17, PNG_COLOR_TYPE_GRAY, 16, 0, v) == 0);
    CHECK(same_floats(tmp("g16.png"), CF_SHAPE(17, 16), want, 272));
}

TEST(colour_to_grey)
{
    uint16_t v[3 * 8] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255, 77, 77, 77, 0, 0, 0, 10, 200, 30, 3, 250, 128};
    float want[8];
    for (int i = 0; i < 8; i++)
        want[i] = (float)(0.299 * b8(v[3 * i]) + 0.587 * b8(v[3 * i + 1]) + 0.114 * b8(v[3 * i + 2]));
    CHECK(write_png(tmp("rgb.png"), 4, 2, PNG_COLOR_TYPE_RGB, 8, 0, v) == 0);
    CHECK(same_floats(tmp("rgb.png"), CF_SHAPE(2, 4), want, 8));
    /* BT.601 weights, and a grey pixel in colour is exactly its grey */
    CHECK_NEAR(want[0], 0.299, 1e-7);
    CHECK_NEAR(want[1], 0.587, 1e-7);
    CHECK_NEAR(want[2], 0.114, 1e-7);
    CHECK(want[3] == 1.0f && want[4] == b8(77) && want[5] == 0.0f);
    /* every grey level given as RGB equals the same level given as grey */
    uint16_t rgb[3 * 256];
    float grey[256];
    for (int i = 0; i < 256; i++) rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = (uint16_t)i, grey[i] = b8((unsigned)i);
    CHECK(write_png(tmp("rgbgrey.png"), 16, 16, PNG_COLOR_TYPE_RGB, 8, 0, rgb) == 0);
    CHECK(same_floats(tmp("rgbgrey.png"), CF_SHAPE(16, 16), grey, 256));
}

TEST(colour_planes)
{
    /* 3 x 2 RGB pixels become three planes, R then G then B */
    uint16_t v[18];
    float want[18];
    for (int i = 0; i < 18; i++) v[i] = (uint16_t)(i * 14 + 3);
    for (int c = 0; c < 3; c++)
        for (int p = 0; p < 6; p++) want[c * 6 + p] = b8(v[3 * p + c]);
    CHECK(write_png(tmp("planes.png"), 3, 2, PNG_COLOR_TYPE_RGB, 8, 0, v) == 0);
    CHECK(same_floats(tmp("planes.png"), CF_SHAPE(3, 2, 3), want, 18));
    /* a square one through a flat input of 3 S S */
    uint16_t sq[3 * 9];
    float wsq[27];
    for (int i = 0; i < 27; i++) sq[i] = (uint16_t)(255 - i * 9);
    for (int c = 0; c < 3; c++)
        for (int p = 0; p < 9; p++) wsq[c * 9 + p] = b8(sq[3 * p + c]);
    CHECK(write_png(tmp("sq.png"), 3, 3, PNG_COLOR_TYPE_RGB, 8, 0, sq) == 0);
    CHECK(same_floats(tmp("sq.png"), CF_SHAPE(27), wsq, 27));
    /* grey to colour: the grey in each plane */
    uint16_t g[6] = {0, 1, 128, 200, 254, 255};
    float wg[18];
    for (int c = 0; c < 3; c++)
        for (int p = 0; p < 6; p++) wg[c * 6 + p] = b8(g[p]);
    CHECK(write_png(tmp("g2c.png"), 3, 2, PNG_COLOR_TYPE_GRAY, 8, 0, g) == 0);
    CHECK(same_floats(tmp("g2c.png"), CF_SHAPE(3, 2, 3), wg, 18));
    /* 16-bit RGB */
    uint16_t v16[6] = {0, 65535, 30000, 257, 514, 65534};
    float w16[6] = {b16(0), b16(257), b16(65535), b16(514), b16(30000), b16(65534)};
    CHECK(write_png(tmp("rgb16.png"), 2, 1, PNG_COLOR_TYPE_RGB, 16, 0, v16) == 0);
    CHECK(same_floats(tmp("rgb16.png"), CF_SHAPE(3, 1, 2), w16, 6));
}

TEST(alpha_over_black)
{
    /* grey + alpha */
    uint16_t ga[2 * 6] = {200, 255, 200, 0, 200, 128, 255, 51, 0, 255, 99, 1};
    float want[6];
    for (int i = 0; i < 6; i++) want[i] = (float)((double)b8(ga[2 * i]) * b8(ga[2 * i + 1]));
    CHECK(want[0] == b8(200) && want[1] == 0 && want[3] == b8(51) && want[4] == 0);
    CHECK(write_png(tmp("ga.png"), 3, 2, PNG_COLOR_TYPE_GRAY_ALPHA, 8, 0, ga) == 0);
    CHECK(same_floats(tmp("ga.png"), CF_SHAPE(2, 3), want, 6));
    /* RGBA, as colour and as grey */
    uint16_t rgba[4 * 3] = {255, 0, 0, 255, 10, 20, 30, 0, 100, 150, 200, 170};
    float wc[9], wg[3];
    for (int p = 0; p < 3; p++) {
        double a = b8(rgba[4 * p + 3]);
        for (int c = 0; c < 3; c++) wc[c * 3 + p] = (float)(b8(rgba[4 * p + c]) * a);
        wg[p] = (float)((0.299 * b8(rgba[4 * p]) + 0.587 * b8(rgba[4 * p + 1]) + 0.114 * b8(rgba[4 * p + 2])) * a);
    }
    CHECK(wc[0] == 1.0f && wc[1] == 0 && wc[4] == 0);
    CHECK(write_png(tmp("rgba.png"), 3, 1, PNG_COLOR_TYPE_RGB_ALPHA, 8, 0, rgba) == 0);
    CHECK(same_floats(tmp("rgba.png"), CF_SHAPE(3, 1, 3), wc, 9));
    CHECK(same_floats(tmp("rgba.png"), CF_SHAPE(1, 3), wg, 3));
    /* 16-bit RGBA and grey + alpha */
    uint16_t rgba16[8] = {65535, 1000, 0, 65535, 40000, 40000, 40000, 32768};
    float w16[6];
    for (int p = 0; p < 2; p++)
        for (int c = 0; c < 3; c++) w16[c * 2 + p] = (float)((double)b16(rgba16[4 * p + c]) * b16(rgba16[4 * p + 3]));
    CHECK(w16[0] == 1.0f && w16[2] == b16(1000));
    CHECK(write_png(tmp("rgba16.png"), 2, 1, PNG_COLOR_TYPE_RGB_ALPHA, 16, 0, rgba16) == 0);
    CHECK(same_floats(tmp("rgba16.png"), CF_SHAPE(3, 1, 2), w16, 6));
    uint16_t ga16[4] = {65535, 0, 12345, 65535};
    float wga16[2] = {0, b16(12345)};
    CHECK(write_png(tmp("ga16.png"), 2, 1, PNG_COLOR_TYPE_GRAY_ALPHA, 16, 0, ga16) == 0);
    CHECK(same_floats(tmp("ga16.png"), CF_SHAPE(1, 2), wga16, 2));
}

TEST(palettes)
{
    png_color pal[16];
    png_byte alpha[3] = {255, 0, 102};
    for (int i = 0; i < 16; i++) pal[i] = (png_color){(png_byte)(i * 16), (png_byte)(255 - i * 9), (png_byte)(i * i)};
    for (int depth = 1; depth <= 8; depth *= 2) {
        int n = depth == 8 ? 16 : 1 << depth, w = 5, h = 3;
        uint16_t v[15];
        float want[45];
        for (int i = 0; i < w * h; i++) v[i] = (uint16_t)((i * 3 + 2) % n);
        int ntrns = n < 3 ? n : 3;
        for (int p = 0; p < w * h; p++) {
            png_color c = pal[v[p]];
            double a = v[p] < ntrns ? b8(alpha[v[p]]) : 1;
            want[p] = (float)(b8(c.red) * a);
            want[15 + p] = (float)(b8(c.green) * a);
            want[30 + p] = (float)(b8(c.blue) * a);
        }
        char name[32];
        snprintf(name, sizeof name, "pal%d.png", depth);
        CHECK(write_png_ex(tmp(name), w, h, PNG_COLOR_TYPE_PALETTE, depth, 0, v, pal, n, alpha, ntrns, NULL) == 0);
        CHECK(same_floats(tmp(name), CF_SHAPE(3, 3, 5), want, 45));
    }
    /* without tRNS: the palette's colours as they are */
    uint16_t v[4] = {0, 5, 15, 9};
    float want[4];
    for (int p = 0; p < 4; p++)
        want[p] = (float)(0.299 * b8(pal[v[p]].red) + 0.587 * b8(pal[v[p]].green) + 0.114 * b8(pal[v[p]].blue));
    CHECK(write_png_ex(tmp("pal4.png"), 2, 2, PNG_COLOR_TYPE_PALETTE, 4, 0, v, pal, 16, NULL, 0, NULL) == 0);
    CHECK(same_floats(tmp("pal4.png"), CF_SHAPE(2, 2), want, 4));
}

TEST(trns_colour_key)
{
    /* grey and RGB with one transparent value: that value becomes black */
    uint16_t g[4] = {7, 8, 7, 255};
    float wg[4] = {0, b8(8), 0, 1};
    png_color_16 key = {0};
    key.gray = 7;
    CHECK(write_png_ex(tmp("gkey.png"), 4, 1, PNG_COLOR_TYPE_GRAY, 8, 0, g, NULL, 0, NULL, 0, &key) == 0);
    CHECK(same_floats(tmp("gkey.png"), CF_SHAPE(1, 4), wg, 4));
    uint16_t rgb[6] = {10, 20, 30, 10, 20, 31};
    float wr[6] = {0, b8(10), 0, b8(20), 0, b8(31)};
    png_color_16 rkey = {0};
    rkey.red = 10;
    rkey.green = 20;
    rkey.blue = 30;
    CHECK(write_png_ex(tmp("rkey.png"), 2, 1, PNG_COLOR_TYPE_RGB, 8, 0, rgb, NULL, 0, NULL, 0, &rkey) == 0);
    CHECK(same_floats(tmp("rkey.png"), CF_SHAPE(3, 1, 2), wr, 6));
    /* a 16-bit grey key */
    uint16_t g16[3] = {4660, 4661, 65535};
    float w16[3] = {0, b16(4661), 1};
    png_color_16 key16 = {0};
    key16.gray = 4660;
    CHECK(write_png_ex(tmp("g16key.png"), 3, 1, PNG_COLOR_TYPE_GRAY, 16, 0, g16, NULL, 0, NULL, 0, &key16) == 0);
    CHECK(same_floats(tmp("g16key.png"), CF_SHAPE(1, 3), w16, 3));
}

/* An interlaced image reads as the same image not interlaced, at every size and kind. */
TEST(interlaced)
{
    static const int sizes[][2] = {{1, 1}, {2, 3}, {13, 11}, {8, 8}, {9, 17}};
    static const int kinds[][2] = {{PNG_COLOR_TYPE_RGB, 8}, {PNG_COLOR_TYPE_GRAY, 16}, {PNG_COLOR_TYPE_GRAY, 2},
                                   {PNG_COLOR_TYPE_RGB_ALPHA, 16}};
    uint32_t seed = 5;
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
            int w = sizes[s][0], h = sizes[s][1], color = kinds[k][0], depth = kinds[k][1];
            size_t n = (size_t)w * h * channels_of(color);
            uint16_t *v = malloc(n * sizeof *v);
            for (size_t i = 0; i < n; i++) v[i] = (uint16_t)(lcg(&seed) & ((1u << depth) - 1));
            CHECK(write_png(tmp("plain.png"), w, h, color, depth, 0, v) == 0);
            CHECK(write_png(tmp("adam7.png"), w, h, color, depth, 1, v) == 0);
            for (int c = 1; c <= 3; c += 2) {
                cf_dataset *a = load1(tmp("plain.png"), CF_SHAPE(c, h, w)), *b = load1(tmp("adam7.png"), CF_SHAPE(c, h, w));
                CHECK(a && b);
                if (a && b) CHECK(memcmp(cf_dataset_x(a), cf_dataset_x(b), (size_t)c * w * h * sizeof(float)) == 0);
                cf_dataset_free(a);
                cf_dataset_free(b);
            }
            free(v);
        }
    CHECK(cf_memory_in_use() == 0);
}

/* ---- resizing ---- */

/* x of path loaded as shape s (c planes of h x w) into out; 0 or -1. */
static int load_into(const char *path, cf_shape s, float *out)
{
    cf_dataset *d = load1(path, s);
    if (!d) {
        fprintf(stderr, "  %s\n", cf_last_error());
        return -1;
    }
    memcpy(out, cf_dataset_x(d), cf_shape_count(s) * sizeof *out);
    cf_dataset_free(d);
    return 0;
}

TEST(shrink_blocks)
{
    /* 56 x 56 of 2 x 2 blocks: exactly the blocks' values at 28 x 28 */
    static uint16_t v[56 * 56], rgb[3 * 56 * 56];
    static float want[28 * 28], wrgb[3 * 28 * 28], got[3 * 28 * 28];
    for (int y = 0; y < 56; y++)
        for (int x = 0; x < 56; x++) {
            int b = ((y / 2) * 28 + x / 2) * 37 % 256;
            v[y * 56 + x] = (uint16_t)b;
            for (int c = 0; c < 3; c++) rgb[3 * (y * 56 + x) + c] = (uint16_t)((b + 85 * c) % 256);
        }
    for (int i = 0; i < 28 * 28; i++) {
        int y = i / 28, x = i % 28;
        want[i] = b8(v[2 * y * 56 + 2 * x]);
        for (int c = 0; c < 3; c++) wrgb[c * 784 + i] = b8(rgb[3 * (2 * y * 56 + 2 * x) + c]);
    }
    CHECK(write_png(tmp("blocks.png"), 56, 56, PNG_COLOR_TYPE_GRAY, 8, 0, v) == 0);
    CHECK(same_floats(tmp("blocks.png"), CF_SHAPE(784), want, 784));
    CHECK(write_png(tmp("blocks3.png"), 56, 56, PNG_COLOR_TYPE_RGB, 8, 0, rgb) == 0);
    CHECK(same_floats(tmp("blocks3.png"), CF_SHAPE(3, 28, 28), wrgb, 3 * 784));
    /* the same at 14 x 14: means of 2 x 2 blocks of 2 x 2 blocks */
    CHECK(load_into(tmp("blocks.png"), CF_SHAPE(14, 14), got) == 0);
    for (int i = 0; i < 14 * 14; i++) {
        int y = i / 14, x = i % 14;
        double m = ((double)want[(2 * y) * 28 + 2 * x] + want[(2 * y) * 28 + 2 * x + 1] + want[(2 * y + 1) * 28 + 2 * x] +
                    want[(2 * y + 1) * 28 + 2 * x + 1]) / 4;
        CHECK_NEAR(got[i], m, 1e-7);
    }
}

TEST(shrink_weights)
{
    /* 3 to 2: (2a + b) / 3 and (b + 2c) / 3 */
    uint16_t v[3] = {30, 90, 255};
    float got[2];
    CHECK(write_png(tmp("three.png"), 3, 1, PNG_COLOR_TYPE_GRAY, 8, 0, v) == 0);
    CHECK(load_into(tmp("three.png"), CF_SHAPE(1, 2), got) == 0);
    CHECK_NEAR(got[0], (2.0 * b8(30) + b8(90)) / 3, 1e-7);
    CHECK_NEAR(got[1], (b8(90) + 2.0 * b8(255)) / 3, 1e-7);
    /* 5 to 2: output 0 covers pixels 0, 1 and half of 2 */
    uint16_t f[5] = {0, 51, 102, 153, 204};
    CHECK(write_png(tmp("five.png"), 1, 5, PNG_COLOR_TYPE_GRAY, 8, 0, f) == 0);
    CHECK(load_into(tmp("five.png"), CF_SHAPE(2, 1), got) == 0);
    CHECK_NEAR(got[0], (b8(0) + b8(51) + 0.5 * b8(102)) / 2.5, 1e-7);
    CHECK_NEAR(got[1], (0.5 * b8(102) + b8(153) + b8(204)) / 2.5, 1e-7);
    /* a constant stays exactly constant, whatever the ratios */
    static uint16_t c[100 * 37];
    static float out[28 * 28];
    for (int i = 0; i < 100 * 37; i++) c[i] = 173;
    CHECK(write_png(tmp("const.png"), 37, 100, PNG_COLOR_TYPE_GRAY, 8, 0, c) == 0);
    CHECK(load_into(tmp("const.png"), CF_SHAPE(28, 28), out) == 0);
    int same = 1;
    for (int i = 0; i < 28 * 28; i++) same &= out[i] == b8(173);
    CHECK(same);
}

TEST(enlarge)
{
    /* a constant stays exactly constant */
    uint16_t c[9] = {99, 99, 99, 99, 99, 99, 99, 99, 99};
    static float out[3 * 10 * 10];
    CHECK(write_png(tmp("c3.png"), 3, 3, PNG_COLOR_TYPE_GRAY, 8, 0, c) == 0);
    CHECK(load_into(tmp("c3.png"), CF_SHAPE(3, 10, 10), out) == 0);
    int same = 1;
    for (int i = 0; i < 300; i++) same &= out[i] == b8(99);
    CHECK(same);
    /* 2 to 4, pixel centres: 0, 1/4, 3/4, 1 of the way */
    uint16_t two[2] = {0, 255};
    CHECK(write_png(tmp("two.png"), 2, 1, PNG_COLOR_TYPE_GRAY, 8, 0, two) == 0);
    CHECK(load_into(tmp("two.png"), CF_SHAPE(1, 4), out) == 0);
    CHECK(out[0] == 0 && out[1] == 0.25f && out[2] == 0.75f && out[3] == 1);
    /* 1 pixel to many: all the same */
    uint16_t one[1] = {201};
    CHECK(write_png(tmp("one.png"), 1, 1, PNG_COLOR_TYPE_GRAY, 8, 0, one) == 0);
    CHECK(load_into(tmp("one.png"), CF_SHAPE(5, 7), out) == 0);
    same = 1;
    for (int i = 0; i < 35; i++) same &= out[i] == b8(201);
    CHECK(same);
}

/* Mirroring an image mirrors the result, bit for bit: enlarging, shrinking, both. */
TEST(resize_symmetric)
{
    static const int cases[][4] = {{5, 4, 11, 9}, {9, 7, 5, 4}, {6, 13, 10, 3}, {4, 4, 4, 4}, {17, 3, 28, 28}};
    uint32_t seed = 11;
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        int w = cases[k][0], h = cases[k][1], W = cases[k][2], H = cases[k][3];
        uint16_t *v = malloc(sizeof *v * w * h), *mx = malloc(sizeof *v * w * h), *my = malloc(sizeof *v * w * h);
        float *a = malloc(sizeof *a * W * H), *bx = malloc(sizeof *a * W * H), *by = malloc(sizeof *a * W * H);
        for (int i = 0; i < w * h; i++) v[i] = (uint16_t)(lcg(&seed) % 256);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                mx[y * w + x] = v[y * w + (w - 1 - x)];
                my[y * w + x] = v[(h - 1 - y) * w + x];
            }
        CHECK(write_png(tmp("s.png"), w, h, PNG_COLOR_TYPE_GRAY, 8, 0, v) == 0);
        CHECK(write_png(tmp("sx.png"), w, h, PNG_COLOR_TYPE_GRAY, 8, 0, mx) == 0);
        CHECK(write_png(tmp("sy.png"), w, h, PNG_COLOR_TYPE_GRAY, 8, 0, my) == 0);
        CHECK(load_into(tmp("s.png"), CF_SHAPE(H, W), a) == 0);
        CHECK(load_into(tmp("sx.png"), CF_SHAPE(H, W), bx) == 0);
        CHECK(load_into(tmp("sy.png"), CF_SHAPE(H, W), by) == 0);
        int okx = 1, oky = 1;
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                okx &= a[y * W + x] == bx[y * W + (W - 1 - x)];
                oky &= a[y * W + x] == by[(H - 1 - y) * W + x];
            }
        CHECK(okx && oky);
        if (!okx || !oky) fprintf(stderr, "  %dx%d to %dx%d\n", w, h, W, H);
        free(v), free(mx), free(my), free(a), free(bx), free(by);
    }
}

/* ---- shapes and errors ---- */

TEST(shapes_refused)
{
    uint16_t v[4] = {0};
    CHECK(write_png(tmp("s4.png"), 2, 2, PNG_COLOR_TYPE_GRAY, 8, 0, v) == 0);
    const char *p[2] = {tmp("s4.png"), NULL};
    static const cf_shape bad[] = {{1, {10}}, {1, {CF_BATCH}}, {2, {CF_BATCH, 10}}, {0, {0}}, {4, {1, 1, 2, 2}},
                                   {2, {0, 5}}, {3, {1, -3, 4}}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK(cf_dataset_load_images(p, 1, bad[i]) == NULL);
        CHECK_HAS(cf_last_error(), "error: the model's input, ");
        CHECK_HAS(cf_last_error(), "does not say an image size");
    }
    CHECK(cf_dataset_load_images(p, 1, CF_SHAPE(CF_BATCH, 4, 28, 28)) == NULL);
    CHECK_HAS(cf_last_error(), "error: the model's input, (B, 4, 28, 28), has 4 channels; images have 1 (grey) or 3");
    CHECK(cf_dataset_load_images(p, 1, CF_SHAPE(1, 20000, 2)) == NULL);
    CHECK_HAS(cf_last_error(), "at most 16384 pixels a side");
    CHECK(cf_dataset_load_images(NULL, 1, CF_SHAPE(2, 2)) == NULL);
    CHECK_HAS(cf_last_error(), "error: cf_dataset_load_images: no images");
    CHECK(cf_dataset_load_images(p, 0, CF_SHAPE(2, 2)) == NULL);
    CHECK_HAS(cf_last_error(), "error: cf_dataset_load_images: no images");
    CHECK(cf_dataset_load_images(p, 2, CF_SHAPE(2, 2)) == NULL);
    CHECK_HAS(cf_last_error(), "error: cf_dataset_load_images: path 1 of 2 is NULL");
    CHECK(cf_memory_in_use() == 0);
}

static void write_bytes(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (n) fwrite(b, 1, n, f);
    fclose(f);
}

static unsigned char *read_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    static unsigned char buf[1 << 16];
    *n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    return buf;
}

/* Append a chunk (length, type, data, CRC) at out; the bytes written. */
static size_t chunk(unsigned char *out, const char *type, const unsigned char *data, uint32_t len)
{
    out[0] = (unsigned char)(len >> 24), out[1] = (unsigned char)(len >> 16);
    out[2] = (unsigned char)(len >> 8), out[3] = (unsigned char)len;
    memcpy(out + 4, type, 4);
    if (len) memcpy(out + 8, data, len);
    uint32_t crc = (uint32_t)crc32(0, out + 4, 4 + len);
    out[8 + len] = (unsigned char)(crc >> 24), out[9 + len] = (unsigned char)(crc >> 16);
    out[10 + len] = (unsigned char)(crc >> 8), out[11 + len] = (unsigned char)crc;
    return 12 + len;
}

/* A PNG whose header says w x h (8-bit grey), with a token IDAT: its size is all
 * that is read before it is refused. */
static size_t claim_png(unsigned char *out, uint32_t w, uint32_t h)
{
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    unsigned char ihdr[13] = {(unsigned char)(w >> 24), (unsigned char)(w >> 16), (unsigned char)(w >> 8), (unsigned char)w,
                              (unsigned char)(h >> 24), (unsigned char)(h >> 16), (unsigned char)(h >> 8), (unsigned char)h,
                              8, 0, 0, 0, 0};
    unsigned char idat[2] = {0x78, 0x9c};
    memcpy(out, sig, 8);
    size_t k = 8;
    k += chunk(out + k, "IHDR", ihdr, 13);
    k += chunk(out + k, "IDAT", idat, 2);
    k += chunk(out + k, "IEND", NULL, 0);
    return k;
}

/* Loading path (as 28 x 28 grey) fails with a message that starts "error: PATH: "
 * and holds want, and leaves nothing counted. */
static void fails_with(const char *path, const char *want)
{
    char head[300];
    snprintf(head, sizeof head, "error: %s: ", path);
    CHECK(load1(path, CF_SHAPE(28, 28)) == NULL);
    const char *msg = cf_last_error();
    CHECK(strncmp(msg, head, strlen(head)) == 0);
    CHECK_HAS(msg, want);
    CHECK(cf_memory_in_use() == 0);
}

TEST(errors_name_the_file)
{
    fails_with(tmp("missing.png"), "cannot open: No such file or directory");
    mkdir(tmp("dir.png"), 0700);
    fails_with(tmp("dir.png"), "cannot open: it is a directory");
    write_bytes(tmp("empty.png"), "", 0);
    fails_with(tmp("empty.png"), "not a PNG or JPEG image (it is empty)");
    write_bytes(tmp("jpeg.png"), "\xff\xd8\xff\xe0\0\x10JFIF\0", 11);
    fails_with(tmp("jpeg.png"), "truncated: the JPEG data ends after 11 bytes");   /* read as the JPEG it is */
    write_bytes(tmp("gif.png"), "GIF89a\1\0\1\0", 10);
    fails_with(tmp("gif.png"), "(it looks like a GIF image)");
    write_bytes(tmp("csv.png"), "1,2,3\n4,5,6\n", 12);
    fails_with(tmp("csv.png"), "not a PNG or JPEG image (it looks like text)");
    write_bytes(tmp("idx.png"), "\0\0\x08\x03\0\0\0\x01\0\0\0\x1c\0\0\0\x1c", 16);
    fails_with(tmp("idx.png"), "(it looks like an IDX file)");
    write_bytes(tmp("bin.png"), "\x01\x02\x03\x04\x05\x06\x07\x08\x09", 9);
    fails_with(tmp("bin.png"), "not a PNG or JPEG image (it starts with 01 02 03 04");
    write_bytes(tmp("short.png"), "\x89PNG", 4);
    fails_with(tmp("short.png"), "(it looks like a PNG file cut short)");
    write_bytes(tmp("crlf.png"), "\x89PNG\r\r\n\x1a\n", 9);
    fails_with(tmp("crlf.png"), "line ends were changed");

    /* a real PNG, cut anywhere, or with a byte changed */
    uint16_t v[40 * 30];
    uint32_t seed = 3;
    for (int i = 0; i < 40 * 30; i++) v[i] = (uint16_t)(lcg(&seed) % 256);
    CHECK(write_png(tmp("good.png"), 40, 30, PNG_COLOR_TYPE_GRAY, 8, 0, v) == 0);
    size_t n;
    unsigned char *b = read_bytes(tmp("good.png"), &n), copy[1 << 16];
    CHECK(n > 100 && n < sizeof copy);
    memcpy(copy, b, n);
    size_t cuts[] = {12, 20, 33, 40, n / 2, n - 13, n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
        write_bytes(tmp("cut.png"), copy, cuts[i]);
        fails_with(tmp("cut.png"), "truncated: the PNG data ends after");
    }
    unsigned char bad[1 << 16];
    memcpy(bad, copy, n);
    bad[n / 2] ^= 0x40;   /* inside IDAT: its CRC no longer holds */
    write_bytes(tmp("crc.png"), bad, n);
    fails_with(tmp("crc.png"), "corrupt PNG data: ");
    memcpy(bad, copy, n);
    bad[16] = 0x7f;   /* the width's first byte: IHDR's CRC no longer holds */
    write_bytes(tmp("ihdr.png"), bad, n);
    fails_with(tmp("ihdr.png"), "corrupt PNG data: ");
    /* an IDAT of garbage with a good CRC */
    size_t k = 8 + 25;   /* signature, IHDR */
    unsigned char junk[64];
    memset(junk, 0xA5, sizeof junk);
    memcpy(bad, copy, k);
    k += chunk(bad + k, "IDAT", junk, sizeof junk);
    k += chunk(bad + k, "IEND", NULL, 0);
    write_bytes(tmp("junk.png"), bad, k);
    fails_with(tmp("junk.png"), "corrupt PNG data: ");

    /* too large, refused from the header */
    unsigned char claim[128];
    write_bytes(tmp("wide.png"), claim, claim_png(claim, 20000, 1));
    fails_with(tmp("wide.png"), "the image is 20000x1 pixels; cflux reads images of at most 16384 pixels a side");
    write_bytes(tmp("big.png"), claim, claim_png(claim, 8193, 8193));
    fails_with(tmp("big.png"), "the image is 8193x8193 pixels");
    write_bytes(tmp("huge.png"), claim, claim_png(claim, 0x7fffffff, 0x7fffffff));
    fails_with(tmp("huge.png"), "the image is 2147483647x2147483647 pixels");
    write_bytes(tmp("zero.png"), claim, claim_png(claim, 0, 5));
    fails_with(tmp("zero.png"), "corrupt PNG data: ");

    /* out of memory: under a small limit, an interlaced image (all its rows held) */
    static uint16_t big[1200 * 1000];
    CHECK(write_png(tmp("adam7big.png"), 1200, 1000, PNG_COLOR_TYPE_GRAY, 8, 1, big) == 0);
    CHECK(cf_set_memory_limit((size_t)1 << 20) == 0);
    fails_with(tmp("adam7big.png"), "above the memory limit");
    CHECK(cf_set_memory_limit(0) == 0);
    cf_dataset *d = load1(tmp("adam7big.png"), CF_SHAPE(28, 28));
    CHECK(d != NULL);   /* and without the limit it reads */
    cf_dataset_free(d);

    /* a bad file among good ones: NULL, naming it */
    const char *p[3] = {tmp("good.png"), tmp("crc.png"), tmp("good.png")};
    CHECK(cf_dataset_load_images(p, 3, CF_SHAPE(28, 28)) == NULL);
    char head[300];
    snprintf(head, sizeof head, "error: %s: corrupt PNG data", tmp("crc.png"));
    CHECK_HAS(cf_last_error(), head);
    CHECK(cf_memory_in_use() == 0);
}

/* A gzip'd PNG reads as the PNG (the data readers all open files through zlib). */
TEST(gzipped)
{
    uint16_t v[6] = {0, 50, 100, 150, 200, 250};
    float want[6];
    for (int i = 0; i < 6; i++) want[i] = b8(v[i]);
    CHECK(write_png(tmp("z.png"), 3, 2, PNG_COLOR_TYPE_GRAY, 8, 0, v) == 0);
    size_t n;
    unsigned char *b = read_bytes(tmp("z.png"), &n);
    gzFile f = gzopen(tmp("z.png.gz"), "wb");
    gzwrite(f, b, (unsigned)n);
    gzclose(f);
    CHECK(same_floats(tmp("z.png.gz"), CF_SHAPE(2, 3), want, 6));
}

/* ---- what a file costs ---- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A PNG file as its parts: everything before the first IDAT, and the image data
 * inflated (the filtered rows). */
typedef struct png_parts {
    unsigned char head[256];
    size_t nhead;
    unsigned char *raw;   /* malloc'd */
    uLongf nraw;
} png_parts;

static int split_png(const char *path, png_parts *p)
{
    size_t n, k = 8, nz = 0;
    unsigned char *b = read_bytes(path, &n), z[1 << 16];
    p->nhead = 0;
    while (k + 12 <= n) {
        uint32_t len = (uint32_t)b[k] << 24 | (uint32_t)b[k + 1] << 16 | (uint32_t)b[k + 2] << 8 | b[k + 3];
        if (!memcmp(b + k + 4, "IDAT", 4)) {
            if (!p->nhead) p->nhead = k;
            memcpy(z + nz, b + k + 8, len);
            nz += len;
        }
        k += 12 + len;
    }
    memcpy(p->head, b, p->nhead);
    p->nraw = 1 << 20;
    p->raw = malloc(p->nraw);
    return p->nhead && p->nhead <= sizeof p->head && uncompress(p->raw, &p->nraw, z, nz) == Z_OK ? 0 : -1;
}

/* Deflate n bytes as blocks that stand alone (a full flush after them), into out. */
static size_t deflate_alone(z_stream *z, const unsigned char *in, size_t n, unsigned char *out, size_t cap, int flush)
{
    z->next_in = (unsigned char *)in;
    z->avail_in = (uInt)n;
    z->next_out = out;
    z->avail_out = (uInt)cap;
    deflate(z, flush);
    return cap - z->avail_out;
}

static void put32(unsigned char *o, uint32_t v)
{
    o[0] = (unsigned char)(v >> 24), o[1] = (unsigned char)(v >> 16), o[2] = (unsigned char)(v >> 8);
    o[3] = (unsigned char)v;
}

/* The image of `from` again at path, its rows followed in the compressed data by
 * extra_mb MB of zeros (about 1 KB of the file for each: a deflate bomb after the last
 * row), all of it one valid zlib stream in one IDAT. gzip'd when gz. */
static void write_bomb(const char *from, const char *path, int extra_mb, int gz)
{
    png_parts p;
    CHECK(split_png(from, &p) == 0);
    static unsigned char zeros[1 << 20], blk[1 << 16];
    z_stream z;
    memset(&z, 0, sizeof z);
    deflateInit2(&z, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY);
    size_t cap = p.nraw + 1024 + (size_t)extra_mb * 1100 + 64, k = 0;
    unsigned char *d = malloc(cap);
    d[k++] = 0x78, d[k++] = 0xDA;
    k += deflate_alone(&z, p.raw, p.nraw, d + k, cap - k, Z_FULL_FLUSH);
    size_t nb = deflate_alone(&z, zeros, sizeof zeros, blk, sizeof blk, Z_FULL_FLUSH);
    uLong adler = adler32(adler32(0, NULL, 0), p.raw, (uInt)p.nraw), az = adler32(adler32(0, NULL, 0), zeros, sizeof zeros);
    for (int i = 0; i < extra_mb; i++, k += nb) {   /* the same bytes: each block stands alone */
        memcpy(d + k, blk, nb);
        adler = adler32_combine(adler, az, sizeof zeros);
    }
    k += deflate_alone(&z, NULL, 0, d + k, cap - k, Z_FINISH);
    deflateEnd(&z);
    put32(d + k, (uint32_t)adler);
    k += 4;
    unsigned char *file = malloc(p.nhead + k + 64);
    memcpy(file, p.head, p.nhead);
    size_t n = p.nhead + chunk(file + p.nhead, "IDAT", d, (uint32_t)k);
    n += chunk(file + n, "IEND", NULL, 0);
    if (gz) {
        gzFile f = gzopen(path, "wb9");
        gzwrite(f, file, (unsigned)n);
        gzclose(f);
    } else {
        write_bytes(path, file, n);
    }
    free(file);
    free(d);
    free(p.raw);
}

/* Load path as shape s; its floats into out (n); the seconds it took into *secs. */
static int timed_load(const char *path, cf_shape s, float *out, size_t n, double *secs)
{
    double t0 = now_s();
    cf_dataset *d = load1(path, s);
    *secs = now_s() - t0;
    if (!d) fprintf(stderr, "  %s: %s\n", path, cf_last_error());
    if (d) memcpy(out, cf_dataset_x(d), n * sizeof *out);
    cf_dataset_free(d);
    return d ? 0 : -1;
}

/* Data after the last row is never inflated: 4 GB of zeros compressed into 4 MB after
 * the rows (or 4 KB, gzip'd: the file is read through zlib), plain and interlaced,
 * give the image as it is, in far under 2 s (before, 9 to 10 s each, all of it
 * inflated). */
TEST(data_after_the_last_row_costs_nothing)
{
    static const int kinds[][5] = {/* w, h, colour, depth, interlaced */
                                   {28, 28, PNG_COLOR_TYPE_GRAY, 8, 0}, {13, 11, PNG_COLOR_TYPE_RGB, 8, 1},
                                   {9, 17, PNG_COLOR_TYPE_GRAY, 16, 1},  {1, 1, PNG_COLOR_TYPE_GRAY, 8, 1},
                                   {5, 2, PNG_COLOR_TYPE_RGB_ALPHA, 8, 1}};
    static uint16_t v[3 * 28 * 28 * 4];
    static float want[3 * 28 * 28], got[3 * 28 * 28];
    uint32_t seed = 5;
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        int w = kinds[k][0], h = kinds[k][1], c = kinds[k][2], depth = kinds[k][3];
        for (int i = 0; i < w * h * channels_of(c); i++) v[i] = (uint16_t)(lcg(&seed) % (depth == 16 ? 65536 : 256));
        CHECK(write_png(tmp("rows.png"), w, h, c, depth, kinds[k][4], v) == 0);
        int ch = c == PNG_COLOR_TYPE_GRAY ? 1 : 3;
        cf_shape s = CF_SHAPE(ch, 28, 28);
        size_t n = (size_t)ch * 28 * 28;
        double secs;
        CHECK(timed_load(tmp("rows.png"), s, want, n, &secs) == 0);
        for (int gz = 0; gz <= 1; gz++) {
            const char *path = tmp(gz ? "bomb.png.gz" : "bomb.png");
            write_bomb(tmp("rows.png"), path, 4096, gz);
            memset(got, 0, sizeof got);
            CHECK(timed_load(path, s, got, n, &secs) == 0);
            CHECK(memcmp(got, want, n * sizeof *got) == 0);
            if (secs >= TEST_CHEAP_SECONDS) fprintf(stderr, "  %dx%d %s: %.2f s\n", w, h, gz ? "gzip'd" : "plain", secs);
            CHECK(secs < TEST_CHEAP_SECONDS);
        }
    }
    /* a little extra is still read to its end, the checksums checked */
    CHECK(write_png(tmp("rows.png"), 28, 28, PNG_COLOR_TYPE_GRAY, 8, 0, v) == 0);
    write_bomb(tmp("rows.png"), tmp("small.png"), 1, 0);
    size_t n;
    unsigned char *b = read_bytes(tmp("small.png"), &n), bad[1 << 16];
    memcpy(bad, b, n);
    bad[n - 13] ^= 1;   /* the IDAT's CRC */
    write_bytes(tmp("small.png"), bad, n);
    fails_with(tmp("small.png"), "corrupt PNG data: ");
    CHECK(cf_memory_in_use() == 0);
}

/* A file of n empty IDAT chunks, then the image's data (as one IDAT), gzip'd; or a
 * private chunk of n zeros before the image data. */
static void write_padded(const char *from, const char *path, size_t n, int empty_idats)
{
    png_parts p;
    CHECK(split_png(from, &p) == 0);
    gzFile f = gzopen(path, "wb9");
    gzwrite(f, p.head, (unsigned)p.nhead);
    unsigned char c[64];
    if (empty_idats) {
        size_t len = chunk(c, "IDAT", NULL, 0);
        for (size_t i = 0; i < n; i++) gzwrite(f, c, (unsigned)len);
    } else {
        static unsigned char zeros[1 << 20];
        put32(c, (uint32_t)n);
        memcpy(c + 4, "prIv", 4);
        gzwrite(f, c, 8);
        uLong crc = crc32(0, (const unsigned char *)"prIv", 4);
        for (size_t i = 0; i < n; i += sizeof zeros) {
            size_t m = n - i < sizeof zeros ? n - i : sizeof zeros;
            gzwrite(f, zeros, (unsigned)m);
            crc = crc32(crc, zeros, (uInt)m);
        }
        put32(c, (uint32_t)crc);
        gzwrite(f, c, 4);
    }
    static unsigned char z[1 << 17];
    uLongf nz = sizeof z;
    compress2(z, &nz, p.raw, p.nraw, 9);
    static unsigned char idat[1 << 17];
    size_t len = chunk(idat, "IDAT", z, (uint32_t)nz);
    len += chunk(idat + len, "IEND", NULL, 0);
    gzwrite(f, idat, (unsigned)len);
    gzclose(f);
    free(p.raw);
}

/* Chunks that carry nothing cost no more than CF_IMAGE_SLACK bytes before they are
 * refused: 2 million empty IDATs (24 MB, 0.1 MB gzip'd), or 64 MB in a chunk before
 * the image data (before, both were read whole and the image taken). A file that
 * keeps under the limits reads. */
TEST(chunks_that_carry_nothing_are_refused)
{
    static uint16_t v[28 * 28];
    for (int i = 0; i < 28 * 28; i++) v[i] = (uint16_t)(i % 251);
    CHECK(write_png(tmp("rows.png"), 28, 28, PNG_COLOR_TYPE_GRAY, 8, 0, v) == 0);
    static float out[28 * 28];
    double secs;
    write_padded(tmp("rows.png"), tmp("empty-idats.png"), (size_t)2 << 20, 1);
    double t0 = now_s();
    fails_with(tmp("empty-idats.png"), "bytes of image data and the last row not reached: a 28x28 image needs far "
                                       "fewer (compressed blocks or chunks that carry nothing?)");
    CHECK(now_s() - t0 < TEST_CHEAP_SECONDS);
    write_padded(tmp("rows.png"), tmp("big-chunk.png"), (size_t)64 << 20, 0);
    t0 = now_s();
    fails_with(tmp("big-chunk.png"), "the chunks before the image data run past 16 MB, more than cflux reads");
    CHECK(now_s() - t0 < TEST_CHEAP_SECONDS);
    /* under the limits */
    write_padded(tmp("rows.png"), tmp("some-idats.png"), 1000, 1);
    CHECK(timed_load(tmp("some-idats.png"), CF_SHAPE(28, 28), out, 28 * 28, &secs) == 0);
    write_padded(tmp("rows.png"), tmp("some-chunk.png"), (size_t)8 << 20, 0);
    CHECK(timed_load(tmp("some-chunk.png"), CF_SHAPE(28, 28), out, 28 * 28, &secs) == 0);
    CHECK(cf_memory_in_use() == 0);
}

/* ---- out ---- */

/* Decode a PNG in memory with libpng's simplified API, as 8-bit grey or RGB. */
static int decode_simple(const unsigned char *png, size_t len, int channels, unsigned char *out, int *w, int *h)
{
    png_image im;
    memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&im, png, len)) return -1;
    *w = (int)im.width;
    *h = (int)im.height;
    im.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
    int ok = png_image_finish_read(&im, NULL, out, 0, NULL);
    png_image_free(&im);
    return ok ? 0 : -1;
}

TEST(encode_round_trip)
{
    uint32_t seed = 9;
    static const int sizes[][3] = {{37, 23, 1}, {19, 31, 3}, {1, 1, 1}, {1, 1, 3}, {300, 2, 3}};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        int w = sizes[s][0], h = sizes[s][1], c = sizes[s][2];
        size_t n = (size_t)w * h * c;
        unsigned char *px = malloc(n), *back = malloc(n);
        float *want = malloc(n * sizeof *want);
        for (size_t i = 0; i < n; i++) px[i] = (unsigned char)lcg(&seed);
        for (int ch = 0; ch < c; ch++)
            for (int p = 0; p < w * h; p++) want[(size_t)ch * w * h + p] = b8(px[(size_t)p * c + ch]);
        unsigned char *png = NULL, *png2 = NULL;
        size_t len = 0, len2 = 0;
        CHECK(cf_png_encode(px, w, h, c, &png, &len) == 0);
        CHECK(png && len > 8 && memcmp(png, "\x89PNG\r\n\x1a\n", 8) == 0);
        CHECK(cf_png_encode(px, w, h, c, &png2, &len2) == 0);
        CHECK(len2 == len && png2 && memcmp(png, png2, len) == 0);   /* the same bytes each time */
        int dw = 0, dh = 0;
        CHECK(decode_simple(png, len, c, back, &dw, &dh) == 0 && dw == w && dh == h && memcmp(back, px, n) == 0);
        write_bytes(tmp("enc.png"), png, len);
        CHECK(same_floats(tmp("enc.png"), CF_SHAPE(c, h, w), want, n));
        CHECK(cf_png_write(tmp("wr.png"), px, w, h, c) == 0);
        size_t wn;
        unsigned char *wb = read_bytes(tmp("wr.png"), &wn);
        CHECK(wn == len && memcmp(wb, png, len) == 0);
        free(png), free(png2), free(px), free(back), free(want);
    }
    /* refused */
    unsigned char px[12] = {0}, *out = (unsigned char *)1;
    size_t len = 1;
    CHECK(cf_png_encode(px, 2, 2, 2, &out, &len) == -1 && out == NULL && len == 0);
    CHECK_HAS(cf_last_error(), "error: cf_png_encode: the pixels have neither 1 nor 3 channels");
    CHECK(cf_png_encode(NULL, 2, 2, 1, &out, &len) == -1);
    CHECK_HAS(cf_last_error(), "error: cf_png_encode: no pixels");
    CHECK(cf_png_encode(px, 0, 2, 1, &out, &len) == -1);
    CHECK_HAS(cf_last_error(), "error: cf_png_encode: an image of 0x2 pixels");
    CHECK(cf_png_encode(px, 20000, 1, 1, &out, &len) == -1);
    CHECK(cf_png_encode(px, 2, 2, 1, NULL, &len) == -1);
    CHECK_HAS(cf_last_error(), "error: cf_png_encode: no place for the result");
    CHECK(cf_png_write(tmp("no-such-dir/x.png"), px, 2, 2, 1) == -1);
    CHECK_HAS(cf_last_error(), "no-such-dir/x.png: cannot write: the directory");
    CHECK(cf_png_write(tmp("bad.png"), px, 2, 2, 4) == -1);
    CHECK_HAS(cf_last_error(), "bad.png: the pixels have neither 1 nor 3 channels");
    struct stat st;
    CHECK(stat(tmp("bad.png"), &st) != 0);   /* nothing written */
    CHECK(cf_png_write(NULL, px, 2, 2, 1) == -1);
    CHECK(cf_memory_in_use() == 0);
}

/* ---- the reason for it all: PNG files predict as the IDX file does ---- */

TEST(png_predicts_as_idx)
{
    const char *path = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
    gzFile f = gzopen(path, "rb");
    CHECK(f != NULL);   /* not skipped when missing: `make test` installs it */
    if (!f) {
        fprintf(stderr, "  %s is missing: make test installs it (apt-get install dataset-fashion-mnist)\n", path);
        return;
    }
    unsigned char head[16], px[3 * 784];
    int got = gzread(f, head, 16) == 16 && gzread(f, px, sizeof px) == (int)sizeof px;
    gzclose(f);
    CHECK(got);
    if (!got) return;
    const char *paths[3] = {tmp("fm0.png"), tmp("fm1.png"), tmp("fm2.png")};
    for (int i = 0; i < 3; i++) CHECK(cf_png_write(paths[i], px + i * 784, 28, 28, 1) == 0);

    cf_dataset *all = cf_dataset_load_inputs(path), *idx = NULL;
    CHECK(all != NULL);
    if (!all) return;
    float zeros[3] = {0};
    idx = cf_dataset_from_arrays(cf_dataset_x(all), cf_dataset_sample_shape(all), zeros, 1, 3);
    cf_dataset_free(all);
    CHECK(idx != NULL);
    if (!idx) return;
    int bytes_ok = 1;   /* the IDX reader's floats are b / 255 */
    for (int i = 0; i < 3 * 784; i++) bytes_ok &= cf_dataset_x(idx)[i] == b8(px[i]);
    CHECK(bytes_ok);

    const char *models[2] = {"models/mlp.flux", "models/cnn.flux"};
    for (int k = 0; k < 2; k++) {
        cf_model *m = cf_model_load(models[k]);
        CHECK(m != NULL);
        if (!m) {
            fprintf(stderr, "  %s\n", cf_last_error());
            continue;
        }
        cf_model_set_seed(m, 42 + (uint64_t)k);
        CHECK(cf_model_init_params(m) == 0);
        cf_dataset *d = cf_dataset_load_images(paths, 3, cf_model_input_shape(m, 0));
        CHECK(d != NULL);
        if (d) {
            cf_shape s = cf_dataset_sample_shape(d);
            CHECK(k == 0 ? s.rank == 1 && s.d[0] == 784 : s.rank == 3 && s.d[0] == 1 && s.d[1] == 28 && s.d[2] == 28);
            CHECK(cf_dataset_count(d) == 3);
            CHECK_HAS(cf_dataset_name(d), "fm0.png and 2 more images");
            CHECK(memcmp(cf_dataset_x(d), cf_dataset_x(idx), 3 * 784 * sizeof(float)) == 0);
            float a[30], b[30];
            memset(a, 0xff, sizeof a);
            memset(b, 0, sizeof b);
            CHECK(cf_predict(m, idx, 3, a) == 0);
            CHECK(cf_predict(m, d, 3, b) == 0);
            CHECK(memcmp(a, b, sizeof a) == 0);
            double sum = 0;
            for (int i = 0; i < 10; i++) sum += b[i];
            CHECK_NEAR(sum, 1, 1e-5);   /* softmax: predictions were made */
        } else {
            fprintf(stderr, "  %s\n", cf_last_error());
        }
        cf_dataset_free(d);
        cf_model_free(m);
    }
    cf_dataset_free(idx);
    CHECK(cf_memory_in_use() == 0);
}

int main(void)
{
    if (tmpdir_make("png")) return 1;
    RUN(grey8);
    RUN(grey_low_bits);
    RUN(grey16);
    RUN(colour_to_grey);
    RUN(colour_planes);
    RUN(alpha_over_black);
    RUN(palettes);
    RUN(trns_colour_key);
    RUN(interlaced);
    RUN(shrink_blocks);
    RUN(shrink_weights);
    RUN(enlarge);
    RUN(resize_symmetric);
    RUN(shapes_refused);
    RUN(errors_name_the_file);
    RUN(gzipped);
    RUN(data_after_the_last_row_costs_nothing);
    RUN(chunks_that_carry_nothing_are_refused);
    RUN(encode_round_trip);
    RUN(png_predicts_as_idx);
    tmpdir_remove();
    return test_summary("png");
}
