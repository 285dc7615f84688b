/* rng.c - xoshiro256** (Blackman and Vigna), seeded through splitmix64. */
#include <math.h>
#include <string.h>

#include "core/rng.h"

static uint64_t splitmix64(uint64_t *x)
{
    return cf_rng_mix(*x += 0x9e3779b97f4a7c15ull);
}

void cf_rng_seed(cf_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t cf_rng_next(cf_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

float cf_rng_uniform(cf_rng *r) { return (float)(cf_rng_next(r) >> 40) * 0x1.0p-24f; }

float cf_rng_normal(cf_rng *r)
{
    /* Box-Muller in double; u1 in (0, 1] so the log is finite. */
    double u1 = ((double)(cf_rng_next(r) >> 11) + 1.0) * 0x1.0p-53;
    double u2 = (double)(cf_rng_next(r) >> 11) * 0x1.0p-53;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

uint32_t cf_rng_below(cf_rng *r, uint32_t n)
{
    /* Lemire's multiply-shift with rejection. */
    uint64_t m = (uint64_t)(uint32_t)(cf_rng_next(r) >> 32) * n;
    uint32_t low = (uint32_t)m;
    if (low < n) {
        uint32_t t = (uint32_t)-n % n;
        while (low < t) {
            m = (uint64_t)(uint32_t)(cf_rng_next(r) >> 32) * n;
            low = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

uint64_t cf_hash_str(const char *s)
{
    return cf_fnv1a(CF_FNV_OFFSET, s, strlen(s));
}
