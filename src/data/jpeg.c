/* jpeg.c - JPEG images in (a sample's floats, for prediction and image folders) and
 * out (8-bit pixels, for tests), with libjpeg-turbo.
 *
 * In: baseline, extended, progressive or multi-scan; Huffman or arithmetic coded;
 * with or without restart markers; grey, YCbCr, RGB, CMYK or YCCK (1, 3 or 4
 * components, 8 bits). libjpeg decodes (its accurate integer IDCT, JDCT_ISLOW, and its
 * smooth chroma upsampling, both its defaults; no DCT scaling) to 8-bit grey, RGB or
 * CMYK rows, and each row goes through pixels.c as a PNG's does: b is (float)b / 255,
 * colour to grey by BT.601 luma, the same resizing. CMYK: with an Adobe marker (as
 * Photoshop, and libjpeg itself, write it) the stored values are inverted (0 full
 * ink), and YCCK is turned into them by libjpeg; without one they are plain ink
 * amounts and are inverted here. Then R = c k, G = m k, B = y k of the inverted
 * values (pixels.c). Colour profiles (ICC) and EXIF orientation are not applied.
 *
 * libjpeg never prints or exits: its errors leave through longjmp with its message,
 * and so do its warnings, which mean damaged data (a premature end of a segment, a
 * bad Huffman code, a bogus progression), except the few that change no pixel
 * (extraneous bytes between markers, an unknown JFIF version, a bad ICC chunk). A
 * file that ends early is "truncated": libjpeg's habit of padding it with a fake end
 * of image, a grey picture, never happens.
 *
 * What a file may cost:
 *   - size: the header is checked before anything is allocated (CF_IMAGE_MAX_SIDE
 *     a side and CF_IMAGE_MAX_PIXELS in all), and only 1, 3 or 4 components are read;
 *   - memory: what libjpeg will allocate (a whole image of DCT coefficients for a
 *     progressive or multi-scan file, 128 bytes per block, plus its row buffers) is
 *     reserved from the memory budget (cf_mem) before it decodes, and its memory
 *     manager is capped at that (max_memory_to_use: past it, libjpeg fails with no
 *     backing store) so an estimate that fell short still cannot run away;
 *   - time: a progressive file of more than CF_JPEG_MAX_SCANS scans is refused as it
 *     comes (a progress monitor counts them). Each scan, even of a few bytes, is a pass
 *     over every block of its components: thousands of scans are the known JPEG
 *     decompression bomb. libjpeg's standard progression is 10 scans for colour (6 for
 *     grey), and encoders that tune their scripts (mozjpeg) stay within a few dozen;
 *     100 passes over the largest image cflux reads take seconds, not hours;
 *   - bytes: before the header, at most CF_IMAGE_SLACK (markers, EXIF, thumbnails,
 *     profiles); up to the last row, CF_IMAGE_SLACK plus twice the image's raw size
 *     (width x height x components bytes; a JPEG of noise at quality 100 is about
 *     one); after the last row, CF_IMAGE_TAIL more to reach the end of image, and what
 *     lies further is never read.
 *
 * Out: baseline (or libjpeg's standard progression), deterministic. */
#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>

#include "core/error.h"
#include "core/mem.h"
#include "data/data.h"
#include "data/image.h"
#include "data/jpeg.h"
#include "data/pixels.h"

#define MSG_MAX JMSG_LENGTH_MAX
#define BUF_SIZE 4096

/* ---- reading ---- */

enum { WHY_LIBJPEG, WHY_SET, WHY_TRUNCATED, WHY_DONE };

typedef struct reader {
    struct jpeg_decompress_struct cinfo;
    struct jpeg_error_mgr err;
    struct jpeg_source_mgr src;
    struct jpeg_progress_mgr progress;
    jmp_buf jmp;
    char msg[MSG_MAX];    /* libjpeg's message */
    int code;             /* and its code */
    int why;              /* how it failed: libjpeg said so (msg), the message is set, truncated;
                             or WHY_DONE: it stopped reading after the last row */
    gzFile f;
    const char *name;
    size_t nread;         /* bytes read so far, for messages */
    size_t limit;         /* bytes that may be read: past it, an error before the last row, the end after */
    size_t data_at;       /* where the image data starts (after the header) */
    int channels, h, w, exact;   /* the sample's image */
    float *out;           /* (channels, h, w) */
    int W, H;             /* the source's size, once known */
    int rows_done;        /* every row is out: what follows is read only up to CF_IMAGE_TAIL */
    unsigned char head[8];
    unsigned char buf[BUF_SIZE];
    /* owned; freed by cf_jpeg_read_ex whatever happens */
    unsigned char *row;   /* counted: one row as libjpeg gives it */
    void *reserve;        /* counted, never touched: libjpeg's own memory, reserved from the budget */
    cf_pixels px;
} reader;

static void leave(reader *r, int why)
{
    r->why = why;
    longjmp(r->jmp, 1);
}

static void on_error(j_common_ptr cinfo)
{
    reader *r = cinfo->client_data;
    r->code = cinfo->err->msg_code;
    (*cinfo->err->format_message)(cinfo, r->msg);
    leave(r, WHY_LIBJPEG);
}

/* Warnings that change no pixel; every other is an error. */
static int harmless(int code)
{
    return code == JWRN_EXTRANEOUS_DATA || code == JWRN_JFIF_MAJOR || code == JWRN_BOGUS_ICC;
}

/* Level -1 is a warning; the others are trace messages, never shown. */
static void on_message(j_common_ptr cinfo, int level)
{
    if (level < 0 && !harmless(cinfo->err->msg_code)) on_error(cinfo);
}

static void on_progress(j_common_ptr cinfo)
{
    reader *r = cinfo->client_data;
    if (r->cinfo.input_scan_number > CF_JPEG_MAX_SCANS) {
        cf_seterr("error: %s: a JPEG of more than %d scans; cflux reads at most %d (so many scans are each a pass "
                  "over the whole image: a decompression bomb?)", r->name, CF_JPEG_MAX_SCANS, CF_JPEG_MAX_SCANS);
        leave(r, WHY_SET);
    }
}

static void init_source(j_decompress_ptr cinfo) { (void)cinfo; }
static void term_source(j_decompress_ptr cinfo) { (void)cinfo; }

/* Past the last row, reading stops after CF_IMAGE_TAIL bytes; before it, after r->limit. */
static void over_limit(reader *r)
{
    if (r->rows_done) leave(r, WHY_DONE);
    if (!r->H)
        cf_seterr("error: %s: the markers before the image data run past %zu MB, more than cflux reads (markers "
                  "that carry nothing?)", r->name, CF_IMAGE_SLACK >> 20);
    else
        cf_seterr("error: %s: more than %zu bytes of JPEG data and the last row not reached: a %dx%d image needs "
                  "far fewer", r->name, r->nread - r->data_at, r->W, r->H);
    leave(r, WHY_SET);
}

static boolean fill_input(j_decompress_ptr cinfo)
{
    reader *r = cinfo->client_data;
    if (r->nread >= r->limit) over_limit(r);
    size_t n = r->limit - r->nread < sizeof r->buf ? r->limit - r->nread : sizeof r->buf;
    long got = cf_data_read(r->f, r->name, r->buf, n, &r->nread);
    if (got < 0) leave(r, WHY_SET);
    if (got == 0) leave(r, WHY_TRUNCATED);
    r->src.next_input_byte = r->buf;
    r->src.bytes_in_buffer = (size_t)got;
    return TRUE;
}

static void skip_input(j_decompress_ptr cinfo, long n)
{
    reader *r = cinfo->client_data;
    while (n > 0 && (size_t)n > r->src.bytes_in_buffer) {
        n -= (long)r->src.bytes_in_buffer;
        r->src.bytes_in_buffer = 0;
        fill_input(cinfo);
    }
    if (n > 0) {
        r->src.next_input_byte += n;
        r->src.bytes_in_buffer -= (size_t)n;
    }
}

/* What libjpeg allocates to decode: the coefficients of the whole image when it comes
 * in several scans (each component's blocks, rounded up to whole MCUs, 128 bytes
 * each), and its rows (generously: 64 bytes a pixel of a row per component). */
static size_t libjpeg_needs(const struct jpeg_decompress_struct *c)
{
    size_t n = (size_t)c->output_width * (size_t)c->num_components * 64 + ((size_t)1 << 20);
    if (c->progressive_mode || c->comps_in_scan < c->num_components)
        for (int i = 0; i < c->num_components; i++) {
            const jpeg_component_info *ci = &c->comp_info[i];
            size_t bw = ((size_t)ci->width_in_blocks + ci->h_samp_factor - 1) / ci->h_samp_factor * ci->h_samp_factor;
            size_t bh = ((size_t)ci->height_in_blocks + ci->v_samp_factor - 1) / ci->v_samp_factor * ci->v_samp_factor;
            n += bw * bh * sizeof(JBLOCK);
        }
    return n;
}

/* Everything after the first bytes. On any failure it leaves through longjmp, with
 * r->why saying where the message is. */
static void read_image(reader *r)
{
    struct jpeg_decompress_struct *c = &r->cinfo;
    jpeg_read_header(c, TRUE);
    if (c->image_width > CF_IMAGE_MAX_SIDE || c->image_height > CF_IMAGE_MAX_SIDE ||
        (size_t)c->image_width * c->image_height > CF_IMAGE_MAX_PIXELS) {
        cf_seterr("error: %s: the image is %ux%u pixels; cflux reads images of at most %d pixels a side and %zu in all",
                  r->name, (unsigned)c->image_width, (unsigned)c->image_height, CF_IMAGE_MAX_SIDE, CF_IMAGE_MAX_PIXELS);
        leave(r, WHY_SET);
    }
    int layout, invert = 0;
    switch (c->jpeg_color_space) {
    case JCS_GRAYSCALE: layout = CF_PIX_GREY, c->out_color_space = JCS_GRAYSCALE; break;
    case JCS_YCbCr:
    case JCS_RGB: layout = CF_PIX_RGB, c->out_color_space = JCS_RGB; break;
    case JCS_CMYK:
    case JCS_YCCK: layout = CF_PIX_CMYK, c->out_color_space = JCS_CMYK, invert = !c->saw_Adobe_marker; break;
    default:
        cf_seterr("error: %s: a JPEG of %d components in colour space %d; cflux reads grey, YCbCr, RGB, CMYK and YCCK "
                  "JPEGs", r->name, c->num_components, (int)c->jpeg_color_space);
        leave(r, WHY_SET);
    }
    c->dct_method = JDCT_ISLOW;
    c->do_fancy_upsampling = TRUE;
    jpeg_calc_output_dimensions(c);
    int W = (int)c->output_width, H = (int)c->output_height, n = c->output_components;
    if (W != (int)c->image_width || H != (int)c->image_height || n != (layout == CF_PIX_CMYK ? 4 : layout)) {
        cf_seterr("error: %s: libjpeg would give %dx%d pixels of %d samples for a %ux%u image; cflux cannot read it",
                  r->name, W, H, n, (unsigned)c->image_width, (unsigned)c->image_height);
        leave(r, WHY_SET);
    }
    r->W = W, r->H = H;
    r->data_at = r->nread;
    r->limit = r->nread + CF_IMAGE_SLACK + 2 * (size_t)W * H * (size_t)c->num_components;

    char what[300];
    snprintf(what, sizeof what, "%s: decoding the JPEG", r->name);
    size_t needs = libjpeg_needs(c);
    if (!(r->reserve = cf_mem_alloc(needs, what))) leave(r, WHY_SET);
    c->mem->max_memory_to_use = (long)(needs < (size_t)0x7fffffff ? needs : (size_t)0x7fffffff);
    if (cf_pixels_start(&r->px, r->name, r->channels, r->h, r->w, r->out, W, H, layout, 8, r->exact))
        leave(r, WHY_SET);
    snprintf(what, sizeof what, "%s: the image", r->name);
    if (!(r->row = cf_mem_alloc((size_t)W * n, what))) leave(r, WHY_SET);

    jpeg_start_decompress(c);
    while (c->output_scanline < c->output_height) {
        int y = (int)c->output_scanline;
        JSAMPROW rows[1] = {r->row};
        if (jpeg_read_scanlines(c, rows, 1) != 1) {
            cf_seterr("error: %s: libjpeg gave no row %d of %d; cflux cannot read it", r->name, y, H);
            leave(r, WHY_SET);
        }
        if (invert)
            for (size_t i = 0; i < (size_t)W * 4; i++) r->row[i] = (unsigned char)(255 - r->row[i]);
        cf_pixels_row(&r->px, y, r->row);
    }
    r->rows_done = 1;
    r->limit = r->nread + CF_IMAGE_TAIL;
    jpeg_finish_decompress(c);
}

/* libjpeg's errors that say it cannot, not that the data is wrong. */
static int unsupported(int code)
{
    return code == JERR_BAD_PRECISION || code == JERR_SOF_UNSUPPORTED || code == JERR_NOT_COMPILED ||
           code == JERR_ARITH_NOTIMPL || code == JERR_CCIR601_NOTIMPL || code == JERR_CONVERSION_NOTIMPL ||
           code == JERR_COMPONENT_COUNT || code == JERR_BAD_J_COLORSPACE;
}

static int read_failed(reader *r)
{
    switch (r->why) {
    case WHY_SET: return -1;
    case WHY_TRUNCATED:
        return cf_seterr("error: %s: truncated: the JPEG data ends after %zu bytes", r->name, r->nread);
    default: {
        const char *m = r->msg;
        const struct jpeg_decompress_struct *c = &r->cinfo;
        if (r->code == JERR_IMAGE_TOO_BIG)   /* libjpeg's own limit, 65500, met before cflux's */
            return cf_seterr("error: %s: the image is %ux%u pixels; cflux reads images of at most %d pixels a side "
                             "and %zu in all", r->name, (unsigned)c->image_width, (unsigned)c->image_height,
                             CF_IMAGE_MAX_SIDE, CF_IMAGE_MAX_PIXELS);
        if (!strncmp(m, "Corrupt JPEG data: ", 19)) m += 19;
        if (r->code == JERR_OUT_OF_MEMORY || r->code == JERR_NO_BACKING_STORE)
            return cf_seterr("error: %s: out of memory decoding the JPEG (libjpeg: %s)", r->name, m);
        if (unsupported(r->code)) return cf_seterr("error: %s: cflux cannot read this JPEG: %s", r->name, m);
        return cf_seterr("error: %s: corrupt JPEG data: %s", r->name, m);
    }
    }
}

/* The decoder lives here, around the one setjmp. */
static int decode(reader *r)
{
    struct jpeg_decompress_struct *c = &r->cinfo;
    c->err = jpeg_std_error(&r->err);
    r->err.error_exit = on_error;
    r->err.emit_message = on_message;
    if (setjmp(r->jmp)) {
        jpeg_destroy_decompress(c);
        if (r->why != WHY_DONE) return read_failed(r);
        cf_pixels_finish(&r->px);   /* it stopped reading after the last row */
        return 0;
    }
    jpeg_create_decompress(c);
    c->client_data = r;
    r->src.init_source = init_source;
    r->src.fill_input_buffer = fill_input;
    r->src.skip_input_data = skip_input;
    r->src.resync_to_restart = jpeg_resync_to_restart;
    r->src.term_source = term_source;
    r->src.next_input_byte = r->head;
    c->src = &r->src;
    r->progress.progress_monitor = on_progress;
    c->progress = &r->progress;
    read_image(r);
    jpeg_destroy_decompress(c);
    cf_pixels_finish(&r->px);
    return 0;
}

int cf_jpeg_read_ex(gzFile f, const char *name, const unsigned char *head, long nhead, int channels, int h, int w,
                    int exact, float *out)
{
    if (!name) name = "image";
    if (!f || !out || (channels != 1 && channels != 3) || h < 1 || w < 1 || h > CF_IMAGE_MAX_SIDE ||
        w > CF_IMAGE_MAX_SIDE)
        return cf_seterr("error: %s: cf_jpeg_read: no stream, no output, or a sample of %d channels of %dx%d", name,
                         channels, h, w);
    reader *r = calloc(1, sizeof *r);
    if (!r) return cf_seterr("error: %s: out of memory (asking for %zu bytes)", name, sizeof *r);
    r->f = f;
    r->name = name;
    r->channels = channels, r->h = h, r->w = w, r->exact = exact;
    r->out = out;
    r->limit = CF_IMAGE_SLACK;
    long got = nhead < 0 ? 0 : nhead > 8 ? 8 : nhead;
    if (got) memcpy(r->head, head, (size_t)got);
    r->nread = (size_t)got;
    if (got < 3) {
        long more = cf_data_read(f, name, r->head + got, (size_t)(3 - got), &r->nread);
        if (more < 0) {
            free(r);
            return -1;
        }
        got += more;
    }
    int rc;
    if (got < 3 || r->head[0] != 0xFF || r->head[1] != 0xD8 || r->head[2] != 0xFF) {
        const char *like = cf_image_looks_like(r->head, got);
        if (got == 0) rc = cf_seterr("error: %s: not a JPEG file (it is empty)", name);
        else if (like) rc = cf_seterr("error: %s: not a JPEG file (it looks like %s)", name, like);
        else rc = cf_seterr("error: %s: not a JPEG file (it does not start with FF D8 FF)", name);
    } else {
        r->src.bytes_in_buffer = (size_t)got;
        rc = decode(r);
    }
    cf_mem_free(r->row);
    cf_mem_free(r->reserve);
    cf_pixels_free(&r->px);
    free(r);
    return rc;
}

int cf_jpeg_read(gzFile f, const char *name, int channels, int h, int w, float *out)
{
    return cf_jpeg_read_ex(f, name, NULL, 0, channels, h, w, 0, out);
}

/* ---- writing ---- */

typedef struct writer {
    struct jpeg_compress_struct cinfo;
    struct jpeg_error_mgr err;
    jmp_buf jmp;
    char msg[MSG_MAX];
    unsigned char *buf;   /* jpeg_mem_dest's (malloc'd) */
    unsigned long size;
} writer;

static void on_write_error(j_common_ptr cinfo)
{
    writer *wr = cinfo->client_data;
    (*cinfo->err->format_message)(cinfo, wr->msg);
    longjmp(wr->jmp, 1);
}

static void on_write_message(j_common_ptr cinfo, int level) { (void)cinfo, (void)level; }

int cf_jpeg_encode(const unsigned char *pixels, int w, int h, int channels, int quality, int progressive,
                   unsigned char **out, size_t *len)
{
    if (out) *out = NULL;
    if (len) *len = 0;
    if (!out || !len) return cf_seterr("error: cf_jpeg_encode: no place for the result");
    if (!pixels || (channels != 1 && channels != 3 && channels != 4) || quality < 1 || quality > 100)
        return cf_seterr("error: cf_jpeg_encode: %s; a JPEG is written from 8-bit grey (1 channel), RGB (3) or CMYK "
                         "(4) pixels at quality 1 to 100 (got %d channels, quality %d)",
                         pixels ? "bad arguments" : "no pixels", channels, quality);
    if (w < 1 || h < 1 || w > CF_IMAGE_MAX_SIDE || h > CF_IMAGE_MAX_SIDE || (size_t)w * h > CF_IMAGE_MAX_PIXELS)
        return cf_seterr("error: cf_jpeg_encode: an image of %dx%d pixels; cflux writes images of 1 to %d pixels a "
                         "side and at most %zu in all", w, h, CF_IMAGE_MAX_SIDE, CF_IMAGE_MAX_PIXELS);
    writer *wr = calloc(1, sizeof *wr);
    if (!wr) return cf_seterr("error: cf_jpeg_encode: out of memory");
    struct jpeg_compress_struct *c = &wr->cinfo;
    c->err = jpeg_std_error(&wr->err);
    wr->err.error_exit = on_write_error;
    wr->err.emit_message = on_write_message;
    if (setjmp(wr->jmp)) {
        jpeg_destroy_compress(c);
        free(wr->buf);
        int rc = cf_seterr("error: cf_jpeg_encode: cannot make the JPEG: %s", wr->msg);
        free(wr);
        return rc;
    }
    jpeg_create_compress(c);
    c->client_data = wr;
    jpeg_mem_dest(c, &wr->buf, &wr->size);
    c->image_width = (JDIMENSION)w;
    c->image_height = (JDIMENSION)h;
    c->input_components = channels;
    c->in_color_space = channels == 1 ? JCS_GRAYSCALE : channels == 3 ? JCS_RGB : JCS_CMYK;
    jpeg_set_defaults(c);   /* CMYK is written as YCCK, with an Adobe marker */
    jpeg_set_quality(c, quality, TRUE);
    c->dct_method = JDCT_ISLOW;
    if (quality >= 90)
        for (int i = 0; i < c->num_components; i++) c->comp_info[i].h_samp_factor = c->comp_info[i].v_samp_factor = 1;
    if (progressive) jpeg_simple_progression(c);
    jpeg_start_compress(c, TRUE);
    while (c->next_scanline < c->image_height) {
        JSAMPROW row = (JSAMPROW)(pixels + (size_t)c->next_scanline * w * channels);
        jpeg_write_scanlines(c, &row, 1);
    }
    jpeg_finish_compress(c);
    jpeg_destroy_compress(c);
    *out = wr->buf;
    *len = wr->size;
    free(wr);
    return 0;
}
