/* image.c - PNG or JPEG, by the file's first bytes (see image.h). */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "data/data.h"
#include "data/image.h"
#include "data/jpeg.h"
#include "data/pixels.h"
#include "data/png.h"

static const unsigned char png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

const char *cf_image_looks_like(const unsigned char *b, long n)
{
    if (n >= 4 && memcmp(b, png_sig, 4) == 0)
        return n < 8 ? "a PNG file cut short" : "a PNG file whose line ends were changed (a text-mode transfer?)";
    if (n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return "a JPEG image";
    if (n >= 1 && n < 3 && b[0] == 0xFF && (n < 2 || b[1] == 0xD8)) return "a JPEG file cut short";
    if (n >= 4 && memcmp(b, "GIF8", 4) == 0) return "a GIF image";
    if (n >= 4 && memcmp(b, "RIFF", 4) == 0) return "a RIFF file (a WebP image?)";
    if (n >= 4 && (memcmp(b, "II*\0", 4) == 0 || memcmp(b, "MM\0*", 4) == 0)) return "a TIFF image";
    if (n >= 2 && b[0] == 'B' && b[1] == 'M') return "a BMP image";
    if (n >= 4 && memcmp(b, "%PDF", 4) == 0) return "a PDF file";
    if (n >= 4 && b[0] == 0 && b[1] == 0 && b[2] == 0x08) return "an IDX file";
    int text = n > 0;
    for (long i = 0; i < n; i++) text &= (b[i] >= 0x20 && b[i] < 0x7F) || b[i] == '\t' || b[i] == '\n' || b[i] == '\r';
    return text ? "text" : NULL;
}

int cf_image_read(gzFile f, const char *name, int channels, int h, int w, int exact, float *out)
{
    if (!name) name = "image";
    if (!f || !out || (channels != 1 && channels != 3) || h < 1 || w < 1 || h > CF_IMAGE_MAX_SIDE ||
        w > CF_IMAGE_MAX_SIDE)
        return cf_seterr("error: %s: cf_image_read: no stream, no output, or a sample of %d channels of %dx%d", name,
                         channels, h, w);
    unsigned char head[8];
    size_t nread = 0;
    long n = cf_data_read(f, name, head, sizeof head, &nread);
    if (n < 0) return -1;
    if (n == 8 && memcmp(head, png_sig, 8) == 0) return cf_png_read_ex(f, name, head, n, channels, h, w, exact, out);
    if (n >= 3 && head[0] == 0xFF && head[1] == 0xD8 && head[2] == 0xFF)
        return cf_jpeg_read_ex(f, name, head, n, channels, h, w, exact, out);
    if (n == 0) return cf_seterr("error: %s: not a PNG or JPEG image (it is empty)", name);
    const char *like = cf_image_looks_like(head, n);
    if (like) return cf_seterr("error: %s: not a PNG or JPEG image (it looks like %s)", name, like);
    if (n < 8) return cf_seterr("error: %s: not a PNG or JPEG image (it has only %ld bytes)", name, n);
    return cf_seterr("error: %s: not a PNG or JPEG image (it starts with %02x %02x %02x %02x)", name, head[0], head[1],
                     head[2], head[3]);
}
