/* num.c - strict numbers from text (see num.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "core/num.h"

int cf_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    if (!s || !((*s >= '0' && *s <= '9') || (*s == '-' && s[1] >= '0' && s[1] <= '9'))) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int cf_parse_u64(const char *s, uint64_t *out)
{
    if (!s || !(*s >= '0' && *s <= '9')) return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

int cf_parse_f64(const char *s, double lo, double hi, double *out)
{
    if (!s || !*s || *s == ' ' || *s == '\t' || *s == '\n') return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end || !isfinite(v) || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}
