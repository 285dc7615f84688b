/* csv.c - CSV files of numbers, one sample per row, plain or gzip'd.
 *
 * Fields are separated by ','; spaces and tabs around a field, '\r\n' line ends, a
 * UTF-8 byte-order mark and blank lines are allowed. One column (label_col, 0-based,
 * negative from the end) is the target; the others, in order, are the features: the
 * sample shape is (features); for prediction a file may also be read as features
 * alone (targets 0). Every row has as many fields as the first. Messages name the
 * file and line, and count columns from 1 as a spreadsheet does. */
#define _GNU_SOURCE /* strtof_l */
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "data/data.h"

/* The most text a CSV file may hold. */
#define CSV_MAX_BYTES ((size_t)8 << 30)

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* Parse the field [s, e) into *out: 0, or 1 (not a number), or 2 (not finite).
 * Numbers are read in the C locale ('.' for the decimal point) whatever the
 * program's locale. The byte at e is never part of a number (a separator, a blank,
 * a line end or the NUL after the buffer), so strtof stops at e or before it. */
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

typedef struct csv_state {
    const char *path;
    size_t ncols;  /* fields per row, from the first row */
    int has_label; /* 0: every column is a feature (inputs alone, for prediction) */
    size_t lcol;   /* the label column, when there is one */
    long first_line;
    size_t rows, cap; /* rows read, rows that x and y have room for */
    float *x, *y, *row;
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

static int append_row(csv_state *c)
{
    size_t nf = c->ncols - (size_t)c->has_label;
    if (c->rows == c->cap) {
        size_t grow = c->cap ? c->cap * 2 : 1024;
        if (grow * nf > CF_DATA_MAX_ELEMS) grow = CF_DATA_MAX_ELEMS / nf;
        if (grow <= c->rows)
            return cf_seterr("error: %s: more than %zu rows of %zu features, the limit of %zu values", c->path, c->rows,
                             nf, CF_DATA_MAX_ELEMS);
        float *x = realloc(c->x, grow * nf * sizeof *x);
        if (!x) return cf_oom(grow * nf * sizeof *x);
        c->x = x;
        float *y = realloc(c->y, grow * sizeof *y);
        if (!y) return cf_oom(grow * sizeof *y);
        c->y = y;
        c->cap = grow;
    }
    float *xr = c->x + c->rows * nf;
    c->y[c->rows] = 0;
    for (size_t i = 0, k = 0; i < c->ncols; i++) {
        if (i == c->lcol) c->y[c->rows] = c->row[i];
        else xr[k++] = c->row[i];
    }
    c->rows++;
    return 0;
}

/* The first non-blank line: it fixes the number of columns and the label column,
 * and may be a header. 1 when it is a header, 0 data, -1 an error. */
static int first_row(csv_state *c, const char *p, const char *q, long line, int label_col, int header)
{
    size_t n = 1;
    for (const char *s = p; s < q; s++) n += *s == ',';
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
    c->row = malloc(n * sizeof *c->row);
    if (!c->row) return cf_oom(n * sizeof *c->row);
    if (header >= 0) return header;
    for (const char *s = p;;) {
        const char *e = memchr(s, ',', (size_t)(q - s));
        float v;
        if (!e) e = q;
        if (parse_field(s, e, &v, c->loc)) return 1;
        if (e == q) return 0;
        s = e + 1;
    }
}

static int parse_csv(csv_state *c, const char *buf, size_t len, int label_col, int header)
{
    const char *p = buf, *end = buf + len;
    if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) p += 3;
    for (long line = 1; p < end; line++) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        const char *s = p, *q = eol;
        p = eol < end ? eol + 1 : end;
        if (q > s && q[-1] == '\r') q--;
        while (s < q && is_blank(*s)) s++;
        if (s == q) continue; /* a blank line */
        if (!c->ncols) {
            int h = first_row(c, s, q, line, label_col, header);
            if (h < 0) return -1;
            if (h) continue;
        } else {
            size_t n = 1;
            for (const char *t = s; t < q; t++) n += *t == ',';
            if (n != c->ncols)
                return cf_seterr("error: %s:%ld: expected %zu numbers (as on line %ld) but found %zu", c->path, line,
                                 c->ncols, c->first_line, n);
        }
        if (parse_row(c, s, q, line) || append_row(c)) return -1;
    }
    return 0;
}

/* A CSV file with a label column (has_label) or of features alone. */
static cf_dataset *load_csv(const char *path, int has_label, int label_col, int header)
{
    gzFile f = cf_data_gzopen(path);
    if (!f) return NULL;
    unsigned char *buf;
    size_t len;
    int rc = cf_data_gzslurp(f, path, 0, CSV_MAX_BYTES, &buf, &len);
    gzclose(f);
    if (rc) return NULL;
    if (len > CSV_MAX_BYTES) {
        free(buf);
        cf_seterr("error: %s: larger than the limit of %zu bytes", path, CSV_MAX_BYTES);
        return NULL;
    }
    csv_state c = {.path = path, .has_label = has_label, .loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0)};
    if (c.loc == (locale_t)0) {
        free(buf);
        cf_seterr("error: %s: cannot make the C locale for reading numbers", path);
        return NULL;
    }
    rc = parse_csv(&c, (const char *)buf, len, label_col, header);
    freelocale(c.loc);
    free(buf);
    free(c.row);
    if (!rc && c.rows == 0) rc = cf_seterr("error: %s: no data rows%s", path, c.ncols ? " (only a header)" : "");
    if (rc) {
        free(c.x);
        free(c.y);
        return NULL;
    }
    /* give back the unused tail of the arrays; a failed shrink keeps the old ones */
    size_t nf = c.ncols - (size_t)has_label;
    float *x = realloc(c.x, c.rows * nf * sizeof *x);
    if (x) c.x = x;
    float *y = realloc(c.y, c.rows * sizeof *y);
    if (y) c.y = y;
    cf_dataset *d = cf_dataset_adopt(c.x, (cf_shape){1, {(int)nf}}, c.y, 1, c.rows, path);
    if (d && !has_label) d->classes = 0;
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

cf_dataset *cf_data_csv_inputs(const char *path) { return load_csv(path, 0, 0, -1); }
