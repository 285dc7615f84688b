/* rng.h - the one random generator: explicit state, xoshiro256** seeded by splitmix64.
 * Same seed, same sequence, on every machine. */
#ifndef CF_CORE_RNG_H
#define CF_CORE_RNG_H

#include <stdint.h>

typedef struct cf_rng {
    uint64_t s[4];
} cf_rng;

void     cf_rng_seed(cf_rng *r, uint64_t seed);
uint64_t cf_rng_next(cf_rng *r);
float    cf_rng_uniform(cf_rng *r);          /* [0, 1) */
float    cf_rng_normal(cf_rng *r);           /* mean 0, std 1 */
uint32_t cf_rng_below(cf_rng *r, uint32_t n); /* [0, n), unbiased */

/* A 64-bit hash of a string (FNV-1a), to derive per-name streams from one seed. */
uint64_t cf_hash_str(const char *s);

#endif
