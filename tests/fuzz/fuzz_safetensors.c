/* fuzz_safetensors.c - libFuzzer target over the safetensors parser, in memory and
 * reading parts of a file.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *       tests/fuzz/fuzz_safetensors.c src/core/safetensors.c src/core/error.c \
 *       -o fuzz_safetensors -lcjson -lm
 *   ./fuzz_safetensors -max_len=4096 tests/fuzz/corpus_safetensors
 *
 * Every input, read strictly and keeping unread dtypes (CF_ST_OTHER_DTYPES), must
 * either parse, into tensors that keep the promises of safetensors.h, or fail with a
 * message that starts with "error: fuzz: ". Written to a file, it is read again in
 * parts (cf_st_read_want: every other tensor's values; CF_ST_HEADER_ONLY), which must
 * succeed exactly when the parse in memory does and give the same names, shapes and
 * values (a failure naming the file). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cflux.h"
#include "core/safetensors.h"

/* One parse, strict (flags 0: every tensor has values) or keeping unread dtypes. */
static void check(const uint8_t *data, size_t size, unsigned flags)
{
    cf_st_file *f = cf_st_parse_ex(data, size, "fuzz", flags);
    volatile float sink = 0;
    int i, n;

    if (!f) {
        if (strncmp(cf_last_error(), "error: fuzz: ", 13)) abort();
        return;
    }
    n = cf_st_count(f);
    for (i = 0; i < n; i++) {
        const cf_st_tensor *t = cf_st_get(f, i);
        size_t count = 1, k;
        int d;
        if (!t || !t->name || !t->dtype || t->rank < 0 || t->rank > CF_ST_MAXDIMS) abort();
        if (!t->data && !(flags & CF_ST_OTHER_DTYPES)) abort();
        for (d = 0; d < t->rank; d++) {
            if (t->shape[d] < 0) abort();
            count *= (size_t)t->shape[d];
        }
        if (count != t->count || cf_st_find(f, t->name) != t) abort();
        for (k = 0; t->data && k < t->count; k++) sink += t->data[k]; /* every value is readable */
    }
    if (cf_st_get(f, n) || cf_st_find(f, "\x01 not a name")) abort();
    (void)cf_st_meta(f, "format");
    (void)sink;
    cf_st_free(f);
}

static int every_other(const cf_st_file *f, const char *name, void *user)
{
    (void)f;
    return (*(int *)user)++ % 2 == 0 && name;
}

static char path[64];

static void remove_file(void) { unlink(path); }

/* The input from a file, in parts, against the parse in memory. */
static void check_parts(const uint8_t *data, size_t size, unsigned flags)
{
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(data, 1, size, fp) != size || fclose(fp)) abort();
    cf_st_file *whole = cf_st_parse_ex(data, size, path, flags);
    for (int header_only = 0; header_only < 2; header_only++) {
        int calls = 0;
        cf_st_file *f = header_only ? cf_st_read_ex(path, flags | CF_ST_HEADER_ONLY)
                                    : cf_st_read_want(path, flags, every_other, &calls);
        if (!f != !whole) abort();
        if (!f) {
            if (strncmp(cf_last_error(), "error: ", 7) || !strstr(cf_last_error(), path)) abort();
            continue;
        }
        if (cf_st_count(f) != cf_st_count(whole)) abort();
        for (int i = 0; i < cf_st_count(f); i++) {
            const cf_st_tensor *t = cf_st_get(f, i), *w = cf_st_get(whole, i);
            if (strcmp(t->name, w->name) || t->count != w->count || t->rank != w->rank || strcmp(t->dtype, w->dtype))
                abort();
            if (t->data && (!w->data || memcmp(t->data, w->data, t->count * sizeof *t->data))) abort();
            if (header_only && t->data) abort();
        }
        cf_st_free(f);
    }
    cf_st_free(whole);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check(data, size, 0);
    check(data, size, CF_ST_OTHER_DTYPES);
    if (!*path) {
        snprintf(path, sizeof path, "/tmp/fuzz-st-%d.safetensors", (int)getpid());
        atexit(remove_file);
    }
    check_parts(data, size, 0);
    check_parts(data, size, CF_ST_OTHER_DTYPES);
    return 0;
}
