/* fuzz_jpeg.c - libFuzzer target over the image entry point (src/data/image.c) with
 * JPEG files in mind (src/data/jpeg.c; a PNG that turns up goes to png.c), through the
 * stream that cf_dataset_load_images and the image folders use.
 *
 *   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCFLUX_FUZZ=ON -DCFLUX_BLAS=OFF -DCFLUX_TESTS=OFF
 *   cmake --build build-fuzz --target fuzz_jpeg
 *   build-fuzz/fuzz_jpeg -max_len=1048576 tests/fuzz/corpus_jpeg
 *
 * Two mode bytes come first. Byte 0: bits 6-7 plain or gzip'd (fuzz_stream.h), bit 0
 * the sample's channels (1 or 3), bits 1-2 its height and bits 3-5 its width (from the
 * tables below: equal to, smaller and larger than the images of the corpus). Byte 1:
 * with gzip and a cut, where the stream is cut; else, when its bits 0 and 7 are both
 * set, the size must be exact. The memory limit is 64 MB.
 *
 * Every input either reads (every value a number in [0, 1]) or fails with a message
 * that starts with "error: fuzz"; nothing counted is left allocated either way. */
#define _GNU_SOURCE /* memfd_create */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/mem.h"
#include "data/image.h"
#include "fuzz_stream.h"

static const int heights[4] = {1, 3, 8, 28};
static const int widths[8] = {1, 2, 5, 7, 8, 16, 28, 33};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    int c = data[0] & 1 ? 3 : 1, h = heights[(data[0] >> 1) & 3], w = widths[(data[0] >> 3) & 7];
    int exact = (data[0] >> 6) != 2 && (data[1] & 0x81) == 0x81;
    gzFile f = fuzz_stream(data[0], data[1], data + 2, size - 2);
    if (!f) return 0;
    size_t n = (size_t)c * h * w;
    float *out = malloc(n * sizeof *out);
    if (!out) abort();
    int rc = cf_image_read(f, "fuzz", c, h, w, exact, out);
    gzclose(f);
    if (rc) {
        if (strncmp(cf_last_error(), "error: fuzz", 11) != 0) abort();   /* every failure explains itself */
    } else {
        for (size_t i = 0; i < n; i++)
            if (!(out[i] >= 0 && out[i] <= 1)) abort();
    }
    free(out);
    if (cf_memory_in_use() != 0) abort();
    return 0;
}
