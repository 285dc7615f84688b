/* fuzz_idx.c - libFuzzer target over the IDX reader (src/data/idx.c), through the
 * stream entry point that cf_dataset_load_idx uses.
 *
 *   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCFLUX_FUZZ=ON -DCFLUX_BLAS=OFF -DCFLUX_TESTS=OFF
 *   cmake --build build-fuzz --target fuzz_idx
 *   build-fuzz/fuzz_idx -max_len=4096 tests/fuzz/corpus_idx
 *
 * Two mode bytes come first. Byte 0: bits 6-7 plain or gzip'd (fuzz_stream.h), bit 0
 * labels (else images). Byte 1: with gzip and a cut, where the stream is cut. The
 * memory limit is 64 MB.
 *
 * Every input either reads as the header says (dimensions that multiply to the values
 * read; images in [0, 1], labels whole numbers 0 to 255; the counted bytes given back
 * when freed), or fails with a message that starts with "error: fuzz". */
#define _GNU_SOURCE /* memfd_create */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/mem.h"
#include "data/data.h"
#include "fuzz_stream.h"

static void check(const cf_idx *d, int labels)
{
    if (labels ? d->rank != 1 : d->rank < 2 || d->rank > CF_MAX_DIMS) abort();
    size_t sample = 1;
    for (int i = 1; i < d->rank; i++) sample *= d->dims[i];
    if (sample != d->sample || d->dims[0] == 0 || !d->v) abort();
    for (size_t i = 0; i < d->dims[0] * sample; i++) {
        float v = d->v[i];
        if (labels ? v < 0 || v > 255 || v != (float)(int)v : !(v >= 0 && v <= 1)) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    int labels = data[0] & 1;
    gzFile f = fuzz_stream(data[0], data[1], data + 2, size - 2);
    if (!f) return 0;
    cf_idx d;
    int rc = cf_data_idx_read(f, "fuzz", labels, &d);
    gzclose(f);
    if (rc) {
        if (strncmp(cf_last_error(), "error: fuzz", 11) != 0) abort();   /* every failure explains itself */
        if (d.v) abort();
    } else {
        check(&d, labels);
        cf_mem_free(d.v);
    }
    if (cf_memory_in_use() != 0) abort();
    return 0;
}
