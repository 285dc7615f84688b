/* golden.h - what the golden tests share with tests/golden/golden.py: the xorshift32
 * generator that both sides use to make the same data, and the comparison with a
 * fixture tensor. */
#ifndef CF_TEST_GOLDEN_H
#define CF_TEST_GOLDEN_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cflux.h"
#include "core/safetensors.h"

static uint32_t golden_state;

static uint32_t golden_next(void)
{
    uint32_t s = golden_state;
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    return golden_state = s;
}

static __attribute__((unused)) float golden_uniform(void) { return (float)(golden_next() >> 8) * (1.0f / 16777216.0f); }       /* [0, 1) */
static __attribute__((unused)) float golden_sym(void) { return golden_uniform() * 2.0f - 1.0f; }                                /* [-1, 1) */

/* The fixture file, or NULL with the reason printed. */
static __attribute__((unused)) cf_st_file *golden_open(const char *path)
{
    cf_st_file *f = cf_st_read(path);
    if (!f) fprintf(stderr, "%s\n", cf_last_error());
    return f;
}

/* The fixture file, with the matrix-product engine forced and the thread count set,
 * for one run of a golden test; NULL, with the reason printed, if either fails. */
static __attribute__((unused)) cf_st_file *golden_begin(const char *path, const char *engine, int threads)
{
    cf_st_file *f = golden_open(path);
    if (f && cf_set_gemm(engine) != 0) {
        fprintf(stderr, "%s: %s\n", engine, cf_last_error());
        cf_st_free(f);
        return NULL;
    }
    cf_set_threads(threads);
    return f;
}

/* |got - want| <= rtol |want| + atol for every element; returns the mismatches,
 * printing the first few. */
static int golden_compare(const char *what, const float *got, const cf_st_tensor *want, size_t n, double rtol,
                          double atol)
{
    if (!want || want->count != n) {
        fprintf(stderr, "%s: golden tensor missing or of another size\n", what);
        return 1;
    }
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        double w = want->data[i], g = got[i];
        if (!(fabs(g - w) <= rtol * fabs(w) + atol))
            if (bad++ < 3) fprintf(stderr, "%s[%zu]: cflux %.9g, pytorch %.9g\n", what, i, g, w);
    }
    if (bad) fprintf(stderr, "%s: %d of %zu elements differ\n", what, bad, n);
    return bad;
}

/* Run run(engine, threads) with every matrix-product engine this build and CPU have,
 * each forced in turn, at 1 and 2 threads; the number of engines that ran. */
static inline int golden_each_engine(void (*run)(const char *engine, int threads))
{
    static const char *engines[] = {"builtin-portable", "builtin-avx2", "builtin-avx512", "openblas"};
    int ran = 0;
    for (int i = 0; i < 4; i++) {
        if (cf_set_gemm(engines[i]) != 0) {
            printf("  %s: not in this build or on this CPU\n", engines[i]);
            continue;
        }
        printf("  %s (%s)\n", engines[i], cf_gemm_name());
        run(engines[i], 1);
        run(engines[i], 2);
        ran++;
    }
    return ran;
}

/* The comparison can fail: a copy of the fixture t compares equal, and the same copy
 * with element `at` off by 0.1% is reported as exactly one mismatch. 1 if so. */
static inline int golden_catches_a_planted_error(const cf_st_tensor *t, size_t at, double rtol, double atol)
{
    float *copy = malloc(t->count * sizeof *copy);
    if (!copy || at >= t->count) {
        free(copy);
        return 0;
    }
    for (size_t i = 0; i < t->count; i++) copy[i] = t->data[i];
    int unchanged = golden_compare("unchanged", copy, t, t->count, rtol, atol);
    copy[at] *= 1.001f;
    int planted = golden_compare("planted", copy, t, t->count, rtol, atol);
    free(copy);
    return unchanged == 0 && planted == 1;
}

#endif
