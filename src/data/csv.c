/* csv.c - CSV files of numbers, one sample per row, plain or gzip'd, parsed while
 * they are read.
 *
 * Fields are separated by ','; spaces and tabs around a field, '\r\n' line ends, a
 * UTF-8 byte-order mark and blank lines are allowed. One column (label_col, 0-based,
 * negative from the end) is the target; the others, in order, are the features: the
 * sample shape is (features); for prediction a file may also be read as features
 * alone (targets 0). Every row has as many fields as the first. Messages name the
 * file and line, and count columns from 1 as a spreadsheet does.
 *
 * The file is read a chunk at a time (1 MiB) and each line is parsed as soon as it is
 * whole, so memory is the numbers plus a chunk and the line being put together (at
 * most 64 MiB). The numbers grow in counted blocks (core/mem.h): doubling while the
 * memory limit allows, then by what still fits, so a file with more numbers than the
 * limit holds is refused at the line where it passes it. */
#define _GNU_SOURCE /* strtof_l */
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "data/data.h"

#define CSV_CHUNK ((size_t)1 << 20)
#define CSV_MAX_LINE ((size_t)64 << 20)
#define CSV_FIRST_BYTES ((size_t)1 << 20)   /* the first allocation for the numbers */

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* ---- fields ---- */

/* Parse the field [s, e) into *out: 0, or 1 (not a number), or 2 (not finite).
 * Numbers are read in the C locale ('.' for the decimal point) whatever the
 * program's locale. The byte at e is never part of a number (a separator, a blank,
 * a line end or the NUL after the data read), so strtof stops at e or before it. */
static int parse_field(const char *s, const char *e, float *out, locale_t loc)
{
    while (s < e && is_blank(*s)) s++;
    while (e > s && is_blank(e[-1])) e--;
    if (s == e) return 1;
    /* the common case, a whole number of up to 9 digits: exact, and 10x faster */
    const char *t = s + (*s == '-' || *s == '+');
    if (t < e && e - t <= 9) {
        long v = 0;
        const char *u = t;
        while (u < e && *u >= '0' && *u <= '9') v = v * 10 + (*u++ - '0');
        if (u == e) {
            *out = *s == '-' ? -(float)v : (float)v;
            return 0;
        }
    }
    char *end;
    float v = strtof_l(s, &end, loc);
    if (end != e) return 1;
    if (!isfinite(v)) return 2;
    *out = v;
    return 0;
}

/* A field for a message: trimmed, at most 40 bytes. */
static void field_str(const char *s, const char *e, char *buf, size_t size)
{
    while (s < e && is_blank(*s)) s++;
    while (e > s && is_blank(e[-1])) e--;
    size_t n = (size_t)(e - s);
    if (n > 40) snprintf(buf, size, "%.37s...", s);
    else snprintf(buf, size, "%.*s", (int)n, s);
}

/* The fields of [s, e), counted by their separators. */
static size_t count_fields(const char *s, const char *e)
{
    size_t n = 1;
    while ((s = memchr(s, ',', (size_t)(e - s)))) n++, s++;
    return n;
}

/* ---- lines, a chunk at a time ---- */

typedef struct lines {
    gzFile f;
    const char *path;
    size_t chunk, max_line;
    char *buf;          /* buf[start, len): read, not yet handed out; buf[len] is 0 */
    size_t cap, start, len;
    size_t scanned;     /* bytes after start known to hold no '\n' */
    size_t total;       /* bytes read from the file */
    long line;          /* the number of the last line handed out */
    int eof;
} lines;

static int too_long(lines *r)
{
    char b[CF_MEM_STR];
    return cf_seterr("error: %s:%ld: the line is longer than %s, the most a CSV line may hold", r->path, r->line,
                     cf_mem_str(r->max_line, b));
}

/* Read the next chunk after what is left of the current line, moved to the front. */
static int fill(lines *r)
{
    size_t keep = r->len - r->start;
    if (r->start) memmove(r->buf, r->buf + r->start, keep);
    r->start = 0;
    r->len = keep;
    if (r->cap - r->len < r->chunk + 1) {
        size_t cap = 2 * r->cap, most = r->max_line + r->chunk + 1;
        if (cap > most) cap = most;
        if (cap < r->len + r->chunk + 1) cap = r->len + r->chunk + 1;
        char *b = realloc(r->buf, cap);
        if (!b) return cf_oom(cap);
        r->buf = b;
        r->cap = cap;
    }
    long got = cf_data_read(r->f, r->path, r->buf + r->len, r->chunk, &r->total);
    if (got < 0) return -1;
    r->len += (size_t)got;
    r->buf[r->len] = 0;
    r->eof = got == 0;
    return 0;
}

/* The next line [*s, *e), without its '\n': 1, 0 at the end of the file, -1 on error. */
static int next_line(lines *r, char **s, char **e)
{
    for (;;) {
        char *from = r->buf + r->start;
        char *nl = memchr(from + r->scanned, '\n', r->len - r->start - r->scanned);
        if (nl || (r->eof && r->start < r->len)) {
            char *end = nl ? nl : r->buf + r->len;
            r->line++;
            if ((size_t)(end - from) > r->max_line) return too_long(r);
            *s = from;
            *e = end;
            r->start = (size_t)(end - r->buf) + (nl != NULL);
            r->scanned = 0;
            return 1;
        }
        if (r->eof) return 0;
        r->scanned = r->len - r->start;
        if (r->scanned > r->max_line) {
            r->line++;
            return too_long(r);
        }
        if (fill(r)) return -1;
    }
}

/* ---- rows ---- */

typedef struct csv_state {
    const char *path;
    size_t ncols;     /* fields per row, from the first row */
    int has_label;    /* 0: every column is a feature (inputs alone, for prediction) */
    size_t lcol;      /* the label column, when there is one */
    long first_line;
    size_t rows, cap; /* rows read, rows that x and y have room for */
    float *x, *y, *row;
    char *names;      /* the header's names (see data.h), or NULL */
    locale_t loc;     /* the C locale, for strtof_l */
} csv_state;

/* Parse the fields of one line into row[0 .. ncols). 0, or -1 with the message. */
static int parse_row(csv_state *c, const char *p, const char *q, long line)
{
    size_t col = 0;
    for (const char *s = p;; col++) {
        const char *e = memchr(s, ',', (size_t)(q - s));
        if (!e) e = q;
        int bad = parse_field(s, e, &c->row[col], c->loc);
        if (bad) {
            char f[48];
            field_str(s, e, f, sizeof f);
            if (!*f) return cf_seterr("error: %s:%ld: an empty field (column %zu)", c->path, line, col + 1);
            return cf_seterr("error: %s:%ld: '%s' is not a %snumber (column %zu)", c->path, line, f,
                             bad == 2 ? "finite " : "", col + 1);
        }
        if (e == q) break;
        s = e + 1;
    }
    return 0;
}

/* Counted bytes that c holds. */
static size_t held(const csv_state *c)
{
    const void *blocks[4] = {c->x, c->y, c->row, c->names};
    size_t n = 0;
    for (int i = 0; i < 4; i++) n += blocks[i] ? cf_mem_size(blocks[i]) : 0;
    return n;
}

/* Room for more rows: doubling while the memory limit allows, then what still fits. */
static int grow(csv_state *c, long line)
{
    size_t nf = c->ncols - (size_t)c->has_label, per_row = (nf + 1) * sizeof(float);
    size_t most = CF_DATA_MAX_ELEMS / nf;
    if (c->cap >= most)
        return cf_seterr("error: %s: more than %zu rows of %zu features, the limit of %zu values", c->path, c->rows, nf,
                         CF_DATA_MAX_ELEMS);
    size_t add = c->cap ? c->cap : CSV_FIRST_BYTES / per_row, fit = cf_mem_room() / per_row;
    if (add < 1) add = 1;
    if (add > most - c->cap) add = most - c->cap;
    if (add > fit) add = fit;
    char b[CF_MEM_STR];
    if (!add && c->rows)
        return cf_mem_refuse(held(c), "%s:%ld: the data needs more than %s", c->path, line,
                             cf_mem_str(c->rows * per_row, b));
    if (!add) return cf_mem_refuse(held(c), "%s:%ld: a row needs %s", c->path, line, cf_mem_str(per_row, b));
    char what[300];
    snprintf(what, sizeof what, "%s: the data", c->path);
    float *x = cf_mem_realloc(c->x, (c->cap + add) * nf * sizeof *x, what);
    if (!x) return -1;
    c->x = x;
    float *y = cf_mem_realloc(c->y, (c->cap + add) * sizeof *y, what);
    if (!y) return -1;
    c->y = y;
    c->cap += add;
    return 0;
}

static int append_row(csv_state *c, long line)
{
    if (c->rows == c->cap && grow(c, line)) return -1;
    size_t nf = c->ncols - (size_t)c->has_label;
    float *xr = c->x + c->rows * nf;
    c->y[c->rows] = 0;
    for (size_t i = 0, k = 0; i < c->ncols; i++) {
        if (i == c->lcol) c->y[c->rows] = c->row[i];
        else xr[k++] = c->row[i];
    }
    c->rows++;
    return 0;
}

/* ---- the header ---- */

/* A header field as a name: trimmed, one pair of quotes off, control bytes as '?',
 * cut to CF_DATA_NAME_MAX - 1 bytes (not inside a UTF-8 sequence). Writes it with its
 * NUL to out when out is not NULL; returns its size with the NUL. */
static size_t put_name(const char *s, const char *e, char *out)
{
    while (s < e && is_blank(*s)) s++;
    while (e > s && is_blank(e[-1])) e--;
    if (e - s >= 2 && *s == '"' && e[-1] == '"') s++, e--;
    size_t n = (size_t)(e - s);
    if (n > CF_DATA_NAME_MAX - 1) {
        n = CF_DATA_NAME_MAX - 1;
        while (n && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
    }
    for (size_t i = 0; out && i < n; i++) out[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7F ? '?' : s[i];
    if (out) out[n] = 0;
    return n + 1;
}

/* Keep the names of the header row [p, q) in one counted block: ncols uint32
 * offsets, then the names. */
static int keep_names(csv_state *c, const char *p, const char *q)
{
    size_t bytes = c->ncols * sizeof(uint32_t);
    for (const char *s = p;;) {
        const char *e = memchr(s, ',', (size_t)(q - s));
        bytes += put_name(s, e ? e : q, NULL);
        if (!e) break;
        s = e + 1;
    }
    char what[300];
    snprintf(what, sizeof what, "%s: the column names", c->path);
    if (bytes > UINT32_MAX) return cf_seterr("error: %s take more than 4 GB", what);
    if (!(c->names = cf_mem_alloc(bytes, what))) return -1;
    uint32_t off = (uint32_t)(c->ncols * sizeof(uint32_t));
    size_t col = 0;
    for (const char *s = p;; col++) {
        const char *e = memchr(s, ',', (size_t)(q - s));
        memcpy(c->names + col * sizeof off, &off, sizeof off);
        off += (uint32_t)put_name(s, e ? e : q, c->names + off);
        if (!e) break;
        s = e + 1;
    }
    return 0;
}

/* The first non-blank line: it fixes the number of columns and the label column,
 * and may be a header. 1 when it is a header, 0 data, -1 an error. */
static int first_row(csv_state *c, const char *p, const char *q, long line, int label_col, int header)
{
    size_t n = count_fields(p, q);
    if (n < 2 && c->has_label)
        return cf_seterr("error: %s:%ld: one column; a CSV data file needs a label column and at least one feature",
                         c->path, line);
    if (n > INT_MAX) return cf_seterr("error: %s:%ld: %zu columns are too many", c->path, line, n);
    long long lc = !c->has_label ? -1 : label_col < 0 ? (long long)n + label_col : label_col;
    if (c->has_label && (lc < 0 || lc >= (long long)n))
        return cf_seterr("error: %s: the label column is %d, but the rows have %zu columns (0 to %zu, or -%zu to -1 "
                         "from the end)", c->path, label_col, n, n - 1, n);
    c->ncols = n;
    c->lcol = c->has_label ? (size_t)lc : SIZE_MAX;
    c->first_line = line;
    char what[300];
    snprintf(what, sizeof what, "%s: a row", c->path);
    if (!(c->row = cf_mem_alloc(n * sizeof *c->row, what))) return -1;
    int is_header = header;
    for (const char *s = p; is_header < 0;) {
        const char *e = memchr(s, ',', (size_t)(q - s));
        float v;
        if (!e) e = q;
        if (parse_field(s, e, &v, c->loc)) is_header = 1;
        else if (e == q) is_header = 0;
        s = e + 1;
    }
    if (is_header && keep_names(c, p, q)) return -1;
    return is_header;
}

/* ---- the file ---- */

/* Every line of r into c. 0 or -1. */
static int parse_lines(csv_state *c, lines *r, const cf_csv_opts *o)
{
    char *s = NULL, *q = NULL;
    int got;
    while ((got = next_line(r, &s, &q)) > 0) {
        if (r->line == 1 && q - s >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) s += 3;
        if (q > s && q[-1] == '\r') q--;
        while (s < q && is_blank(*s)) s++;
        if (s == q) continue; /* a blank line */
        if (!c->ncols) {
            int h = first_row(c, s, q, r->line, o->label_col, o->header);
            if (h < 0) return -1;
            if (h) continue;
        } else {
            size_t n = count_fields(s, q);
            if (n != c->ncols)
                return cf_seterr("error: %s:%ld: expected %zu numbers (as on line %ld) but found %zu", c->path, r->line,
                                 c->ncols, c->first_line, n);
        }
        if (parse_row(c, s, q, r->line) || append_row(c, r->line)) return -1;
    }
    return got;
}

/* The dataset from what was parsed: arrays cut to the rows, the columns. */
static cf_dataset *finish(csv_state *c)
{
    size_t nf = c->ncols - (size_t)c->has_label;
    float *x = cf_mem_realloc(c->x, c->rows * nf * sizeof *x, c->path);   /* a failed shrink keeps the old */
    if (x) c->x = x;
    float *y = cf_mem_realloc(c->y, c->rows * sizeof *y, c->path);
    if (y) c->y = y;
    cf_dataset *d = cf_dataset_adopt(c->x, (cf_shape){1, {(int)nf}}, c->y, 1, c->rows, c->path);
    c->x = c->y = NULL;
    if (!d) return NULL;
    if (!c->has_label) d->classes = 0;
    d->ncols = (int)c->ncols;
    d->label_col = c->has_label ? (int)c->lcol : -1;
    d->colnames = c->names;
    c->names = NULL;
    return d;
}

cf_dataset *cf_data_csv_read(gzFile f, const char *name, const cf_csv_opts *o)
{
    csv_state c = {.path = name, .has_label = o->has_label, .loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0)};
    if (c.loc == (locale_t)0) {
        cf_seterr("error: %s: cannot make the C locale for reading numbers", name);
        return NULL;
    }
    lines r = {.f = f, .path = name, .chunk = o->chunk ? o->chunk : CSV_CHUNK,
               .max_line = o->max_line ? o->max_line : CSV_MAX_LINE};
    if (r.chunk > INT_MAX) r.chunk = INT_MAX;
    if (r.max_line > (size_t)1 << 30) r.max_line = (size_t)1 << 30;
    r.cap = r.chunk + 1;
    cf_dataset *d = NULL;
    if (!(r.buf = malloc(r.cap))) cf_oom(r.cap);
    else if (parse_lines(&c, &r, o) == 0) {
        if (c.rows == 0) cf_seterr("error: %s: no data rows%s", name, c.ncols ? " (only a header)" : "");
        else d = finish(&c);
    }
    freelocale(c.loc);
    free(r.buf);
    cf_mem_free(c.row);
    cf_mem_free(c.x);
    cf_mem_free(c.y);
    cf_mem_free(c.names);
    return d;
}

/* A CSV file with a label column (has_label) or of features alone. */
static cf_dataset *load_csv(const char *path, int has_label, int label_col, int header)
{
    gzFile f = cf_data_gzopen(path);
    if (!f) return NULL;
    cf_csv_opts o = {.has_label = has_label, .label_col = label_col, .header = header};
    cf_dataset *d = cf_data_csv_read(f, path, &o);
    gzclose(f);
    return d;
}

cf_dataset *cf_dataset_load_csv(const char *path, int label_col, int header)
{
    if (!path) {
        cf_seterr("error: cf_dataset_load_csv: no path");
        return NULL;
    }
    if (header < -1 || header > 1) {
        cf_seterr("error: cf_dataset_load_csv: header is %d; use 1 (a header row), 0 (none) or -1 (decide)", header);
        return NULL;
    }
    return load_csv(path, 1, label_col, header);
}

cf_dataset *cf_data_csv_inputs(gzFile f, const char *path)
{
    cf_csv_opts o = {.has_label = 0, .header = -1};
    return cf_data_csv_read(f, path, &o);
}
