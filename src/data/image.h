/* image.h - an image file, PNG or JPEG, told by its first bytes, into a sample's
 * floats (cf_dataset_load_images in cflux.h; the image folders). The conversion and
 * the resizing are pixels.c's whatever the format, so the same pixels give the same
 * floats from either. */
#ifndef CF_DATA_IMAGE_H
#define CF_DATA_IMAGE_H

#include <zlib.h>

/* The image in f (named name in messages), a PNG or a JPEG file, into out: channels
 * (1 or 3) planes of h x w floats in [0, 1], (channels, h, w) row-major, 1 <= h, w <=
 * CF_IMAGE_MAX_SIDE (pixels.h). With exact, an image of another size than w x h is an
 * error naming both sizes; else it is resized. 0, or -1 with "error: NAME: ..." (not
 * a PNG or JPEG image, truncated, corrupt, too large, out of memory, the wrong size);
 * out may then hold part of an image. Nothing is left allocated. Thread-safe: it
 * keeps no state, and the message is the calling thread's. */
int cf_image_read(gzFile f, const char *name, int channels, int h, int w, int exact, float *out);

/* What a file that is no image cflux reads seems to be, from its first n bytes (n <=
 * 8): "a GIF image", "text", ...; NULL when nothing is recognised. */
const char *cf_image_looks_like(const unsigned char *b, long n);

#endif
