/* fuzz_model.c - libFuzzer target over the notation: parse and compile any text.
 *
 * Built by `make fuzz` (CMake with -DCFLUX_FUZZ=ON and clang); by hand:
 *   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCFLUX_FUZZ=ON -DCFLUX_BLAS=OFF
 *   cmake --build build-fuzz --target fuzz_model
 *   build-fuzz/fuzz_model -max_len=4096 tests/fuzz/corpus_model
 *
 * Every input either compiles to a model whose shapes are all known, or fails with a
 * message that starts with "error: " or "FILE:LINE:COL: error: ". A model that compiles
 * is also summarised (cf_model_summary_ex: table and JSON, depths 1 and 3, written to
 * /dev/null); a summary that fails says why, starting "error: ". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "lang/compile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int failed = 0;
    cf_model *m = cf_lang_compile((const char *)data, size, "fuzz.flux", 0, &failed);
    if (!m) {
        const char *e = cf_last_error();
        if (strncmp(e, "error: ", 7) != 0 && strncmp(e, "fuzz.flux:", 10) != 0 &&
            strncmp(e, "<stdlib>", 8) != 0)
            abort();   /* every failure explains itself */
        if (!strstr(e, "error: ")) abort();
        return 0;
    }
    if (cf_model_output_count(m) < 1) abort();
    for (int i = 0; i < cf_model_output_count(m); i++) {
        cf_shape s = cf_model_output_shape(m, i);
        if (s.rank < 0 || s.rank > CF_MAX_DIMS) abort();
    }
    static FILE *devnull;   /* opened once; if that fails, no summaries */
    static int opened;
    if (!opened) {
        opened = 1;
        devnull = fopen("/dev/null", "w");
    }
    for (int k = 0; devnull && k < 4; k++)
        if (cf_model_summary_ex(m, 0, k & 1, k < 2 ? 1 : 3, devnull) != 0 &&
            strncmp(cf_last_error(), "error: ", 7) != 0)
            abort();   /* a summary that fails explains itself */
    cf_model_free(m);
    return 0;
}
