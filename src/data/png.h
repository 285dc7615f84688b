/* png.h - PNG images: read into a sample's floats (cf_dataset_load_images, in
 * cflux.h), and written from 8-bit pixels (the report page's pictures).
 *
 * The reader takes the stream that cf_data_gzopen gives (a file, or bytes in memory
 * for the fuzzer): see png.c and pixels.c for the rules of conversion and resizing;
 * pixels.h for the limits (CF_IMAGE_MAX_SIDE ...). This header
 * is named like libpng's own; the library's files include it as "data/png.h" and
 * libpng's as <png.h>, so the two never meet. */
#ifndef CF_DATA_PNG_H
#define CF_DATA_PNG_H

#include <stddef.h>
#include <zlib.h>

#include "cflux.h"
#include "data/pixels.h"

/* One PNG image from f (named name in messages) into out: channels (1 or 3) planes of
 * h x w floats in [0, 1], (channels, h, w) row-major, 1 <= h, w <= CF_IMAGE_MAX_SIDE.
 * 0, or -1 with "error: NAME: ..." (not a PNG, truncated, corrupt, too large, out of
 * memory); out may then hold part of an image. Nothing is left allocated. */
int cf_png_read(gzFile f, const char *name, int channels, int h, int w, float *out);

/* The same when the caller has already read the file's first nhead (0 to 8) bytes,
 * head (cf_image_read, telling the format); with exact, an image not of w x h is an
 * error (see cf_pixels_start). */
int cf_png_read_ex(gzFile f, const char *name, const unsigned char *head, long nhead, int channels, int h, int w,
                   int exact, float *out);

/* The image that a sample of shape s (a leading CF_BATCH dropped, into *t) holds:
 * *c channels of *h x *w, as cf_dataset_load_images reads shapes. 0, or -1 with the
 * error. */
int cf_image_layout(cf_shape s, cf_shape *t, int *c, int *h, int *w);

/* 8-bit pixels, w x h of channels (1 grey, 3 RGB) bytes each, row-major, as a PNG
 * file in memory: *out (malloc'd, the caller frees it) of *len bytes. Deterministic:
 * the same pixels give the same bytes. 0, or -1 with the error (bad arguments, a size
 * past the limits, out of memory). */
int cf_png_encode(const unsigned char *pixels, int w, int h, int channels, unsigned char **out, size_t *len);

/* The same image written to path, crash-safely (cf_file_create / cf_file_commit).
 * 0, or -1 with the error, which names path; the old file, if any, is then kept. */
int cf_png_write(const char *path, const unsigned char *pixels, int w, int h, int channels);

#endif
