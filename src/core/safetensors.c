/* safetensors.c - the safetensors reader and crash-safe writer (see safetensors.h).
 *
 * Reading goes in stages, and nothing is allocated for tensor data until every
 * stage has passed: the length field; a byte scan of the header (UTF-8, control
 * characters, number syntax, \u0000: what cJSON lets through but the reference
 * does not); cJSON; each entry on its own (dtype, shape, offsets, byte length);
 * then the entries together (duplicate names, truncation, holes and overlaps,
 * trailing bytes); then one block for all values, converted to float32.
 *
 * Writing checks every argument, builds the header in memory (by hand, so the
 * numbers are always plain integers), and writes it with the data to a temporary
 * file that is renamed over the target. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cflux.h"
#include "core/error.h"
#include "core/safetensors.h"

typedef struct meta_pair { const char *key, *value; } meta_pair;
typedef struct name_index { const char *name; int i; } name_index;

struct cf_st_file {
    int n;               /* tensors */
    cf_st_tensor *t;     /* (n), in data order */
    int *byname;         /* (n) indices into t, sorted by name */
    int nmeta;
    meta_pair *meta;     /* (nmeta), sorted by key */
    char *strings;       /* every name, key and value, one block */
    float *data;         /* every tensor's values, one block, in data order */
};

/* ---- dtypes ---- */

enum { DT_F32, DT_F64, DT_F16, DT_BF16, DT_I8, DT_COUNT };
static const char *const dt_name[DT_COUNT] = {"F32", "F64", "F16", "BF16", "I8"};
static const int dt_size[DT_COUNT] = {4, 8, 2, 2, 1};

/* The other dtypes of the format: known, but not read by cflux. */
static const char *const dt_other[] = {
    "BOOL", "U8", "I16", "U16", "I32", "U32", "I64", "U64", "C64",
    "F8_E5M2", "F8_E4M3", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", NULL};

/* Their sizes in bytes; 0 for those of fewer bits than a byte, which a file with
 * CF_ST_OTHER_DTYPES still refuses. */
static const int dt_other_size[] = {1, 1, 2, 2, 4, 4, 8, 8, 8, 1, 1, 1, 0, 0, 0};

#define DT_READS "cflux reads F32, F64, F16, BF16 and, for quantized weights, I8"

static uint16_t ld16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t ld32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t ld64(const unsigned char *p) { return ld32(p) | (uint64_t)ld32(p + 4) << 32; }

static float bits_to_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* IEEE half to float: exact for every value, subnormals, infinities and NaNs included. */
static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0) {
        float f = ldexpf((float)m, -24);
        return sign ? -f : f;
    }
    if (e == 31) return bits_to_float(sign | 0x7f800000u | m << 13);
    return bits_to_float(sign | (e + 112) << 23 | m << 13);
}

/* Convert count values of dtype dt at src (little-endian) to float32 at dst. */
static void convert(float *dst, const unsigned char *src, size_t count, int dt)
{
    size_t i;
    switch (dt) {
    case DT_F32:
        for (i = 0; i < count; i++) dst[i] = bits_to_float(ld32(src + 4 * i));
        break;
    case DT_F64:
        for (i = 0; i < count; i++) {
            uint64_t u = ld64(src + 8 * i);
            double d;
            memcpy(&d, &u, 8);
            dst[i] = (float)d;
        }
        break;
    case DT_F16:
        for (i = 0; i < count; i++) dst[i] = half_to_float(ld16(src + 2 * i));
        break;
    case DT_BF16:
        for (i = 0; i < count; i++) dst[i] = bits_to_float((uint32_t)ld16(src + 2 * i) << 16);
        break;
    case DT_I8:
        for (i = 0; i < count; i++) dst[i] = (float)(int8_t)src[i];
        break;
    }
}

/* ---- small helpers ---- */

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0 if it is not one:
 * no overlong forms, no surrogates, nothing past U+10FFFF (as Rust's from_utf8). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0], cp, min;
    size_t len, k;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2, cp = c & 0x1f, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3, cp = c & 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (len > n) return 0;
    for (k = 1; k < len; k++) {
        if ((s[k] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (s[k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return len;
}

static int valid_utf8(const char *s)
{
    size_t n = strlen(s), i = 0, k;
    while (i < n) {
        if (!(k = utf8_seq((const unsigned char *)s + i, n - i))) return 0;
        i += k;
    }
    return 1;
}

/* "[2, 3]" into buf (truncated with "..." if it does not fit). */
static const char *fmt_shape(char *buf, size_t size, int rank, const long long *shape)
{
    size_t len = 0;
    int i;
    len += snprintf(buf, size, "[");
    for (i = 0; i < rank && len < size; i++)
        len += snprintf(buf + len, size - len, "%s%lld", i ? ", " : "", shape[i]);
    if (len < size) snprintf(buf + len, size - len, "]");
    return buf;
}

static const char *json_kind(const cJSON *v)
{
    if (cJSON_IsNumber(v)) return "a number";
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsObject(v)) return "an object";
    if (cJSON_IsBool(v)) return "a boolean";
    if (cJSON_IsNull(v)) return "null";
    return "something else";
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* ---- reading ---- */

/* One tensor entry of the header, checked on its own. */
typedef struct entry {
    const char *name;      /* in the cJSON tree */
    int dt, rank, index;   /* index: position in the header */
    int other;             /* dt == DT_COUNT: the index in dt_other (kept, not read) */
    long long shape[CF_ST_MAXDIMS];
    size_t count;
    uint64_t begin, end;
    int pos;               /* position in data order */
} entry;

static int cmp_entry_name(const void *a, const void *b)
{
    return strcmp((*(const entry *const *)a)->name, (*(const entry *const *)b)->name);
}

static int cmp_entry_offset(const void *a, const void *b)
{
    const entry *x = *(const entry *const *)a, *y = *(const entry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return x->index - y->index;
}

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* Length of the JSON number at s, strictly by the grammar
 * -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, or 0 if malformed: cJSON takes
 * "01", "1." or "-" as numbers (strtod does), the reference does not. */
static size_t json_number(const unsigned char *s, size_t n)
{
    size_t j = s[0] == '-';
    if (j < n && s[j] == '0') j++;
    else if (j < n && s[j] >= '1' && s[j] <= '9') while (j < n && is_digit(s[j])) j++;
    else return 0;
    if (j < n && s[j] == '.') {
        if (++j >= n || !is_digit(s[j])) return 0;
        while (j < n && is_digit(s[j])) j++;
    }
    if (j < n && (s[j] == 'e' || s[j] == 'E')) {
        if (++j < n && (s[j] == '+' || s[j] == '-')) j++;
        if (j >= n || !is_digit(s[j])) return 0;
        while (j < n && is_digit(s[j])) j++;
    }
    if (j < n && (is_digit(s[j]) || s[j] == '.' || s[j] == 'e' || s[j] == 'E' || s[j] == '+' ||
                  s[j] == '-'))
        return 0;
    return j;
}

/* Check the header's bytes before cJSON sees them: valid UTF-8 (the reference
 * demands it); no control characters, except JSON's whitespace outside strings
 * (cJSON would skip any byte below 0x20 as whitespace, and keep them in strings);
 * numbers as JSON's grammar has them; nothing but ASCII outside strings; and no \u0000 escape, which a C string
 * cannot hold. */
static int scan_header(const unsigned char *s, size_t n, const char *what)
{
    int instr = 0;
    size_t i = 0, k;
    while (i < n) {
        unsigned c = s[i];
        if (c >= 0x80) {
            if (!(k = utf8_seq(s + i, n - i)))
                return cf_seterr("error: %s: the header is not valid UTF-8 (byte %zu of the header)",
                                 what, i);
            if (!instr) /* a byte-order mark, which cJSON would skip */
                return cf_seterr("error: %s: the header has a non-ASCII character outside a "
                                 "string at byte %zu", what, i);
            i += k;
            continue;
        }
        if (c < 0x20 && (instr || !(c == ' ' || c == '\t' || c == '\n' || c == '\r')))
            return cf_seterr("error: %s: the header has a control character (0x%02x) at byte %zu",
                             what, c, i);
        if (!instr && (c == '-' || (c >= '0' && c <= '9'))) {
            if (!(k = json_number(s + i, n - i)))
                return cf_seterr("error: %s: the header has a malformed number at byte %zu", what, i);
            i += k;
            continue;
        }
        if (c == '"') instr = !instr;
        if (instr && c == '\\' && i + 1 < n && s[i + 1] >= 0x20 && s[i + 1] < 0x80) {
            if (s[i + 1] == 'u' && i + 6 <= n && !memcmp(s + i + 2, "0000", 4))
                return cf_seterr("error: %s: the header has a \\u0000 escape at byte %zu "
                                 "(a name or value cannot hold a NUL character)", what, i);
            i += 2;
            continue;
        }
        i++;
    }
    return 0;
}

/* A JSON number that is a non-negative integer below 2^53 (from there on, the double
 * that cJSON keeps may be a rounded value). By value: "4", "4.0" and "4e0" are all 4
 * (the reference takes only "4"; the value read is the same). */
static int get_uint(const cJSON *v, uint64_t *out, const char *what, const char *tname,
                    const char *field, int i)
{
    double d;
    if (!cJSON_IsNumber(v))
        return cf_seterr("error: %s: tensor '%s': %s[%d] is %s, not an integer",
                         what, tname, field, i, json_kind(v));
    d = v->valuedouble;
    if (d < 0)
        return cf_seterr("error: %s: tensor '%s': %s[%d] is negative (%g)", what, tname, field, i, d);
    if (d != floor(d))
        return cf_seterr("error: %s: tensor '%s': %s[%d] is not an integer (%g)", what, tname, field, i, d);
    if (d >= 9007199254740992.0)
        return cf_seterr("error: %s: tensor '%s': %s[%d] is too large (%g)", what, tname, field, i, d);
    *out = (uint64_t)d;
    return 0;
}

/* Check one tensor entry: an object with dtype, shape and data_offsets, whose byte
 * length is its element count times its dtype size. Unknown fields are ignored, as
 * the reference does; a field given twice is an error. */
static int check_entry(const cJSON *obj, entry *e, const char *what, unsigned flags)
{
    const char *tn = e->name;
    const cJSON *dtype = NULL, *shape = NULL, *offs = NULL, *c;
    uint64_t count = 1, nbytes, u;
    int i, n;
    char sbuf[160];

    if (!cJSON_IsObject(obj))
        return cf_seterr("error: %s: tensor '%s' is %s, not an object with dtype, shape and "
                         "data_offsets", what, tn, json_kind(obj));
    for (c = obj->child; c; c = c->next) {
        const cJSON **slot = !strcmp(c->string, "dtype") ? &dtype
                           : !strcmp(c->string, "shape") ? &shape
                           : !strcmp(c->string, "data_offsets") ? &offs : NULL;
        if (!slot) continue;
        if (*slot)
            return cf_seterr("error: %s: tensor '%s' has '%s' twice", what, tn, c->string);
        *slot = c;
    }
    if (!dtype) return cf_seterr("error: %s: tensor '%s' has no dtype", what, tn);
    if (!shape) return cf_seterr("error: %s: tensor '%s' has no shape", what, tn);
    if (!offs) return cf_seterr("error: %s: tensor '%s' has no data_offsets", what, tn);

    if (!cJSON_IsString(dtype))
        return cf_seterr("error: %s: tensor '%s': dtype is %s, not a string", what, tn,
                         json_kind(dtype));
    for (e->dt = 0; e->dt < DT_COUNT; e->dt++)
        if (!strcmp(dtype->valuestring, dt_name[e->dt])) break;
    int size = e->dt < DT_COUNT ? dt_size[e->dt] : 0;
    if (e->dt == DT_COUNT) {
        for (i = 0; dt_other[i]; i++)
            if (!strcmp(dtype->valuestring, dt_other[i])) break;
        if (!dt_other[i])
            return cf_seterr("error: %s: tensor '%s' has unknown dtype '%s' (" DT_READS ")",
                             what, tn, dtype->valuestring);
        if (!(flags & CF_ST_OTHER_DTYPES) || !dt_other_size[i])
            return cf_seterr("error: %s: tensor '%s' has dtype %s, which cflux does not read "
                             "(" DT_READS ")", what, tn, dtype->valuestring);
        e->other = i;
        size = dt_other_size[i];
    }

    if (!cJSON_IsArray(shape))
        return cf_seterr("error: %s: tensor '%s': shape is %s, not an array", what, tn,
                         json_kind(shape));
    n = cJSON_GetArraySize(shape);
    if (n > CF_ST_MAXDIMS)
        return cf_seterr("error: %s: tensor '%s' has %d dimensions; cflux handles at most %d",
                         what, tn, n, CF_ST_MAXDIMS);
    e->rank = n;
    for (i = 0, c = shape->child; c; c = c->next, i++) {
        if (get_uint(c, &u, what, tn, "shape", i)) return -1;
        e->shape[i] = (long long)u;
    }
    for (i = 0; i < n; i++)
        if (__builtin_mul_overflow(count, (uint64_t)e->shape[i], &count))
            return cf_seterr("error: %s: tensor '%s': shape %s has too many elements (overflow)",
                             what, tn, fmt_shape(sbuf, sizeof sbuf, n, e->shape));
    if (__builtin_mul_overflow(count, (uint64_t)size, &nbytes) || count > SIZE_MAX)
        return cf_seterr("error: %s: tensor '%s': shape %s of %s is too many bytes (overflow)",
                         what, tn, fmt_shape(sbuf, sizeof sbuf, n, e->shape), dtype->valuestring);
    e->count = (size_t)count;

    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2)
        return cf_seterr("error: %s: tensor '%s': data_offsets is %s, not [begin, end]", what, tn,
                         cJSON_IsArray(offs) ? "an array of another length" : json_kind(offs));
    if (get_uint(offs->child, &e->begin, what, tn, "data_offsets", 0)) return -1;
    if (get_uint(offs->child->next, &e->end, what, tn, "data_offsets", 1)) return -1;
    if (e->begin > e->end)
        return cf_seterr("error: %s: tensor '%s': data_offsets [%llu, %llu] end before they begin",
                         what, tn, (unsigned long long)e->begin, (unsigned long long)e->end);
    if (e->end - e->begin != nbytes)
        return cf_seterr("error: %s: tensor '%s' has %llu bytes of data (data_offsets [%llu, %llu]) "
                         "but shape %s of %s needs %llu", what, tn,
                         (unsigned long long)(e->end - e->begin), (unsigned long long)e->begin,
                         (unsigned long long)e->end, fmt_shape(sbuf, sizeof sbuf, n, e->shape),
                         dtype->valuestring, (unsigned long long)nbytes);
    return 0;
}

/* Check the entries together: names unique, data within the buffer, and, in order
 * of offsets, the tensors covering the buffer exactly. Fills in e->pos. */
static int check_layout(entry *ents, int n, uint64_t datalen, const char *what)
{
    entry **by = malloc(sizeof *by * (n + 1));
    uint64_t maxend = 0, at = 0;
    int i, rc = -1;
    if (!by) return cf_oom(sizeof *by * (n + 1));
    for (i = 0; i < n; i++) by[i] = &ents[i];

    qsort(by, n, sizeof *by, cmp_entry_name);
    for (i = 1; i < n; i++)
        if (!strcmp(by[i]->name, by[i - 1]->name)) {
            cf_seterr("error: %s: tensor '%s' appears twice in the header", what, by[i]->name);
            goto out;
        }

    for (i = 0; i < n; i++)
        if (ents[i].end > maxend) maxend = ents[i].end;
    if (maxend > datalen) {
        cf_seterr("error: %s: truncated: the header says %llu bytes of tensor data but the file "
                  "has %llu", what, (unsigned long long)maxend, (unsigned long long)datalen);
        goto out;
    }

    qsort(by, n, sizeof *by, cmp_entry_offset);
    for (i = 0; i < n; i++) {
        entry *e = by[i];
        if (e->begin > at) {
            cf_seterr("error: %s: bytes %llu..%llu of the data buffer belong to no tensor (a hole "
                      "before tensor '%s')", what, (unsigned long long)at,
                      (unsigned long long)e->begin, e->name);
            goto out;
        }
        if (e->begin < at) {
            cf_seterr("error: %s: tensor '%s' (bytes %llu..%llu) overlaps tensor '%s' (bytes "
                      "%llu..%llu)", what, e->name, (unsigned long long)e->begin,
                      (unsigned long long)e->end, by[i - 1]->name,
                      (unsigned long long)by[i - 1]->begin, (unsigned long long)by[i - 1]->end);
            goto out;
        }
        at = e->end;
        e->pos = i;
    }
    if (at != datalen) {
        cf_seterr("error: %s: the tensors cover %llu bytes of data but the file has %llu after the "
                  "header (trailing bytes)", what, (unsigned long long)at,
                  (unsigned long long)datalen);
        goto out;
    }
    rc = 0;
out:
    free(by);
    return rc;
}

/* Check __metadata__: null, or an object whose values are all strings, keys unique. */
static int check_meta(const cJSON *meta, const char *what)
{
    const cJSON *c;
    const char **keys;
    int n = 0, i, rc = 0;
    if (!meta || cJSON_IsNull(meta)) return 0;
    if (!cJSON_IsObject(meta))
        return cf_seterr("error: %s: __metadata__ is %s, not an object of strings", what,
                         json_kind(meta));
    for (c = meta->child; c; c = c->next, n++)
        if (!cJSON_IsString(c))
            return cf_seterr("error: %s: __metadata__ '%s' is %s, not a string", what, c->string,
                             json_kind(c));
    if (!(keys = malloc(sizeof *keys * (n + 1)))) return cf_oom(sizeof *keys * (n + 1));
    for (i = 0, c = meta->child; c; c = c->next) keys[i++] = c->string;
    qsort(keys, n, sizeof *keys, cmp_str);
    for (i = 1; i < n && !rc; i++)
        if (!strcmp(keys[i], keys[i - 1]))
            rc = cf_seterr("error: %s: __metadata__ has key '%s' twice", what, keys[i]);
    free(keys);
    return rc;
}

/* Where the tensors' values come from: memory (data), or the file fp from byte off on
 * (data NULL); which of them are read: every one (want NULL), or those want says,
 * none with CF_ST_HEADER_ONLY. */
typedef struct source {
    const unsigned char *data;
    FILE *fp;
    uint64_t off;
    cf_st_want_fn *want;
    void *user;
    unsigned flags;
    const char *what;
} source;

/* Tensor e's bytes from the file into dst (bytes long): 0, or -1 with the message. */
static int read_at(const source *src, const entry *e, unsigned char *dst)
{
    size_t bytes = (size_t)(e->end - e->begin);
    if (fseeko(src->fp, (off_t)(src->off + e->begin), SEEK_SET) || fread(dst, 1, bytes, src->fp) != bytes)
        return cf_seterr("error: %s: cannot read tensor '%s' (%zu bytes at byte %llu): %s", src->what, e->name, bytes,
                         (unsigned long long)(src->off + e->begin),
                         ferror(src->fp) ? strerror(errno) : "the file is shorter than its header says");
    return 0;
}

/* Everything is checked: copy names, metadata and the converted values wanted into f.
 * bypos[i] is the entry whose data comes i-th in the buffer. */
static cf_st_file *build(entry *const *bypos, int n, const cJSON *meta, const source *src)
{
    cf_st_file *f = calloc(1, sizeof *f);
    int nmeta = cJSON_IsObject(meta) ? cJSON_GetArraySize(meta) : 0, i;
    size_t nstr = 0, nval = 0, at = 0, most = 0;
    const cJSON *c;
    name_index *byname = NULL;
    unsigned char *tmp = NULL, *wanted = calloc((size_t)n + 1, 1);
    char *s;

    if (!f || !wanted) {
        free(f);
        free(wanted);
        cf_oom(sizeof *f + (size_t)n + 1);
        return NULL;
    }
    for (i = 0; i < n; i++) nstr += strlen(bypos[i]->name) + 1;
    for (c = nmeta ? meta->child : NULL; c; c = c->next)
        nstr += strlen(c->string) + strlen(c->valuestring) + 2;
    f->n = n;
    f->nmeta = nmeta;
    f->t = calloc(n + 1, sizeof *f->t);
    f->byname = calloc(n + 1, sizeof *f->byname);
    f->meta = calloc(nmeta + 1, sizeof *f->meta);
    f->strings = s = malloc(nstr + 1);
    byname = malloc(sizeof *byname * (n + 1));
    if (!f->t || !f->byname || !f->meta || !s || !byname) {
        cf_oom(nstr + sizeof *f->t * (n + 1));
        goto fail;
    }
    /* the metadata first, so that want can read it */
    for (i = 0, c = nmeta ? meta->child : NULL; c; c = c->next, i++) {
        size_t kl = strlen(c->string) + 1, vl = strlen(c->valuestring) + 1;
        f->meta[i].key = memcpy(s, c->string, kl);
        s += kl;
        f->meta[i].value = memcpy(s, c->valuestring, vl);
        s += vl;
    }
    qsort(f->meta, nmeta, sizeof *f->meta, cmp_str); /* the key is the first member */
    for (i = 0; i < n; i++) {
        const entry *e = bypos[i];
        cf_st_tensor *t = &f->t[i];
        size_t len = strlen(e->name) + 1;
        t->name = memcpy(s, e->name, len);
        s += len;
        t->rank = e->rank;
        memcpy(t->shape, e->shape, sizeof t->shape);
        t->count = e->count;
        t->dtype = e->dt < DT_COUNT ? dt_name[e->dt] : dt_other[e->other];
        if (e->dt < DT_COUNT && !(src->flags & CF_ST_HEADER_ONLY) && (!src->want || src->want(f, t->name, src->user))) {
            wanted[i] = 1;
            nval += e->count;
            if (e->dt != DT_F32 && e->end - e->begin > most) most = (size_t)(e->end - e->begin);
        }
    }
    f->data = malloc(sizeof *f->data * (nval + 1));
    if (src->fp && most) tmp = malloc(most);
    if (!f->data || (src->fp && most && !tmp)) {
        cf_oom(sizeof *f->data * (nval + 1) + most);
        goto fail;
    }
    for (i = 0; i < n; i++) {
        const entry *e = bypos[i];
        cf_st_tensor *t = &f->t[i];
        if (wanted[i]) {
            float *dst = f->data + at;
            const unsigned char *from = src->data ? src->data + e->begin : e->dt == DT_F32 ? (unsigned char *)dst : tmp;
            if (!src->data && read_at(src, e, (unsigned char *)from)) goto fail;
            convert(dst, from, e->count, e->dt);   /* in place for F32 from the file: each value read, then written */
            t->data = dst;
            at += e->count;
        }
        byname[i].name = t->name;
        byname[i].i = i;
    }
    qsort(byname, n, sizeof *byname, cmp_str); /* the name is the first member */
    for (i = 0; i < n; i++) f->byname[i] = byname[i].i;
    free(byname);
    free(tmp);
    free(wanted);
    return f;
fail:
    free(byname);
    free(tmp);
    free(wanted);
    cf_st_free(f);
    return NULL;
}

cf_st_file *cf_st_parse(const void *buf, size_t len, const char *what) { return cf_st_parse_ex(buf, len, what, 0); }

/* The file's first len bytes at b (its length field and header, or all of it), of
 * total bytes in all; its values from src. */
static cf_st_file *parse(const unsigned char *b, size_t len, uint64_t total, const source *src)
{
    const char *hdr, *end = NULL, *what = src->what;
    uint64_t hlen;
    cJSON *root = NULL, *meta = NULL, *c;
    entry *ents = NULL, **bypos = NULL;
    cf_st_file *f = NULL;
    int n = 0, i;

    if (!b || total < 8) {
        cf_seterr("error: %s: too short to be a safetensors file (%llu bytes; the header length "
                  "alone takes 8)", what, (unsigned long long)(b ? total : 0));
        return NULL;
    }
    hlen = ld64(b);
    /* what a PyTorch user hands over in its place: torch.save's zip, or its older pickle */
    if (hlen > CF_ST_MAX_HEADER && (!memcmp(b, "PK\x03\x04", 4) || (b[0] == 0x80 && b[1] >= 2 && b[1] <= 5))) {
        cf_seterr("error: %s: %s, as torch.save writes, not a safetensors file: save the weights with "
                  "safetensors.torch.save_file(model.state_dict(), \"weights.safetensors\")", what,
                  b[0] == 'P' ? "a zip archive" : "a Python pickle");
        return NULL;
    }
    if (hlen > CF_ST_MAX_HEADER) {
        cf_seterr("error: %s: the header length is %llu bytes, over the limit of %llu (not a "
                  "safetensors file?)", what, (unsigned long long)hlen, CF_ST_MAX_HEADER);
        return NULL;
    }
    if (hlen > total - 8) {
        cf_seterr("error: %s: truncated: the header length is %llu bytes but the file has only "
                  "%llu after the length field", what, (unsigned long long)hlen, (unsigned long long)(total - 8));
        return NULL;
    }
    if (hlen > len - 8) {   /* the caller read less than the header: a file that shrank */
        cf_seterr("error: %s: cannot read the header: the file is shorter than its length said", what);
        return NULL;
    }
    hdr = (const char *)b + 8;
    if (scan_header(b + 8, hlen, what)) return NULL;
    root = cJSON_ParseWithLengthOpts(hdr, hlen, &end, 0);
    if (!root) {
        size_t at = end && end >= hdr && end <= hdr + hlen ? (size_t)(end - hdr) : 0;
        cf_seterr("error: %s: the header is not valid JSON (at byte %zu of %llu)", what, at,
                  (unsigned long long)hlen);
        return NULL;
    }
    for (; end && end < hdr + hlen; end++)
        if (!(*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')) {
            cf_seterr("error: %s: the header has more after its JSON value (at byte %zu)", what,
                      (size_t)(end - hdr));
            goto out;
        }
    if (!cJSON_IsObject(root)) {
        cf_seterr("error: %s: the header is %s, not a JSON object", what, json_kind(root));
        goto out;
    }

    for (c = root->child; c; c = c->next)
        if (strcmp(c->string, "__metadata__")) n++;
        else if (meta) {
            cf_seterr("error: %s: the header has __metadata__ twice", what);
            goto out;
        } else meta = c;
    if (check_meta(meta, what)) goto out;

    ents = calloc(n + 1, sizeof *ents);
    bypos = calloc(n + 1, sizeof *bypos);
    if (!ents || !bypos) {
        cf_oom(sizeof *ents * (n + 1));
        goto out;
    }
    for (i = 0, c = root->child; c; c = c->next) {
        if (c == meta) continue;
        ents[i].name = c->string;
        ents[i].index = i;
        if (check_entry(c, &ents[i], what, src->flags)) goto out;
        i++;
    }
    if (check_layout(ents, n, total - 8 - hlen, what)) goto out;
    for (i = 0; i < n; i++) bypos[ents[i].pos] = &ents[i];
    source from = *src;
    if (from.data) from.data = b + 8 + hlen;
    from.off = 8 + hlen;
    f = build(bypos, n, meta, &from);
out:
    free(ents);
    free(bypos);
    cJSON_Delete(root);
    return f;
}

cf_st_file *cf_st_parse_ex(const void *buf, size_t len, const char *what, unsigned flags)
{
    source src = {.data = buf, .flags = flags, .what = what ? what : "safetensors data"};
    return parse(buf, len, len, &src);
}

cf_st_file *cf_st_read(const char *path) { return cf_st_read_want(path, 0, NULL, NULL); }

cf_st_file *cf_st_read_ex(const char *path, unsigned flags) { return cf_st_read_want(path, flags, NULL, NULL); }

cf_st_file *cf_st_read_want(const char *path, unsigned flags, cf_st_want_fn *want, void *user)
{
    FILE *fp;
    struct stat st;
    unsigned char *buf = NULL;
    size_t len = 0, cap, got;
    cf_st_file *f = NULL;
    int e;

    if (!path) {
        cf_seterr("error: cf_st_read: no path given");
        return NULL;
    }
    if (!(fp = fopen(path, "rb"))) {
        cf_seterr("error: %s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    int stated = fstat(fileno(fp), &st) == 0;
    if (stated && S_ISDIR(st.st_mode)) {
        cf_seterr("error: %s: is a directory, not a safetensors file", path);
        fclose(fp);
        return NULL;
    }
    source src = {.fp = fp, .want = want, .user = user, .flags = flags, .what = path};
    if (stated && S_ISREG(st.st_mode) && (want || (flags & CF_ST_HEADER_ONLY))) {
        /* a part of it: the header read first, then the values wanted, each from its place */
        unsigned char head[8];
        uint64_t total = (uint64_t)st.st_size, hlen;
        if (total < 8) {
            f = parse(head, 0, total, &src);   /* too short */
            goto out;
        }
        if (fread(head, 1, 8, fp) != 8) {
            cf_seterr("error: %s: cannot read: %s", path, ferror(fp) ? strerror(errno) : "the file shrank");
            goto out;
        }
        hlen = ld64(head);
        if (hlen > CF_ST_MAX_HEADER || hlen > total - 8) {
            f = parse(head, 8, total, &src);
            goto out;
        }
        if (!(buf = malloc((size_t)hlen + 8))) {
            cf_oom((size_t)hlen + 8);
            goto out;
        }
        memcpy(buf, head, 8);
        len = 8 + fread(buf + 8, 1, (size_t)hlen, fp);
        f = parse(buf, len, total, &src);
        goto out;
    }
    cap = stated && st.st_size > 0 ? (size_t)st.st_size + 1 : 4096;
    for (;;) {
        if (len == cap || !buf) {
            unsigned char *nb;
            if (buf) cap *= 2;
            if (!(nb = realloc(buf, cap))) {
                cf_oom(cap);
                goto out;
            }
            buf = nb;
        }
        got = fread(buf + len, 1, cap - len, fp);
        len += got;
        if (got == 0) break;
    }
    if (ferror(fp)) {
        e = errno;
        cf_seterr("error: %s: cannot read: %s", path, strerror(e));
        goto out;
    }
    src.fp = NULL;
    src.data = buf;
    f = parse(buf, len, len, &src);
out:
    free(buf);
    fclose(fp);
    return f;
}

int cf_st_count(const cf_st_file *f) { return f ? f->n : 0; }

const cf_st_tensor *cf_st_get(const cf_st_file *f, int i)
{
    return f && i >= 0 && i < f->n ? &f->t[i] : NULL;
}

const cf_st_tensor *cf_st_find(const cf_st_file *f, const char *name)
{
    int lo = 0, hi = f && name ? f->n : 0;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(name, f->t[f->byname[mid]].name);
        if (!c) return &f->t[f->byname[mid]];
        if (c < 0) hi = mid;
        else lo = mid + 1;
    }
    return NULL;
}

const char *cf_st_meta(const cf_st_file *f, const char *key)
{
    int lo = 0, hi = f && key ? f->nmeta : 0;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(key, f->meta[mid].key);
        if (!c) return f->meta[mid].value;
        if (c < 0) hi = mid;
        else lo = mid + 1;
    }
    return NULL;
}

int cf_st_meta_count(const cf_st_file *f) { return f ? f->nmeta : 0; }

const char *cf_st_meta_at(const cf_st_file *f, int i, const char **value)
{
    int ok = f && i >= 0 && i < f->nmeta;
    if (value) *value = ok ? f->meta[i].value : NULL;
    return ok ? f->meta[i].key : NULL;
}

void cf_st_free(cf_st_file *f)
{
    if (!f) return;
    free(f->t);
    free(f->byname);
    free(f->meta);
    free(f->strings);
    free(f->data);
    free(f);
}

/* ---- writing ---- */

/* A growing string; oom is sticky, so appends need no checks in between. */
typedef struct strbuf { char *p; size_t len, cap; int oom; } strbuf;

static void sb_add(strbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        char *np;
        while (cap < b->len + n + 1) cap *= 2;
        if (!(np = realloc(b->p, cap))) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void sb_str(strbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

static void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(strbuf *b, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    sb_str(b, tmp);
}

/* s as a JSON string: quotes, backslashes and control characters escaped; the rest
 * (valid UTF-8, checked before) as it is. */
static void sb_json(strbuf *b, const char *s)
{
    sb_add(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            sb_add(b, esc, 2);
        } else if (c < 0x20) {
            sb_printf(b, "\\u%04x", c);
        } else {
            sb_add(b, (const char *)&c, 1);
        }
    }
    sb_add(b, "\"", 1);
}

/* Check the arguments of cf_st_write; 0 or the message. */
static int check_write_args(const char *path, int n, const cf_st_tensor *t, int nmeta,
                            const char *const *keys, const char *const *values)
{
    const char **names;
    int i, d, rc = 0;
    char sbuf[160];

    if (n < 0 || nmeta < 0 || (n > 0 && !t) || (nmeta > 0 && (!keys || !values)))
        return cf_seterr("error: %s: cf_st_write: bad arguments (%d tensors, %d metadata pairs)",
                         path, n, nmeta);
    for (i = 0; i < n; i++) {
        const cf_st_tensor *x = &t[i];
        uint64_t count = 1;
        if (!x->name || !x->name[0])
            return cf_seterr("error: %s: tensor %d has no name", path, i);
        if (!valid_utf8(x->name))
            return cf_seterr("error: %s: the name of tensor %d is not valid UTF-8", path, i);
        if (!strcmp(x->name, "__metadata__"))
            return cf_seterr("error: %s: tensor %d is called '__metadata__', a name the format "
                             "reserves", path, i);
        if (x->rank < 0 || x->rank > CF_ST_MAXDIMS)
            return cf_seterr("error: %s: tensor '%s' has rank %d; ranks are 0 to %d", path,
                             x->name, x->rank, CF_ST_MAXDIMS);
        for (d = 0; d < x->rank; d++) {
            if (x->shape[d] < 0)
                return cf_seterr("error: %s: tensor '%s' has a negative dimension in shape %s",
                                 path, x->name, fmt_shape(sbuf, sizeof sbuf, x->rank, x->shape));
            if (__builtin_mul_overflow(count, (uint64_t)x->shape[d], &count))
                count = UINT64_MAX;
        }
        if (count > SIZE_MAX / 4)
            return cf_seterr("error: %s: tensor '%s': shape %s is too large", path, x->name,
                             fmt_shape(sbuf, sizeof sbuf, x->rank, x->shape));
        if (count != x->count)
            return cf_seterr("error: %s: tensor '%s' has count %zu but shape %s has %llu elements",
                             path, x->name, x->count,
                             fmt_shape(sbuf, sizeof sbuf, x->rank, x->shape),
                             (unsigned long long)count);
        if (x->count && !x->data)
            return cf_seterr("error: %s: tensor '%s' has no data", path, x->name);
    }
    for (i = 0; i < nmeta; i++) {
        if (!keys[i] || !values[i])
            return cf_seterr("error: %s: metadata pair %d has no %s", path, i,
                             keys[i] ? "value" : "key");
        if (!valid_utf8(keys[i]) || !valid_utf8(values[i]))
            return cf_seterr("error: %s: metadata pair %d is not valid UTF-8", path, i);
    }

    if (!(names = malloc(sizeof *names * ((n > nmeta ? n : nmeta) + 1))))
        return cf_oom(sizeof *names * ((n > nmeta ? n : nmeta) + 1));
    for (i = 0; i < n; i++) names[i] = t[i].name;
    qsort(names, n, sizeof *names, cmp_str);
    for (i = 1; i < n && !rc; i++)
        if (!strcmp(names[i], names[i - 1]))
            rc = cf_seterr("error: %s: two tensors are called '%s'", path, names[i]);
    for (i = 0; i < nmeta; i++) names[i] = keys[i];
    qsort(names, nmeta, sizeof *names, cmp_str);
    for (i = 1; i < nmeta && !rc; i++)
        if (!strcmp(names[i], names[i - 1]))
            rc = cf_seterr("error: %s: metadata key '%s' is given twice", path, names[i]);
    free(names);
    return rc;
}

/* A tensor the writer writes as I64 or I8 (cf_st_tensor.dtype). */
static int is_i64(const cf_st_tensor *t) { return t->dtype && !strcmp(t->dtype, "I64"); }
static int is_i8(const cf_st_tensor *t) { return t->dtype && !strcmp(t->dtype, "I8"); }

/* The header JSON, space-padded to a multiple of 8 bytes; NULL on error. */
static char *make_header(const char *path, int n, const cf_st_tensor *t, int nmeta,
                         const char *const *keys, const char *const *values, size_t *hlen)
{
    strbuf b = {0};
    uint64_t off = 0;
    int i, d;

    sb_str(&b, "{");
    if (nmeta > 0) {
        sb_str(&b, "\"__metadata__\":{");
        for (i = 0; i < nmeta; i++) {
            if (i) sb_str(&b, ",");
            sb_json(&b, keys[i]);
            sb_str(&b, ":");
            sb_json(&b, values[i]);
        }
        sb_str(&b, "}");
    }
    for (i = 0; i < n; i++) {
        if (i || nmeta > 0) sb_str(&b, ",");
        sb_json(&b, t[i].name);
        sb_printf(&b, ":{\"dtype\":\"%s\",\"shape\":[", is_i64(&t[i]) ? "I64" : is_i8(&t[i]) ? "I8" : "F32");
        for (d = 0; d < t[i].rank; d++) sb_printf(&b, "%s%lld", d ? "," : "", t[i].shape[d]);
        sb_printf(&b, "],\"data_offsets\":[%llu,", (unsigned long long)off);
        off += (is_i64(&t[i]) ? 8 : is_i8(&t[i]) ? 1 : 4) * (uint64_t)t[i].count;
        sb_printf(&b, "%llu]}", (unsigned long long)off);
    }
    sb_str(&b, "}");
    while (!b.oom && b.len % 8) sb_str(&b, " ");   /* (a failed append adds nothing) */
    if (b.oom) {
        free(b.p);
        cf_oom(b.cap * 2);
        return NULL;
    }
    if (b.len > CF_ST_MAX_HEADER) {
        cf_seterr("error: %s: the header would be %zu bytes, over the format's limit of %llu",
                  path, b.len, CF_ST_MAX_HEADER);
        free(b.p);
        return NULL;
    }
    *hlen = b.len;
    return b.p;
}

int cf_write_floats_le(FILE *fp, const float *x, size_t count)
{
    unsigned char buf[4096];
    size_t i, k;
    while (count) {
        size_t m = count < sizeof buf / 4 ? count : sizeof buf / 4;
        for (i = 0; i < m; i++) {
            uint32_t u;
            memcpy(&u, &x[i], 4);
            for (k = 0; k < 4; k++) buf[4 * i + k] = (unsigned char)(u >> 8 * k);
        }
        if (fwrite(buf, 4, m, fp) != m) return -1;
        x += m;
        count -= m;
    }
    return 0;
}

/* The same for whole numbers held as floats, written as little-endian int64. */
static int write_i64(FILE *fp, const float *x, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        unsigned char buf[8];
        double v = x[i];
        uint64_t u = (uint64_t)(v >= -9e18 && v <= 9e18 ? (int64_t)v : 0);   /* NaN: 0 */
        for (int k = 0; k < 8; k++) buf[k] = (unsigned char)(u >> 8 * k);
        if (fwrite(buf, 1, 8, fp) != 8) return -1;
    }
    return 0;
}

/* Whole numbers in -128..127 held as floats, written as int8 (others clamped; NaN 0). */
static int write_i8(FILE *fp, const float *x, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        float v = x[i] > -128 ? x[i] : -128;
        v = v < 127 ? v : 127;
        if (fputc((unsigned char)(int8_t)(v == v ? (int)v : 0), fp) == EOF) return -1;
    }
    return 0;
}

int cf_st_write(const char *path, int n, const cf_st_tensor *tensors,
                int nmeta, const char *const *meta_keys, const char *const *meta_values)
{
    unsigned char len8[8];
    size_t hlen;
    char *hdr;

    if (!path || !path[0]) return cf_seterr("error: cf_st_write: no path given");
    if (check_write_args(path, n, tensors, nmeta, meta_keys, meta_values)) return -1;
    if (!(hdr = make_header(path, n, tensors, nmeta, meta_keys, meta_values, &hlen))) return -1;
    cf_file *f = cf_file_create(path);
    if (!f) {
        free(hdr);
        return -1;
    }
    FILE *fp = cf_file_stream(f);
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)hlen >> 8 * i);
    int ok = fwrite(len8, 1, 8, fp) == 8 && fwrite(hdr, 1, hlen, fp) == hlen;
    for (int i = 0; ok && i < n; i++)
        ok = !(is_i64(&tensors[i])  ? write_i64(fp, tensors[i].data, tensors[i].count)
               : is_i8(&tensors[i]) ? write_i8(fp, tensors[i].data, tensors[i].count)
                                    : cf_write_floats_le(fp, tensors[i].data, tensors[i].count));
    free(hdr);
    if (!ok) {
        int e = errno;
        cf_file_abort(f);
        return cf_seterr("error: %s: writing failed: %s", path, strerror(e ? e : EIO));
    }
    return cf_file_commit(f);
}
