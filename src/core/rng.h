/* rng.h - the one random generator: explicit state, xoshiro256** seeded by splitmix64.
 * Same seed, same sequence, on every machine. */
#ifndef CF_CORE_RNG_H
#define CF_CORE_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct cf_rng {
    uint64_t s[4];
} cf_rng;

void     cf_rng_seed(cf_rng *r, uint64_t seed);
uint64_t cf_rng_next(cf_rng *r);
float    cf_rng_uniform(cf_rng *r);          /* [0, 1) */
float    cf_rng_normal(cf_rng *r);           /* mean 0, std 1 */
uint32_t cf_rng_below(cf_rng *r, uint32_t n); /* [0, n), unbiased */

/* A 64-bit finaliser (splitmix64's): every bit of z moves about half of the result. */
static inline uint64_t cf_rng_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A counter-based stream: the number for (key, index) alone, uniform in [0, 1), so
 * that any thread computing element `index` gets the same one (splitmix64 of both). */
static inline float cf_rng_at(uint64_t key, uint64_t index)
{
    return (float)(cf_rng_mix(key ^ (index * 0x9e3779b97f4a7c15ull)) >> 40) * (1.0f / 16777216.0f);
}

/* FNV-1a, the one 64-bit hash of bytes: h (CF_FNV_OFFSET to start) folded with p[0 .. n).
 * Checkpoint identities, graph hashes and per-name random streams are made with it:
 * changing it changes them all. */
#define CF_FNV_OFFSET 0xcbf29ce484222325ull
static inline uint64_t cf_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* A 64-bit hash of a string (FNV-1a), to derive per-name streams from one seed. */
uint64_t cf_hash_str(const char *s);

#endif
