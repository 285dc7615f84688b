/* fuzz_csv.c - libFuzzer target over the CSV reader (src/data/csv.c), through the
 * stream entry point that cf_dataset_load_csv uses.
 *
 *   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCFLUX_FUZZ=ON -DCFLUX_BLAS=OFF -DCFLUX_TESTS=OFF
 *   cmake --build build-fuzz --target fuzz_csv
 *   build-fuzz/fuzz_csv -max_len=4096 tests/fuzz/corpus_csv
 *
 * Two mode bytes come first. Byte 0: bits 6-7 plain or gzip'd (fuzz_stream.h); bit 2
 * a label column (else inputs alone); bits 3-5 which column (0, 1, 2, -1, -2, 3, -3,
 * 7); bits 0-1 the header (-1 decide, 0 none, 1 a header, -1). Byte 1: bits 0-3 the
 * chunk size (the default, or 1 to 15 bytes), bits 4-7 the longest line (the
 * default, or 8 * 1..15 bytes); with gzip and a cut, also where the stream is cut.
 * Byte 2: bits 0-1 the label by name or number instead (none, "b", "-1", "label"),
 * bits 2-3 the features (all, "a,b", "0,-1", "b"), bit 4 the classes known ("cat",
 * "dog", "2"). The memory limit is 64 MB.
 *
 * Every input either gives a dataset that keeps the promises of cflux.h (rows of the
 * same width, finite numbers, columns that add up, names of printable bytes within
 * the limit, every counted byte given back when freed), or fails with a message that
 * starts with "error: fuzz". */
#define _GNU_SOURCE /* memfd_create */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "data/data.h"
#include "fuzz_stream.h"

static void check_names(const cf_dataset *d)
{
    for (int c = 0; c < cf_dataset_column_count(d); c++) {
        const char *n = cf_dataset_column_name(d, c);
        if (!n) {
            if (c) abort();   /* all or none */
            return;
        }
        if (strlen(n) > 63) abort();
        for (const char *p = n; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7F) abort();
    }
}

static void check(const cf_dataset *d, int has_label, int features)
{
    size_t n = cf_dataset_count(d);
    cf_shape s = cf_dataset_sample_shape(d);
    int cols = cf_dataset_column_count(d), lc = cf_dataset_label_column(d);
    if (n == 0 || s.rank != 1 || s.d[0] < 1 || cf_dataset_target_size(d) != 1) abort();
    if (cols < s.d[0] + has_label || (!features && cols != s.d[0] + has_label)) abort();
    if (has_label ? lc < 0 || lc >= cols : lc != -1) abort();
    const float *x = cf_dataset_x(d), *y = cf_dataset_y(d);
    for (size_t i = 0; i < n * (size_t)s.d[0]; i++)
        if (!isfinite(x[i])) abort();
    for (size_t i = 0; i < n; i++)
        if (!isfinite(y[i]) || (!has_label && y[i] != 0)) abort();
    if (!has_label && cf_dataset_classes(d) != 0) abort();
    const char *const *names;
    int nn = cf_dataset_class_names(d, &names);   /* word labels: whole indices below the count */
    if (nn && cf_dataset_classes(d) != nn) abort();
    for (size_t i = 0; nn && i < n; i++)
        if (y[i] < 0 || y[i] >= nn || y[i] != floorf(y[i])) abort();
    for (int i = 0; i < nn; i++)
        if (!names[i] || strlen(names[i]) > 100) abort();
    check_names(d);
    cf_target_stats st;
    if (cf_dataset_target_stats(d, &st) || st.count != n || st.distinct < 1) abort();
    cf_dataset *tr, *va;
    if (n >= 2) {
        if (cf_dataset_split(d, 0.5, n, &tr, &va)) abort();
        if (cf_dataset_count(tr) + cf_dataset_count(va) != n) abort();
        if (cf_dataset_label_column(va) != lc || cf_dataset_column_count(tr) != cols) abort();
        check_names(va);
        if (cf_dataset_class_names(va, NULL) != nn || cf_dataset_class_names(tr, NULL) != nn) abort();
        cf_dataset_free(tr);
        cf_dataset_free(va);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int label_cols[8] = {0, 1, 2, -1, -2, 3, -3, 7};
    static const int headers[4] = {-1, 0, 1, -1};
    static const char *const labels[4] = {NULL, "b", "-1", "label"}, *const features[4] = {NULL, "a,b", "0,-1", "b"};
    static const char *const known[3] = {"cat", "dog", "2"};
    if (size < 3) return 0;
    unsigned m0 = data[0], m1 = data[1], m2 = data[2];
    cf_csv_opts o = {.has_label = (m0 >> 2) & 1, .label_col = label_cols[(m0 >> 3) & 7], .header = headers[m0 & 3],
                     .chunk = m1 & 15, .max_line = 8 * (m1 >> 4), .label = labels[m2 & 3],
                     .features = features[(m2 >> 2) & 3], .class_names = known, .nclass_names = (m2 >> 4) & 1 ? 3 : 0};
    gzFile f = fuzz_stream(m0, m1, data + 3, size - 3);
    if (!f) return 0;
    cf_dataset *d = cf_data_csv_read(f, "fuzz", &o);
    gzclose(f);
    if (!d) {
        if (strncmp(cf_last_error(), "error: fuzz", 11) != 0) abort();   /* every failure explains itself */
    } else {
        check(d, o.has_label, o.features != NULL);
        cf_dataset_free(d);
    }
    if (cf_memory_in_use() != 0) abort();   /* every counted byte given back */
    return 0;
}
