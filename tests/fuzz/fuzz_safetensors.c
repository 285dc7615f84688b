/* fuzz_safetensors.c - libFuzzer target over the in-memory safetensors parser.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *       tests/fuzz/fuzz_safetensors.c src/core/safetensors.c src/core/error.c \
 *       -o fuzz_safetensors -lcjson -lm
 *   ./fuzz_safetensors -max_len=4096 tests/fuzz/corpus_safetensors
 *
 * Every input, read strictly and keeping unread dtypes (CF_ST_OTHER_DTYPES), must
 * either parse, into tensors that keep the promises of safetensors.h, or fail with a
 * message that starts with "error: fuzz: ". */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check(data, size, 0);
    check(data, size, CF_ST_OTHER_DTYPES);
    return 0;
}
