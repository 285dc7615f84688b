/* png.c - PNG images in (a sample's floats, for prediction on image files) and out
 * (8-bit pixels, for the report page), with libpng.
 *
 * In: any PNG (grey, grey + alpha, RGB, RGBA, palette; 1 to 16 bits; interlaced or
 * not) becomes one sample of C (1 or 3) planes of H x W floats in [0, 1]:
 *   - libpng gives 8 or 16-bit grey, grey + alpha, RGB or RGBA: 1, 2 and 4 bits are
 *     widened to 8 first (libpng's expansion: the largest value becomes 255), a
 *     palette gives its colours, and tRNS becomes an alpha channel
 *   - samples are taken as they are: no gamma or colour-profile correction (gAMA,
 *     iCCP and every other ancillary chunk but tRNS is skipped unread)
 *   - those rows become the sample as pixels.c says for every image format: 8-bit b
 *     is (float)b / 255, 16-bit v is v / 65535; alpha composited over black; BT.601
 *     luma for grey; area averaging or bilinear resizing, each axis on its own.
 * The image streams through a row at a time (all of its rows are held only when it is
 * interlaced).
 *
 * A file costs what its image needs: reading stops once the last row is decoded. What
 * follows it (the end of the compressed stream, its checksums, IEND) is checked when it
 * comes within CF_IMAGE_TAIL bytes; anything after that is not read, as PIL ignores data
 * left in IDAT (compressed bytes past the last row, however many, are never inflated).
 * Up to the last row, the file may hold at most CF_IMAGE_SLACK bytes (the chunks before
 * the image data, among them) plus twice the image's raw size: more, from chunks that
 * carry nothing or an endless run of empty compressed blocks, is refused.
 *
 * Out: 8-bit grey or RGB, not interlaced, default compression, no time stamp. */
#include <png.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/error.h"
#include "core/mem.h"
#include "data/data.h"
#include "data/image.h"
#include "data/pixels.h"
#include "data/png.h"

/* libpng's messages land here: the first member of the reader and the writer. */
#define MSG_MAX 200

static void on_error(png_structp png, png_const_charp msg)
{
    char *to = png_get_error_ptr(png);
    snprintf(to, MSG_MAX, "%s", msg ? msg : "unknown error");
    png_longjmp(png, 1);
}

/* The library prints nothing: warnings (a bad CRC in a skipped chunk) are dropped. */
static void on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

/* libpng says "Out of memory", "out of memory", "Insufficient memory", "zlib memory
 * error", ... */
static int about_memory(const char *msg)
{
    char low[MSG_MAX];
    size_t i = 0;
    for (; msg[i] && i < sizeof low - 1; i++) low[i] = (char)(msg[i] >= 'A' && msg[i] <= 'Z' ? msg[i] + 32 : msg[i]);
    low[i] = 0;
    return strstr(low, "memory") != NULL;
}

/* ---- reading ---- */

enum { WHY_LIBPNG, WHY_SET, WHY_TRUNCATED, WHY_DONE };

typedef struct reader {
    char msg[MSG_MAX];    /* libpng's message; first (see on_error) */
    int why;              /* how it failed: libpng said so (msg), the message is set, truncated;
                             or WHY_DONE: it stopped reading after the last row */
    gzFile f;
    const char *name;
    size_t nread;         /* bytes read so far, for messages */
    size_t limit;         /* bytes that may be read: past it, an error before the last row, the end after */
    size_t data_at;       /* where the image data starts */
    int channels, h, w;   /* the sample's image */
    int exact;            /* an image of another size is an error */
    float *out;           /* (channels, h, w) */
    /* the source image, as libpng gives it */
    int ch, bits, W, H, passes;
    size_t rowbytes;
    long rows_left;       /* rows still to come out of the compressed data */
    int next;             /* the next row (of the last pass) to convert */
    /* owned; freed by cf_png_read whatever happens */
    unsigned char *rows;  /* counted: one row as libpng gives it, or all of them when interlaced */
    cf_pixels px;         /* the rows into out */
} reader;

/* Leave the decoder with the message set. */
static void stop(reader *r, png_structp png)
{
    r->why = WHY_SET;
    png_longjmp(png, 1);
}

/* Past the last row, reading stops after CF_IMAGE_TAIL bytes; before it, after r->limit. */
static void over_limit(reader *r, png_structp png)
{
    if (!r->rows_left) {
        r->why = WHY_DONE;
        png_longjmp(png, 1);
    }
    if (!r->H)
        cf_seterr("error: %s: the chunks before the image data run past %zu MB, more than cflux reads (chunks that "
                  "carry nothing?)", r->name, CF_IMAGE_SLACK >> 20);
    else
        cf_seterr("error: %s: more than %zu bytes of image data and the last row not reached: a %dx%d image needs "
                  "far fewer (compressed blocks or chunks that carry nothing?)", r->name, r->nread - r->data_at, r->W,
                  r->H);
    stop(r, png);
}

static void read_fn(png_structp png, png_bytep out, size_t n)
{
    reader *r = png_get_io_ptr(png);
    if (n > r->limit - r->nread) over_limit(r, png);
    long got = cf_data_read(r->f, r->name, out, n, &r->nread);
    if (got < 0) stop(r, png);
    if ((size_t)got < n) {
        r->why = WHY_TRUNCATED;
        png_longjmp(png, 1);
    }
}

static int not_png(const char *name, const unsigned char *b, long n)
{
    if (n == 0) return cf_seterr("error: %s: not a PNG file (it is empty)", name);
    const char *like = cf_image_looks_like(b, n);
    if (like) return cf_seterr("error: %s: not a PNG file (it looks like %s)", name, like);
    if (n < 8) return cf_seterr("error: %s: not a PNG file (it has only %ld bytes)", name, n);
    return cf_seterr("error: %s: not a PNG file (it starts with %02x %02x %02x %02x, not a PNG signature)", name, b[0],
                     b[1], b[2], b[3]);
}

/* The rows libpng decodes from the compressed data: all of them, or those of the
 * passes of an interlaced image that have pixels (a pass's rows with no columns are
 * not in the data). */
static long data_rows(int W, int H, int interlaced)
{
    if (!interlaced) return H;
    long n = 0;
    for (int p = 0; p < 7; p++)
        if (PNG_PASS_COLS(W, p) > 0) n += PNG_PASS_ROWS(H, p);
    return n;
}

/* libpng calls this on every row it decodes, last of all it does before handing the
 * row over: after the last, reading may go on for CF_IMAGE_TAIL bytes. */
static void on_row(png_structp png, png_row_infop info, png_bytep data)
{
    (void)info;
    (void)data;
    reader *r = png_get_io_ptr(png);
    if (r->rows_left > 0 && --r->rows_left == 0) r->limit = r->nread + CF_IMAGE_TAIL;
}

/* Rows r->next to the last, complete in r->rows, converted; then the columns resized. */
static void finish(reader *r)
{
    for (; r->next < r->H; r->next++)
        cf_pixels_row(&r->px, r->next, r->rows + (r->passes > 1 ? (size_t)r->next * r->rowbytes : 0));
    cf_pixels_finish(&r->px);
}

/* Everything after the signature. On any failure it leaves through png_longjmp, with
 * r->why saying where the message is. */
static void read_image(reader *r, png_structp png, png_infop info)
{
    png_set_read_fn(png, r, read_fn);
    png_set_sig_bytes(png, 8);
    png_set_user_limits(png, 0x7fffffff, 0x7fffffff);   /* the limits are checked below, with a message */
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, NULL, -1);   /* all but IHDR PLTE tRNS IDAT IEND */
    png_read_info(png, info);
    png_uint_32 width, height;
    int depth, color, interlace;
    png_get_IHDR(png, info, &width, &height, &depth, &color, &interlace, NULL, NULL);
    if (width > CF_IMAGE_MAX_SIDE || height > CF_IMAGE_MAX_SIDE || (size_t)width * height > CF_IMAGE_MAX_PIXELS) {
        cf_seterr("error: %s: the image is %lux%lu pixels; cflux reads images of at most %d pixels a side and %zu "
                  "in all", r->name, (unsigned long)width, (unsigned long)height, CF_IMAGE_MAX_SIDE,
                  CF_IMAGE_MAX_PIXELS);
        stop(r, png);
    }
    size_t raw = (png_get_rowbytes(png, info) + 8) * height;   /* with a filter byte a row and pass */
    r->rows_left = data_rows((int)width, (int)height, interlace != PNG_INTERLACE_NONE);
    r->data_at = r->nread;
    r->limit = r->nread + CF_IMAGE_SLACK + 2 * raw;
    png_set_expand(png);   /* palette to RGB, 1 2 4 bits to 8, tRNS to an alpha channel */
    png_set_read_user_transform_fn(png, on_row);
    int passes = png_set_interlace_handling(png);
    png_read_update_info(png, info);
    int ch = png_get_channels(png, info), bits = png_get_bit_depth(png, info);
    size_t rowbytes = png_get_rowbytes(png, info);
    if (ch < 1 || ch > 4 || (bits != 8 && bits != 16) || rowbytes != (size_t)width * ch * (bits / 8)) {
        cf_seterr("error: %s: a PNG of color type %d and bit depth %d came out of libpng as %d channels of %d bits; "
                  "cflux cannot read it", r->name, color, depth, ch, bits);
        stop(r, png);
    }

    int W = (int)width, H = (int)height;
    r->ch = ch, r->bits = bits, r->W = W, r->H = H, r->passes = passes, r->rowbytes = rowbytes;
    char what[300];
    snprintf(what, sizeof what, "%s: the image", r->name);
    size_t nrows = passes > 1 ? (size_t)H : 1;
    if (cf_pixels_start(&r->px, r->name, r->channels, r->h, r->w, r->out, W, H, ch, bits, r->exact)) stop(r, png);
    if (!(r->rows = cf_mem_alloc(nrows * rowbytes, what))) stop(r, png);

    for (int p = 0; p < passes; p++)
        for (int y = 0; y < H; y++) {
            unsigned char *row = r->rows + (passes > 1 ? (size_t)y * rowbytes : 0);
            png_read_row(png, row, NULL);
            if (p < passes - 1) continue;
            cf_pixels_row(&r->px, y, row);
            r->next = y + 1;
        }
    png_read_end(png, NULL);
    finish(r);
}

static int read_failed(reader *r)
{
    switch (r->why) {
    case WHY_SET: return -1;
    case WHY_TRUNCATED:
        return cf_seterr("error: %s: truncated: the PNG data ends after %zu bytes", r->name, r->nread);
    default:
        if (about_memory(r->msg)) return cf_seterr("error: %s: out of memory reading the image (%s)", r->name, r->msg);
        return cf_seterr("error: %s: corrupt PNG data: %s", r->name, r->msg);
    }
}

/* The decoder's objects live here, around the one setjmp. */
static int decode(reader *r)
{
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, r, on_error, on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return cf_seterr("error: %s: out of memory reading the image", r->name);
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        if (r->why != WHY_DONE) return read_failed(r);
        finish(r);   /* it stopped reading after the last row */
        return 0;
    }
    read_image(r, png, info);
    png_destroy_read_struct(&png, &info, NULL);
    return 0;
}

/* The arguments, checked; the message names the entry point. 0 or -1. */
static int check_args(gzFile f, const char *name, const char *fn, int channels, int h, int w, float *out)
{
    if (!f || !out || (channels != 1 && channels != 3) || h < 1 || w < 1 || h > CF_IMAGE_MAX_SIDE ||
        w > CF_IMAGE_MAX_SIDE)
        return cf_seterr("error: %s: %s: no stream, no output, or a sample of %d channels of %dx%d", name, fn, channels,
                         h, w);
    return 0;
}

int cf_png_read_ex(gzFile f, const char *name, const unsigned char *head, long nhead, int channels, int h, int w,
                   int exact, float *out)
{
    if (!name) name = "image";
    if (check_args(f, name, "cf_png_read", channels, h, w, out)) return -1;
    reader r;
    memset(&r, 0, sizeof r);
    r.f = f;
    r.name = name;
    r.channels = channels;
    r.h = h;
    r.w = w;
    r.exact = exact;
    r.out = out;
    r.limit = CF_IMAGE_SLACK;
    r.rows_left = -1;   /* not known before the header */
    unsigned char sig[8];
    long got = nhead < 0 ? 0 : nhead > 8 ? 8 : nhead;
    if (got) memcpy(sig, head, (size_t)got);
    r.nread = (size_t)got;
    if (got < 8) {
        long more = cf_data_read(f, name, sig + got, (size_t)(8 - got), &r.nread);
        if (more < 0) return -1;
        got += more;
    }
    if (got < 8 || png_sig_cmp(sig, 0, 8) != 0) return not_png(name, sig, got);
    int rc = decode(&r);
    cf_mem_free(r.rows);
    cf_pixels_free(&r.px);
    return rc;
}

int cf_png_read(gzFile f, const char *name, int channels, int h, int w, float *out)
{
    return cf_png_read_ex(f, name, NULL, 0, channels, h, w, 0, out);
}

/* ---- the dataset ---- */

static int isqrt(int n)
{
    int s = (int)sqrt((double)n);
    while ((long long)s * s > n) s--;
    while ((long long)(s + 1) * (s + 1) <= n) s++;
    return s;
}

int cf_image_layout(cf_shape s, cf_shape *t, int *c, int *h, int *w)
{
    *t = s;
    if (t->rank > 0 && t->d[0] == CF_BATCH) {
        t->rank--;
        memmove(t->d, t->d + 1, (size_t)t->rank * sizeof *t->d);
    }
    char buf[96];
    int ok = 0;
    *c = 1;
    *h = *w = 0;
    for (int i = 0; i < t->rank; i++)
        if (t->d[i] < 1) t->rank = -1;
    if (t->rank == 3) {
        if (t->d[0] != 1 && t->d[0] != 3)
            return cf_seterr("error: the model's input, %s, has %d channels; images have 1 (grey) or 3 (colour)",
                             cf_shape_format(s, buf, sizeof buf), t->d[0]);
        *c = t->d[0];
        *h = t->d[1];
        *w = t->d[2];
        ok = 1;
    } else if (t->rank == 2) {
        *h = t->d[0];
        *w = t->d[1];
        ok = 1;
    } else if (t->rank == 1) {
        int n = t->d[0], r = isqrt(n), r3 = isqrt(n / 3);
        if (r * r == n) {
            *h = *w = r;
            ok = 1;
        } else if (n % 3 == 0 && 3 * r3 * r3 == n) {
            *c = 3;
            *h = *w = r3;
            ok = 1;
        }
    }
    if (!ok)
        return cf_seterr("error: the model's input, %s, does not say an image size: images go to an input of "
                         "(C, H, W) with C 1 (grey) or 3 (colour), (H, W) (grey), or (N) with N = S*S (grey, S x S) "
                         "or 3*S*S (colour, its planes one after another)", cf_shape_format(s, buf, sizeof buf));
    if (*h > CF_IMAGE_MAX_SIDE || *w > CF_IMAGE_MAX_SIDE)
        return cf_seterr("error: the model's input, %s, takes images of %dx%d; cflux makes images of at most %d "
                         "pixels a side", cf_shape_format(s, buf, sizeof buf), *h, *w, CF_IMAGE_MAX_SIDE);
    return 0;
}

cf_dataset *cf_dataset_load_images(const char *const *paths, int n, cf_shape sample)
{
    if (!paths || n < 1) {
        cf_seterr("error: cf_dataset_load_images: no images (paths is NULL or n is %d)", n);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (!paths[i]) {
            cf_seterr("error: cf_dataset_load_images: path %d of %d is NULL", i, n);
            return NULL;
        }
    cf_shape shape;
    int c, h, w;
    if (cf_image_layout(sample, &shape, &c, &h, &w)) return NULL;
    char name[300];
    if (n == 1) snprintf(name, sizeof name, "%s", paths[0]);
    else snprintf(name, sizeof name, "%s and %d more image%s", paths[0], n - 1, n == 2 ? "" : "s");
    size_t per = (size_t)c * h * w;
    if (per > CF_DATA_MAX_ELEMS / (size_t)n) {
        cf_seterr("error: %s: %d images of %zu values are more than the limit of %zu values", name, n, per,
                  CF_DATA_MAX_ELEMS);
        return NULL;
    }
    char what[340];
    snprintf(what, sizeof what, "%s: the images", name);
    float *x = cf_mem_alloc((size_t)n * per * sizeof *x, what);
    float *y = x ? cf_mem_alloc((size_t)n * sizeof *y, what) : NULL;
    if (!y) {
        cf_mem_free(x);
        return NULL;
    }
    memset(y, 0, (size_t)n * sizeof *y);
    for (int i = 0; i < n; i++) {
        gzFile f = cf_data_gzopen(paths[i]);
        int rc = f ? cf_image_read(f, paths[i], c, h, w, 0, x + (size_t)i * per) : -1;
        if (f) gzclose(f);
        if (rc) {
            cf_mem_free(x);
            cf_mem_free(y);
            return NULL;
        }
    }
    cf_dataset *d = cf_dataset_adopt(x, shape, y, 1, (size_t)n, name);
    if (d) d->classes = 0;
    return d;
}

/* ---- writing ---- */

typedef struct writer {
    char msg[MSG_MAX];    /* libpng's message; first (see on_error) */
    int oom;
    unsigned char *buf;   /* malloc'd */
    size_t len, cap;
} writer;

static void write_fn(png_structp png, png_bytep data, size_t n)
{
    writer *wr = png_get_io_ptr(png);
    if (n > wr->cap - wr->len) {
        size_t cap = wr->cap ? wr->cap : 4096;
        while (cap - wr->len < n) cap *= 2;
        unsigned char *b = realloc(wr->buf, cap);
        if (!b) {
            wr->oom = 1;
            png_longjmp(png, 1);
        }
        wr->buf = b;
        wr->cap = cap;
    }
    memcpy(wr->buf + wr->len, data, n);
    wr->len += n;
}

static void flush_fn(png_structp png) { (void)png; }

/* The pixels, checked, as a PNG in wr->buf. name names the image in messages. 0 or -1. */
static int encode(writer *wr, const char *name, const unsigned char *pixels, int w, int h, int channels)
{
    if (!pixels || (channels != 1 && channels != 3))
        return cf_seterr("error: %s: %s; a PNG is written from 8-bit grey (1 channel) or RGB (3) pixels", name,
                         pixels ? "the pixels have neither 1 nor 3 channels" : "no pixels");
    if (w < 1 || h < 1 || w > CF_IMAGE_MAX_SIDE || h > CF_IMAGE_MAX_SIDE || (size_t)w * h > CF_IMAGE_MAX_PIXELS)
        return cf_seterr("error: %s: an image of %dx%d pixels; cflux writes images of 1 to %d pixels a side and at "
                         "most %zu in all", name, w, h, CF_IMAGE_MAX_SIDE, CF_IMAGE_MAX_PIXELS);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, wr, on_error, on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        return cf_seterr("error: %s: out of memory writing the image", name);
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        if (wr->oom || about_memory(wr->msg)) return cf_seterr("error: %s: out of memory writing the image", name);
        return cf_seterr("error: %s: cannot make the PNG: %s", name, wr->msg);
    }
    png_set_write_fn(png, wr, write_fn, flush_fn);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < h; y++) png_write_row(png, pixels + (size_t)y * w * channels);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return 0;
}

int cf_png_encode(const unsigned char *pixels, int w, int h, int channels, unsigned char **out, size_t *len)
{
    if (out) *out = NULL;
    if (len) *len = 0;
    if (!out || !len) return cf_seterr("error: cf_png_encode: no place for the result");
    writer wr;
    memset(&wr, 0, sizeof wr);
    if (encode(&wr, "cf_png_encode", pixels, w, h, channels)) {
        free(wr.buf);
        return -1;
    }
    *out = wr.buf;
    *len = wr.len;
    return 0;
}

int cf_png_write(const char *path, const unsigned char *pixels, int w, int h, int channels)
{
    if (!path || !*path) return cf_seterr("error: cf_png_write: no path");
    writer wr;
    memset(&wr, 0, sizeof wr);
    int rc = encode(&wr, path, pixels, w, h, channels);
    cf_file *f = rc == 0 ? cf_file_create(path) : NULL;
    if (rc == 0 && !f) rc = -1;
    if (rc == 0) {
        errno = 0;
        if (fwrite(wr.buf, 1, wr.len, cf_file_stream(f)) != wr.len) {
            int e = errno;
            cf_file_abort(f);
            rc = cf_seterr("error: %s: writing failed: %s", path, strerror(e ? e : EIO));
        } else {
            rc = cf_file_commit(f);
        }
    }
    free(wr.buf);
    return rc;
}
