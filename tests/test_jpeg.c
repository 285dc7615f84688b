/* test_jpeg.c - JPEG images in (cf_image_read, cf_dataset_load_images), every file
 * made here with cf_jpeg_encode or libjpeg itself: grey, RGB, CMYK (Adobe's YCCK and
 * plain), progressive, arithmetic-coded and with restart markers (the last three give
 * the very pixels of the baseline file: the same coefficients); quality 100 close to
 * the pixels encoded; resizing, and the same floats as a PNG of the same decoded
 * pixels (one conversion and resizing code for both); the exact-size rule. And the
 * hostile files: cut anywhere, a header claiming a huge image, a progressive file of
 * too many scans (the decompression bomb), garbage, 12-bit and lossless, markers that
 * carry nothing, junk after the end; each an error naming its file, fast, with nothing
 * left allocated. Last, two threads reading at once keep their own messages. */
#include <pthread.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include <jpeglib.h>

#include "cflux.h"
#include "data/data.h"
#include "data/image.h"
#include "data/jpeg.h"
#include "data/png.h"
#include "test.h"
#include "tmpdir.h"

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void write_bytes(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (n) fwrite(b, 1, n, f);
    fclose(f);
}

/* The file's bytes (malloc'd) and their count. */
static unsigned char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n + 1);
    if (fread(b, 1, *n, f) != *n) *n = 0;
    fclose(f);
    return b;
}

/* cf_jpeg_encode's file at path; its length. */
static size_t encode(const char *path, const unsigned char *px, int w, int h, int ch, int quality, int progressive)
{
    unsigned char *b = NULL;
    size_t n = 0;
    CHECK(cf_jpeg_encode(px, w, h, ch, quality, progressive, &b, &n) == 0);
    write_bytes(path, b, n);
    free(b);
    return n;
}

/* A JPEG by libjpeg itself, for what cf_jpeg_encode does not choose: arithmetic
 * coding, restart markers, plain CMYK (no Adobe marker, not inverted), a scan script
 * (nscans of scans), 4:4:4. */
typedef struct jopts {
    int arith, restart, plain_cmyk, nscans;
    const jpeg_scan_info *scans;
} jopts;

static void encode_ex(const char *path, const unsigned char *px, int w, int h, int ch, int quality, jopts o)
{
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr err;
    c.err = jpeg_std_error(&err);   /* a failure here exits the test */
    jpeg_create_compress(&c);
    FILE *f = fopen(path, "wb");
    jpeg_stdio_dest(&c, f);
    c.image_width = (JDIMENSION)w;
    c.image_height = (JDIMENSION)h;
    c.input_components = ch;
    c.in_color_space = ch == 1 ? JCS_GRAYSCALE : ch == 3 ? JCS_RGB : JCS_CMYK;
    jpeg_set_defaults(&c);
    if (o.plain_cmyk) {
        jpeg_set_colorspace(&c, JCS_CMYK);
        c.write_Adobe_marker = FALSE;
    }
    jpeg_set_quality(&c, quality, TRUE);
    for (int i = 0; i < c.num_components; i++) c.comp_info[i].h_samp_factor = c.comp_info[i].v_samp_factor = 1;
    c.arith_code = o.arith ? TRUE : FALSE;
    c.restart_interval = (unsigned)o.restart;
    if (o.scans) {
        c.scan_info = o.scans;
        c.num_scans = o.nscans;
    }
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = (JSAMPROW)(px + (size_t)c.next_scanline * w * ch);
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    fclose(f);
}

/* path read as channels x h x w into out (exact or resized); 0 or -1. */
static int read_image(const char *path, int channels, int h, int w, int exact, float *out)
{
    gzFile f = cf_data_gzopen(path);
    if (!f) return -1;
    int rc = cf_image_read(f, path, channels, h, w, exact, out);
    gzclose(f);
    return rc;
}

/* Reading path (as 3 x 16 x 16) fails with a message that starts "error: PATH: " and
 * holds want, and leaves nothing counted. */
static void fails_with(const char *path, const char *want)
{
    static float out[3 * 16 * 16];
    char head[300];
    snprintf(head, sizeof head, "error: %s: ", path);
    CHECK(read_image(path, 3, 16, 16, 0, out) == -1);
    const char *msg = cf_last_error();
    CHECK(strncmp(msg, head, strlen(head)) == 0);
    CHECK_HAS(msg, want);
    CHECK(cf_memory_in_use() == 0);
}

/* A smooth pattern with some edges: what JPEG keeps well. ch bytes a pixel. */
static void pattern(unsigned char *px, int w, int h, int ch, int seed)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < ch; c++) {
                int v = (x * (3 + c) + y * (5 - c) + seed * 17) % 256;
                if ((x / 8 + y / 8 + c) % 5 == 0) v = 255 - v / 4;
                px[((size_t)y * w + x) * ch + c] = (unsigned char)v;
            }
}

/* The largest and the mean difference of the floats from the bytes' (b / 255). */
static void diff(const float *got, const unsigned char *want, size_t n, double *max, double *mean)
{
    *max = *mean = 0;
    for (size_t i = 0; i < n; i++) {
        double d = got[i] - want[i] / 255.0;
        d = d < 0 ? -d : d;
        if (d > *max) *max = d;
        *mean += d / (double)n;
    }
}

/* (h, w, ch) bytes as (ch, h, w) planes */
static void planar(const unsigned char *px, int w, int h, int ch, unsigned char *out)
{
    for (int c = 0; c < ch; c++)
        for (size_t i = 0; i < (size_t)w * h; i++) out[(size_t)c * w * h + i] = px[i * ch + c];
}

/* ---- what is read ---- */

/* Quality 100 (4:4:4): every decoded value within 3 steps (3/255, and float rounding) of the pixel encoded, and
 * the mean within 1/255, for grey and colour, baseline and progressive. */
TEST(quality_100_is_close)
{
    enum { W = 48, H = 40 };
    static unsigned char px[W * H * 3], planes[W * H * 3];
    static float out[3 * W * H];
    for (int ch = 1; ch <= 3; ch += 2)
        for (int prog = 0; prog <= 1; prog++) {
            pattern(px, W, H, ch, 1);
            encode(tmp("q100.jpg"), px, W, H, ch, 100, prog);
            CHECK(read_image(tmp("q100.jpg"), ch, H, W, 1, out) == 0);
            planar(px, W, H, ch, planes);
            double max, mean;
            diff(out, planes, (size_t)ch * W * H, &max, &mean);
            if (max > 3.01 / 255.0 || mean > 1 / 255.0)
                fprintf(stderr, "  %d channels, progressive %d: max %.2f/255, mean %.3f/255\n", ch, prog, max * 255,
                        mean * 255);
            CHECK(max <= 3.01 / 255.0);
            CHECK(mean <= 1 / 255.0);
        }
    CHECK(cf_memory_in_use() == 0);
}

/* Every value a multiple of 1/255: the float (float)b / 255 of some byte b, as the
 * IDX and PNG readers make. */
TEST(values_are_bytes)
{
    enum { W = 20, H = 12 };
    static unsigned char px[W * H * 3];
    static float out[3 * W * H];
    pattern(px, W, H, 3, 2);
    encode(tmp("b.jpg"), px, W, H, 3, 75, 0);
    CHECK(read_image(tmp("b.jpg"), 3, H, W, 1, out) == 0);
    int bytes = 1;
    for (int i = 0; i < 3 * W * H; i++) {
        float v = out[i];
        int b = (int)(v * 255.0f + 0.5f);
        bytes &= b >= 0 && b <= 255 && v == (float)b / 255.0f;
    }
    CHECK(bytes);
}

/* Progressive, arithmetic-coded, restart markers, and all three: the same DCT
 * coefficients, so the very floats of the baseline file. */
TEST(codings_give_the_same_pixels)
{
    enum { W = 37, H = 29 };
    static unsigned char px[W * H * 3];
    static float base[3 * W * H], got[3 * W * H];
    for (int ch = 1; ch <= 3; ch += 2) {
        pattern(px, W, H, ch, 3);
        encode_ex(tmp("base.jpg"), px, W, H, ch, 85, (jopts){0});
        CHECK(read_image(tmp("base.jpg"), 3, 20, 30, 0, base) == 0);
        /* the standard progression, through cf_jpeg_encode and libjpeg */
        static const jopts variants[] = {{1, 0, 0, 0, NULL}, {0, 1, 0, 0, NULL}, {0, 7, 0, 0, NULL}, {1, 2, 0, 0, NULL}};
        for (size_t v = 0; v < sizeof variants / sizeof *variants; v++) {
            encode_ex(tmp("var.jpg"), px, W, H, ch, 85, variants[v]);
            memset(got, 0, sizeof got);
            CHECK(read_image(tmp("var.jpg"), 3, 20, 30, 0, got) == 0);
            CHECK(memcmp(got, base, sizeof got) == 0);
        }
        /* progressive: libjpeg's standard progression, Huffman and arithmetic */
        struct jpeg_compress_struct c;
        struct jpeg_error_mgr err;
        c.err = jpeg_std_error(&err);
        jpeg_create_compress(&c);
        c.input_components = ch;
        c.in_color_space = ch == 1 ? JCS_GRAYSCALE : JCS_RGB;
        jpeg_set_defaults(&c);
        jpeg_simple_progression(&c);
        static jpeg_scan_info scans[16];
        int nscans = c.num_scans;
        memcpy(scans, c.scan_info, (size_t)nscans * sizeof *scans);
        jpeg_destroy_compress(&c);
        for (int arith = 0; arith <= 1; arith++) {
            encode_ex(tmp("prog.jpg"), px, W, H, ch, 85, (jopts){arith, arith * 3, 0, nscans, scans});
            memset(got, 0, sizeof got);
            CHECK(read_image(tmp("prog.jpg"), 3, 20, 30, 0, got) == 0);
            CHECK(memcmp(got, base, sizeof got) == 0);
        }
    }
    CHECK(cf_memory_in_use() == 0);
}

/* CMYK: Adobe's inverted values (as cf_jpeg_encode and Photoshop write them, stored
 * as YCCK) and plain ones (no Adobe marker, 0 no ink), at quality 100: R = c k, G =
 * m k, B = y k of the inverted values, within 4/255, and grey its luma. */
TEST(cmyk)
{
    enum { W = 24, H = 16 };
    static unsigned char px[W * H * 4], plain[W * H * 4], rgb[W * H * 3], planes[3 * W * H];
    static float out[3 * W * H], grey[W * H];
    pattern(px, W, H, 4, 4);
    for (int i = 0; i < W * H; i++) {
        const unsigned char *p = px + 4 * i;
        for (int c = 0; c < 3; c++) rgb[3 * i + c] = (unsigned char)(p[c] * p[3] / 255.0 + 0.5);
        for (int c = 0; c < 4; c++) plain[4 * i + c] = (unsigned char)(255 - p[c]);
    }
    planar(rgb, W, H, 3, planes);
    encode(tmp("cmyk.jpg"), px, W, H, 4, 100, 0);
    encode_ex(tmp("plain.jpg"), plain, W, H, 4, 100, (jopts){.plain_cmyk = 1});
    const char *files[2] = {tmp("cmyk.jpg"), tmp("plain.jpg")};
    for (int k = 0; k < 2; k++) {
        CHECK(read_image(files[k], 3, H, W, 1, out) == 0);
        double max, mean;
        diff(out, planes, 3 * W * H, &max, &mean);
        if (max > 4 / 255.0) fprintf(stderr, "  %s: max %.2f/255\n", files[k], max * 255);
        CHECK(max <= 4 / 255.0);
        CHECK(read_image(files[k], 1, H, W, 1, grey) == 0);
        int luma = 1;
        for (int i = 0; i < W * H; i++) {
            double g = 0.299 * out[i] + 0.587 * out[W * H + i] + 0.114 * out[2 * W * H + i];
            luma &= grey[i] > g - 1e-6 && grey[i] < g + 1e-6;
        }
        CHECK(luma);
    }
    CHECK(cf_memory_in_use() == 0);
}

/* The decoded pixels of a JPEG, as bytes (h, w, 3), from cflux at its own size. */
static void decoded_bytes(const char *path, int w, int h, unsigned char *px)
{
    static float f[3 * 64 * 64];
    CHECK(read_image(path, 3, h, w, 1, f) == 0);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) px[((size_t)y * w + x) * 3 + c] = (unsigned char)(f[(c * h + y) * w + x] * 255.0f + 0.5f);
}

/* A JPEG and a PNG of its decoded pixels give the same floats bit for bit at every
 * size (shrunk, enlarged, mixed, kept) and as grey or colour: the conversion and the
 * resizing are one code. */
TEST(same_floats_as_png)
{
    enum { W = 45, H = 33 };
    static unsigned char px[W * H * 3], dec[W * H * 3];
    static float a[3 * 70 * 70], b[3 * 70 * 70];
    pattern(px, W, H, 3, 5);
    encode(tmp("same.jpg"), px, W, H, 3, 80, 1);
    decoded_bytes(tmp("same.jpg"), W, H, dec);
    CHECK(cf_png_write(tmp("same.png"), dec, W, H, 3) == 0);
    static const int sizes[][2] = {{28, 28}, {H, W}, {70, 66}, {16, 60}, {1, 1}, {33, 45}};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int ch = 1; ch <= 3; ch += 2) {
            int h = sizes[s][0], w = sizes[s][1];
            memset(a, 0, sizeof a);
            memset(b, 0xff, sizeof b);
            CHECK(read_image(tmp("same.jpg"), ch, h, w, 0, a) == 0);
            CHECK(read_image(tmp("same.png"), ch, h, w, 0, b) == 0);
            CHECK(memcmp(a, b, (size_t)ch * h * w * sizeof *a) == 0);
        }
    /* and through the dataset: a JPEG and a PNG side by side */
    const char *paths[2] = {tmp("same.jpg"), tmp("same.png")};
    cf_dataset *d = cf_dataset_load_images(paths, 2, CF_SHAPE(3, 20, 24));
    CHECK(d != NULL);
    if (d) {
        const float *x = cf_dataset_x(d);
        CHECK(memcmp(x, x + 3 * 20 * 24, 3 * 20 * 24 * sizeof *x) == 0);
        CHECK(x[0] > 0);
    }
    cf_dataset_free(d);
    CHECK(cf_memory_in_use() == 0);
}

/* A grey constant stays that constant at any size; a size other than the sample's is
 * an error with exact, naming both sizes and no option of the tool. */
TEST(resize_and_exact)
{
    static unsigned char px[50 * 30];
    static float out[3 * 64 * 64];
    memset(px, 200, sizeof px);
    encode(tmp("flat.jpg"), px, 50, 30, 1, 90, 0);
    CHECK(read_image(tmp("flat.jpg"), 3, 64, 7, 0, out) == 0);
    int flat = 1;
    for (int i = 0; i < 3 * 64 * 7; i++) flat &= out[i] == 200.0f / 255.0f;
    CHECK(flat);
    CHECK(read_image(tmp("flat.jpg"), 1, 30, 50, 1, out) == 0);
    CHECK(read_image(tmp("flat.jpg"), 1, 28, 28, 1, out) == -1);
    CHECK_HAS(cf_last_error(), "flat.jpg: the image is 50x30 pixels, not the 28x28 asked for");
    CHECK(strstr(cf_last_error(), "--") == NULL);
    CHECK(read_image(tmp("flat.jpg"), 1, 50, 30, 1, out) == -1);   /* w and h swapped */
    CHECK_HAS(cf_last_error(), "the image is 50x30 pixels, not the 30x50 asked for");
    /* a PNG alike: the rule is pixels.c's */
    CHECK(cf_png_write(tmp("flat.png"), px, 50, 30, 1) == 0);
    CHECK(read_image(tmp("flat.png"), 3, 30, 50, 1, out) == 0);
    CHECK(out[0] == 200.0f / 255.0f);
    CHECK(read_image(tmp("flat.png"), 3, 28, 28, 1, out) == -1);
    CHECK_HAS(cf_last_error(), "flat.png: the image is 50x30 pixels, not the 28x28 asked for");
    CHECK(cf_memory_in_use() == 0);
}

/* ---- hostile files ---- */

/* The offset of the first marker m (FF m) after SOI, or 0. */
static size_t find_marker(const unsigned char *b, size_t n, unsigned m)
{
    for (size_t i = 2; i + 1 < n; i++)
        if (b[i] == 0xFF && b[i + 1] == m) return i;
    return 0;
}

TEST(truncated_anywhere)
{
    enum { W = 40, H = 24 };
    static unsigned char px[W * H * 3];
    pattern(px, W, H, 3, 6);
    for (int prog = 0; prog <= 1; prog++) {
        encode(tmp("whole.jpg"), px, W, H, 3, 80, prog);
        size_t n;
        unsigned char *b = read_all(tmp("whole.jpg"), &n);
        size_t sos = find_marker(b, n, 0xDA);
        CHECK(sos > 0);
        size_t cuts[] = {3, 4, 10, 30, sos, sos + 5, sos + 20, n / 2, n - 40, n - 3, n - 2, n - 1};
        for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
            write_bytes(tmp("cut.jpg"), b, cuts[i]);
            fails_with(tmp("cut.jpg"), "truncated: the JPEG data ends after");
        }
        free(b);
    }
    /* three bytes: a JPEG cut short, not "not an image" */
    write_bytes(tmp("ffd8ff.jpg"), "\xff\xd8\xff", 3);
    fails_with(tmp("ffd8ff.jpg"), "truncated");
    write_bytes(tmp("ffd8.jpg"), "\xff\xd8", 2);
    fails_with(tmp("ffd8.jpg"), "not a PNG or JPEG image (it looks like a JPEG file cut short)");
}

/* A header claiming a huge image is refused before anything is allocated: under a
 * memory limit of 1 MB, in far under a second. (A JPEG's sides are 16-bit: 65535 is
 * the most a header can claim; libjpeg itself stops at 65500.) */
TEST(huge_header)
{
    static unsigned char px[16 * 16 * 3];
    pattern(px, 16, 16, 3, 7);
    encode(tmp("small.jpg"), px, 16, 16, 3, 80, 0);
    size_t n;
    unsigned char *b = read_all(tmp("small.jpg"), &n);
    size_t sof = find_marker(b, n, 0xC0);
    CHECK(sof > 0);
    static const unsigned sides[][2] = {{60000, 60000}, {65535, 65535}, {20000, 1}, {8193, 8193}};
    CHECK(cf_set_memory_limit((size_t)1 << 20) == 0);
    for (size_t i = 0; i < sizeof sides / sizeof *sides; i++) {
        unsigned w = sides[i][0], h = sides[i][1];
        b[sof + 5] = (unsigned char)(h >> 8), b[sof + 6] = (unsigned char)h;
        b[sof + 7] = (unsigned char)(w >> 8), b[sof + 8] = (unsigned char)w;
        write_bytes(tmp("huge.jpg"), b, n);
        char want[120];
        snprintf(want, sizeof want, "the image is %ux%u pixels; cflux reads images of at most 16384 pixels a side", w, h);
        double t0 = now_s();
        fails_with(tmp("huge.jpg"), want);
        CHECK(now_s() - t0 < TEST_CHEAP_SECONDS);
    }
    CHECK(cf_set_memory_limit(0) == 0);
    free(b);
}

/* A progressive colour script of 1 + 3 (bands) scans: the DC of all components, then
 * for each component bands of single coefficients 1..k and the rest in two bands. */
static int band_script(jpeg_scan_info *s, int singles)
{
    int n = 0;
    s[n++] = (jpeg_scan_info){3, {0, 1, 2, 0}, 0, 0, 0, 0};
    for (int c = 0; c < 3; c++) {
        for (int k = 1; k <= singles; k++) s[n++] = (jpeg_scan_info){1, {c, 0, 0, 0}, k, k, 0, 0};
        int mid = singles + 1 + (63 - singles) / 2;
        s[n++] = (jpeg_scan_info){1, {c, 0, 0, 0}, singles + 1, mid - 1, 0, 0};
        s[n++] = (jpeg_scan_info){1, {c, 0, 0, 0}, mid, 63, 0, 0};
    }
    return n;
}

/* Scans: a valid progression of CF_JPEG_MAX_SCANS scans reads, one of a scan more is
 * refused as it comes (at a size where the scans' cost shows, 1024 x 1024); a file of
 * thousands of scans (a refinement scan repeated: the decompression bomb) is refused
 * at once. */
TEST(scan_bomb)
{
    enum { W = 1024, H = 1024 };
    static unsigned char px[W * H * 3];
    static jpeg_scan_info scans[200];
    static float out[3 * 32 * 32];
    pattern(px, W, H, 3, 8);
    int n100 = band_script(scans, 31);   /* 1 + 3 (31 + 2) */
    CHECK(n100 == CF_JPEG_MAX_SCANS);
    encode_ex(tmp("s100.jpg"), px, W, H, 3, 75, (jopts){0, 0, 0, n100, scans});
    double t0 = now_s();
    CHECK(read_image(tmp("s100.jpg"), 3, 32, 32, 0, out) == 0);
    double t100 = now_s() - t0;
    int n101 = band_script(scans, 32);
    CHECK(n101 == CF_JPEG_MAX_SCANS + 3);
    encode_ex(tmp("s103.jpg"), px, W, H, 3, 75, (jopts){0, 0, 0, n101, scans});
    t0 = now_s();
    fails_with(tmp("s103.jpg"), "a JPEG of more than 100 scans; cflux reads at most 100");
    double t103 = now_s() - t0;
    CHECK(t103 < TEST_CHEAP_SECONDS);
    if (t100 > 1 || t103 > 1) fprintf(stderr, "  100 scans %.2f s, 103 refused in %.2f s\n", t100, t103);

    /* the bomb: a small image's last scan (an AC refinement) 5000 times over */
    static unsigned char small[64 * 64 * 3];
    pattern(small, 64, 64, 3, 9);
    encode(tmp("prog.jpg"), small, 64, 64, 3, 75, 1);
    size_t n;
    unsigned char *b = read_all(tmp("prog.jpg"), &n);
    size_t last = 0;
    for (size_t i = 2; i + 1 < n; i++)
        if (b[i] == 0xFF && b[i + 1] == 0xDA) last = i;
    CHECK(last > 0 && b[n - 2] == 0xFF && b[n - 1] == 0xD9);
    size_t scan = n - 2 - last, copies = 5000;
    unsigned char *bomb = malloc(last + scan * copies + 2);
    memcpy(bomb, b, last);
    for (size_t k = 0; k < copies; k++) memcpy(bomb + last + k * scan, b + last, scan);
    memcpy(bomb + last + scan * copies, "\xff\xd9", 2);
    write_bytes(tmp("bomb.jpg"), bomb, last + scan * copies + 2);
    t0 = now_s();
    fails_with(tmp("bomb.jpg"), "JPEG");
    CHECK(now_s() - t0 < TEST_CHEAP_SECONDS);
    free(bomb);
    free(b);
}

/* Garbage after SOI, a byte changed in the entropy-coded data, 12-bit and lossless
 * (patched frame headers): errors naming the file, never an image. */
TEST(corrupt_and_unsupported)
{
    uint32_t seed = 11;
    static unsigned char junk[3000];
    for (int t = 0; t < 20; t++) {
        junk[0] = 0xFF, junk[1] = 0xD8, junk[2] = 0xFF;
        size_t n = 3 + lcg(&seed) % (sizeof junk - 3);
        for (size_t i = 3; i < n; i++) junk[i] = (unsigned char)lcg(&seed);
        write_bytes(tmp("junk.jpg"), junk, n);
        fails_with(tmp("junk.jpg"), "");   /* the file named, whatever went wrong */
    }
    static unsigned char px[32 * 32 * 3];
    pattern(px, 32, 32, 3, 10);
    encode(tmp("good.jpg"), px, 32, 32, 3, 80, 0);
    size_t n;
    unsigned char *b = read_all(tmp("good.jpg"), &n);
    size_t sof = find_marker(b, n, 0xC0), sos = find_marker(b, n, 0xDA);
    b[sof + 4] = 12;   /* 12-bit samples */
    write_bytes(tmp("12bit.jpg"), b, n);
    fails_with(tmp("12bit.jpg"), "cflux cannot read this JPEG: Unsupported JPEG data precision 12");
    b[sof + 4] = 8;
    b[sof + 1] = 0xC3;   /* lossless */
    write_bytes(tmp("lossless.jpg"), b, n);
    fails_with(tmp("lossless.jpg"), "cflux cannot read this JPEG: Unsupported JPEG process: SOF type 0xc3");
    b[sof + 1] = 0xC0;
    /* the entropy-coded data replaced by a marker early: a premature end of the
     * segment (libjpeg's warning, padded grey in other readers) */
    memcpy(b + sos + 40, "\xff\xd9", 2);
    write_bytes(tmp("early.jpg"), b, sos + 42);
    fails_with(tmp("early.jpg"), "corrupt JPEG data: premature end of data segment");
    free(b);
}

/* A gzip'd file: bytes a, then n zeros, then bytes b, cut 200 compressed bytes
 * before the end (well inside the zeros, when b is short): reading into the cut is an
 * error. */
static void write_cut(const char *path, const unsigned char *a, size_t na, size_t n, const unsigned char *b, size_t nb)
{
    static unsigned char zeros[1 << 20];
    gzFile f = gzopen(path, "wb9");
    gzwrite(f, a, (unsigned)na);
    for (; n > 0; n -= n < sizeof zeros ? n : sizeof zeros) gzwrite(f, zeros, (unsigned)(n < sizeof zeros ? n : sizeof zeros));
    if (nb) gzwrite(f, b, (unsigned)nb);
    gzclose(f);
    size_t m;
    unsigned char *z = read_all(path, &m);
    write_bytes(path, z, m - 200);
    free(z);
}

/* Markers that carry nothing before the image (comments of 64 KB, 20 MB of them,
 * gzip'd) are refused after 16 MB. After the last row, at most CF_IMAGE_TAIL bytes
 * more are read: 1 MB of zeros before the end-of-image marker (libjpeg skips them,
 * looking for it), or after it, in a gzip stream cut short inside them (reading into
 * the cut is an error), leave the image as it is. */
TEST(bytes_read_are_bounded)
{
    static unsigned char px[24 * 24], seg[65537];
    static float want[24 * 24], got[24 * 24];
    pattern(px, 24, 24, 1, 12);
    encode(tmp("g.jpg"), px, 24, 24, 1, 80, 0);
    CHECK(read_image(tmp("g.jpg"), 1, 24, 24, 1, want) == 0);
    size_t n;
    unsigned char *b = read_all(tmp("g.jpg"), &n);
    gzFile f = gzopen(tmp("com.jpg.gz"), "wb1");
    gzwrite(f, b, 2);
    seg[0] = 0xFF, seg[1] = 0xFE, seg[2] = 0xFF, seg[3] = 0xFF;   /* COM of 65535 bytes */
    for (int i = 0; i < 320; i++) gzwrite(f, seg, 65537);
    gzwrite(f, b + 2, (unsigned)(n - 2));
    gzclose(f);
    fails_with(tmp("com.jpg.gz"), "the markers before the image data run past 16 MB");

    CHECK(b[n - 2] == 0xFF && b[n - 1] == 0xD9);
    write_cut(tmp("after.jpg.gz"), b, n, 1 << 20, NULL, 0);
    write_cut(tmp("before.jpg.gz"), b, n - 2, 1 << 20, b + n - 2, 2);
    const char *files[2] = {tmp("after.jpg.gz"), tmp("before.jpg.gz")};
    for (int i = 0; i < 2; i++) {
        memset(got, 0, sizeof got);
        CHECK(read_image(files[i], 1, 24, 24, 1, got) == 0);
        CHECK(memcmp(got, want, sizeof got) == 0);
        /* (the cut is there to be found: reading on finds it) */
        gzFile g = cf_data_gzopen(files[i]);
        static unsigned char sink[1 << 16];
        size_t total = 0;
        long k;
        while ((k = cf_data_read(g, "cut", sink, sizeof sink, &total)) > 0) continue;
        CHECK(k == -1);
        gzclose(g);
    }
    free(b);
}

/* A progressive image's coefficients are counted against the memory limit before
 * libjpeg decodes. */
TEST(memory_is_counted)
{
    static unsigned char px[1000 * 800 * 3];
    static float out[3 * 16 * 16];
    pattern(px, 1000, 800, 3, 13);
    encode(tmp("bigprog.jpg"), px, 1000, 800, 3, 75, 1);   /* 4:2:0: ~1.2 MB of coefficients */
    CHECK(cf_set_memory_limit((size_t)1 << 20) == 0);
    fails_with(tmp("bigprog.jpg"), "decoding the JPEG needs");
    CHECK_HAS(cf_last_error(), "above the memory limit");
    CHECK(cf_set_memory_limit(0) == 0);
    CHECK(read_image(tmp("bigprog.jpg"), 3, 16, 16, 0, out) == 0);
    CHECK(cf_memory_in_use() == 0);
}

/* ---- threads ---- */

typedef struct job {
    const char *path;
    int want_ok, ok;
} job;

static void *reader_thread(void *p)
{
    job *j = p;
    static _Thread_local float out[3 * 16 * 16];
    j->ok = 1;
    for (int i = 0; i < 200; i++) {
        int rc = read_image(j->path, 3, 16, 16, 0, out);
        if (j->want_ok) j->ok &= rc == 0;
        else j->ok &= rc == -1 && strstr(cf_last_error(), j->path) && strstr(cf_last_error(), "truncated");
    }
    return NULL;
}

/* Two threads, one reading a good file and one a cut one, at once: each gets its own
 * result and message. */
TEST(threads)
{
    static unsigned char px[40 * 40 * 3];
    pattern(px, 40, 40, 3, 14);
    size_t n = encode(tmp("t_good.jpg"), px, 40, 40, 3, 80, 1);
    size_t m;
    unsigned char *b = read_all(tmp("t_good.jpg"), &m);
    write_bytes(tmp("t_cut.jpg"), b, n / 2);
    free(b);
    static char good[256], cut[256];
    snprintf(good, sizeof good, "%s", tmp("t_good.jpg"));
    snprintf(cut, sizeof cut, "%s", tmp("t_cut.jpg"));
    job a = {good, 1, 0}, c = {cut, 0, 0};
    pthread_t ta, tc;
    pthread_create(&ta, NULL, reader_thread, &a);
    pthread_create(&tc, NULL, reader_thread, &c);
    pthread_join(ta, NULL);
    pthread_join(tc, NULL);
    CHECK(a.ok);
    CHECK(c.ok);
    CHECK(cf_memory_in_use() == 0);
}

int main(void)
{
    if (tmpdir_make("jpeg")) return 1;
    RUN(quality_100_is_close);
    RUN(values_are_bytes);
    RUN(codings_give_the_same_pixels);
    RUN(cmyk);
    RUN(same_floats_as_png);
    RUN(resize_and_exact);
    RUN(truncated_anywhere);
    RUN(huge_header);
    RUN(scan_bomb);
    RUN(corrupt_and_unsupported);
    RUN(bytes_read_are_bounded);
    RUN(memory_is_counted);
    RUN(threads);
    tmpdir_remove();
    return test_summary("jpeg");
}
