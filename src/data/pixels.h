/* pixels.h - an image's pixels, as a decoder gives them a row at a time, into a
 * sample's floats: the conversion to the channels a model takes and the resizing to
 * its input, one code for every image format (png.c, jpeg.c). The rules are in
 * pixels.c; the limits on what an image reader accepts are here. */
#ifndef CF_DATA_PIXELS_H
#define CF_DATA_PIXELS_H

#include <stddef.h>

/* The largest image read or written: this many pixels a side, and in all. */
#define CF_IMAGE_MAX_SIDE 16384
#define CF_IMAGE_MAX_PIXELS ((size_t)1 << 26)

/* What an image file may cost: up to its last row, CF_IMAGE_SLACK bytes (what comes
 * before the image data must fit in it) plus a small multiple of the image's raw size
 * (each reader says which); after the last row, CF_IMAGE_TAIL bytes more at most. */
#define CF_IMAGE_SLACK ((size_t)16 << 20)
#define CF_IMAGE_TAIL ((size_t)16 << 10)

/* How a decoder's row holds a pixel: the samples, in this order, each of `bits` (8 or
 * 16, big-endian) bits. CF_PIX_CMYK is Adobe's inverted CMYK (0 is full ink), as
 * Photoshop writes it into JPEG files; the other values are the sample counts. */
enum { CF_PIX_GREY = 1, CF_PIX_GREY_ALPHA = 2, CF_PIX_RGB = 3, CF_PIX_RGBA = 4, CF_PIX_CMYK = 5 };

/* One axis from n to m pixels: output i is the sum of w[k] * source[j[k]] for k in
 * [at[i], at[i + 1]). */
typedef struct cf_axis {
    int *at;     /* m + 1 */
    int *j;
    double *w;
} cf_axis;

/* A source image of W x H pixels on its way into out. Start it, give it every row
 * (in order, each once), finish it, free it. */
typedef struct cf_pixels {
    const char *name;   /* the file, for messages */
    int channels, h, w; /* the sample: (channels, h, w) */
    float *out;
    int layout, bits;   /* the source's pixels (CF_PIX_*) and sample size */
    int W, H;           /* the source's size */
    /* owned */
    float *line;        /* one row in floats: (channels, W) */
    double *tmp;        /* counted: (channels, H, w), the rows resized along x */
    cf_axis ax, ay;
    int same;           /* W x H is w x h: rows go to out as they are (the same floats resizing by 1 gives) */
} cf_pixels;

/* Ready p for a source of W x H (1 to CF_IMAGE_MAX_SIDE a side, CF_IMAGE_MAX_PIXELS
 * in all, which the reader has checked) of layout and bits into out, (channels, h,
 * w). With exact, a source of another size than w x h is an error ("the image is
 * WxH pixels, not the wxh asked for"). 0, or -1 with "error: NAME: ..." (that, or
 * out of memory); p is then still to be freed. */
int cf_pixels_start(cf_pixels *p, const char *name, int channels, int h, int w, float *out, int W, int H,
                    int layout, int bits, int exact);

/* Source row y (W pixels as the layout says). */
void cf_pixels_row(cf_pixels *p, int y, const unsigned char *row);

/* After the last row: the columns resized into out. */
void cf_pixels_finish(cf_pixels *p);

/* What p owns; p may be zeroed, started, or failed to start. */
void cf_pixels_free(cf_pixels *p);

#endif
