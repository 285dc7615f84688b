/* jpeg.h - JPEG images, read into a sample's floats (cf_image_read, image.h) with
 * libjpeg-turbo, and written from 8-bit pixels (for tests and benchmarks).
 *
 * The reader takes the stream that cf_data_gzopen gives (a file, or bytes in memory
 * for the fuzzer): see jpeg.c for what it reads and refuses, pixels.c for the rules of
 * conversion and resizing (the same as a PNG's). */
#ifndef CF_DATA_JPEG_H
#define CF_DATA_JPEG_H

#include <stddef.h>
#include <zlib.h>

#include "data/pixels.h"

/* A progressive (or multi-scan) JPEG of more scans than this is refused: see jpeg.c. */
#define CF_JPEG_MAX_SCANS 100

/* One JPEG image from f (named name in messages) into out: channels (1 or 3) planes
 * of h x w floats in [0, 1], (channels, h, w) row-major, 1 <= h, w <=
 * CF_IMAGE_MAX_SIDE. 0, or -1 with "error: NAME: ..." (not a JPEG, truncated,
 * corrupt, unsupported, too large, out of memory); out may then hold part of an image.
 * Nothing is left allocated. */
int cf_jpeg_read(gzFile f, const char *name, int channels, int h, int w, float *out);

/* The same when the caller has already read the file's first nhead (0 to 8) bytes,
 * head (cf_image_read, telling the format); with exact, an image not of w x h is an
 * error (see cf_pixels_start). */
int cf_jpeg_read_ex(gzFile f, const char *name, const unsigned char *head, long nhead, int channels, int h, int w,
                    int exact, float *out);

/* 8-bit pixels, w x h of channels bytes each (1 grey, 3 RGB, 4 CMYK in Adobe's
 * inverted form, 0 full ink, written as YCCK with an Adobe marker as Photoshop
 * does), row-major, as a JPEG file in memory: *out (malloc'd, the caller frees it) of
 * *len bytes. quality 1 to 100 (libjpeg's scale; 100 still loses a little to
 * rounding and, for colour, to 4:2:0 chroma subsampling below 90; 4:4:4 from 90);
 * progressive: libjpeg's standard progression of scans. Deterministic: the same
 * arguments give the same bytes. 0, or -1 with the error (bad arguments, a size past
 * the limits, out of memory). */
int cf_jpeg_encode(const unsigned char *pixels, int w, int h, int channels, int quality, int progressive,
                   unsigned char **out, size_t *len);

#endif
