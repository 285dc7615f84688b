/* stats.c - a summary of a dataset's targets, for the checks a trainer makes before
 * it trains: one class only, or a feature taken for the label (many distinct values,
 * fractions)? Distinct values are counted exactly up to CF_TARGET_DISTINCT_MAX in a
 * hash set of their bit patterns. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "data/data.h"

#define SLOTS_LOG2 17   /* twice CF_TARGET_DISTINCT_MAX: the set stays half empty */
#define EMPTY 0xFFFFFFFFu

/* The bits that stand for v: -0 as 0, every NaN as one; never EMPTY. */
static uint32_t key_of(float v)
{
    if (v == 0) v = 0;
    if (isnan(v)) return 0x7FC00000u;
    uint32_t k;
    memcpy(&k, &v, sizeof k);
    return k;
}

/* Add k to the set: 1 when it is new, 0 when it was there. */
static int insert(uint32_t *slots, uint32_t k)
{
    uint32_t mask = (1u << SLOTS_LOG2) - 1, i = (k * 0x9E3779B1u) >> (32 - SLOTS_LOG2);
    for (;; i = (i + 1) & mask) {
        if (slots[i] == k) return 0;
        if (slots[i] == EMPTY) {
            slots[i] = k;
            return 1;
        }
    }
}

int cf_dataset_target_stats(const cf_dataset *d, cf_target_stats *s)
{
    if (!d || !s) return cf_seterr("error: cf_dataset_target_stats: no dataset or no place for the result");
    size_t nslots = (size_t)1 << SLOTS_LOG2;
    uint32_t *slots = malloc(nslots * sizeof *slots);
    if (!slots) return cf_oom(nslots * sizeof *slots);
    memset(slots, 0xFF, nslots * sizeof *slots);
    *s = (cf_target_stats){.count = d->n * (size_t)d->ysize, .whole = 1, .min = NAN, .max = NAN};
    for (size_t i = 0; i < s->count; i++) {
        float v = d->y[i];
        if (!(isfinite(v) && v == floorf(v))) s->whole = 0;
        if (!isnan(v)) {
            if (!(v >= s->min)) s->min = v;
            if (!(v <= s->max)) s->max = v;
        }
        if (s->more) continue;
        uint32_t k = key_of(v);
        if (s->distinct < CF_TARGET_DISTINCT_MAX) s->distinct += (size_t)insert(slots, k);
        else if (insert(slots, k)) s->more = 1;
    }
    free(slots);
    return 0;
}
