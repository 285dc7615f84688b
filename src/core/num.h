/* num.h - numbers from text that strangers wrote (checkpoint metadata, options):
 * the whole string must be the number, in range, or it is refused. */
#ifndef CF_CORE_NUM_H
#define CF_CORE_NUM_H

#include <stdint.h>

/* A decimal integer in [lo, hi] filling all of s (no sign for unsigned): 0, or -1
 * (no message: the caller names the field). */
int cf_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out);
int cf_parse_u64(const char *s, uint64_t *out);
/* A finite number in [lo, hi] filling all of s. */
int cf_parse_f64(const char *s, double lo, double hi, double *out);

#endif
