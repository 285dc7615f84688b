/* fuzz_text.c - libFuzzer target over the text reader (src/data/text.c), through the
 * stream entry point that cf_dataset_load_text uses.
 *
 *   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCFLUX_FUZZ=ON -DCFLUX_BLAS=OFF -DCFLUX_TESTS=OFF
 *   cmake --build build-fuzz --target fuzz_text
 *   build-fuzz/fuzz_text -max_len=4096 tests/fuzz/corpus_text
 *
 * Two mode bytes come first. Byte 0: bits 6-7 plain or gzip'd (fuzz_stream.h). Byte 1:
 * bits 0-4 the sequence length less one (1 to 32), bits 5-7 the held-out fraction in
 * tenths (0 to 0.7); with gzip and a cut, also where the stream is cut. The memory
 * limit is 64 MB.
 *
 * Every input either gives sequential datasets that keep the promises of cflux.h (a
 * vocabulary of distinct ascending bytes, inputs and targets that are indices into it,
 * each target the next input, every counted byte given back when freed), or fails with
 * a message that starts with "error: fuzz". */
#define _GNU_SOURCE /* memfd_create */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "data/data.h"
#include "fuzz_stream.h"

static void check(const cf_dataset *d, int T)
{
    if (!cf_dataset_sequential(d)) abort();
    int nv = 0;
    const unsigned char *v = cf_dataset_vocab(d, &nv);
    if (!v || nv < 1 || nv > 256) abort();
    for (int i = 1; i < nv; i++)
        if (v[i] <= v[i - 1]) abort();
    size_t n = cf_dataset_count(d);
    cf_shape s = cf_dataset_sample_shape(d);
    if (n == 0 || s.rank != 1 || s.d[0] != T || cf_dataset_target_size(d) != T) abort();
    const float *x = cf_dataset_x(d), *y = cf_dataset_y(d);
    for (size_t j = 0; j < n; j++)
        for (int t = 0; t < T; t++) {
            float a = x[j * T + t], b = y[j * T + t];
            if (!(a >= 0 && a < nv && a == (float)(int)a && b >= 0 && b < nv && b == (float)(int)b)) abort();
            if (t + 1 < T && b != x[j * T + t + 1]) abort();        /* the target is the next input */
            if (t + 1 == T && j + 1 < n && b != x[(j + 1) * T]) abort();   /* across samples too */
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    unsigned m0 = data[0], m1 = data[1];
    int T = 1 + (int)(m1 & 31);
    double held = (double)((m1 >> 5) & 7) / 10;
    gzFile f = fuzz_stream(m0, m1, data + 2, size - 2);
    if (!f) return 0;
    cf_dataset *tr = NULL, *te = NULL;
    int rc = cf_data_text_read(f, "fuzz", T, held, &tr, &te);
    gzclose(f);
    if (rc) {
        if (tr || te || strncmp(cf_last_error(), "error: fuzz", 11) != 0) abort();   /* every failure explains itself */
    } else {
        if (!tr) abort();
        check(tr, T);
        if (te) check(te, T);
        cf_dataset_free(tr);
        cf_dataset_free(te);
    }
    if (cf_memory_in_use() != 0) abort();   /* every counted byte given back */
    return 0;
}
