/* csv.c - CSV files, one sample per row, plain or gzip'd, parsed while they are read.
 *
 * Fields are separated by ','; spaces and tabs around a field, '\r\n' line ends, a
 * UTF-8 byte-order mark and blank lines are allowed. One column is the label (by
 * number, 0-based, negative from the end, or by its header name); the features are
 * the columns listed (names or numbers, in that order), or all the others; a column
 * that is neither is not read. The sample shape is (features); for prediction a file
 * may also be read as features alone (targets 0). Every row has as many fields as the
 * first. Messages name the file and line, and count columns from 1 as a spreadsheet
 * does.
 *
 * Features are numbers. The label column holds numbers (class indices or targets) or
 * words (class names: the classes are the distinct words, sorted as strcmp sorts
 * them, or the classes known already, a trained model's); not both. A missing value
 * (an empty field, "?", or NA, N/A, NaN, null in any case) is an error. Whether the
 * first row is a header is decided from the first two: it is one when some column
 * holds a field that is not a number in row 1 and a number in row 2 (with one row
 * only: when a field is not a number).
 *
 * The file is read a chunk at a time (1 MiB) and each line is parsed as soon as it is
 * whole (the first is kept until the second decides whether it is a header), so memory
 * is the numbers plus a chunk and the line being put together (at most 64 MiB). The
 * numbers grow in counted blocks (core/mem.h): doubling while the memory limit allows,
 * then by what still fits, so a file with more numbers than the limit holds is refused
 * at the line where it passes it. */
#define _GNU_SOURCE /* strtof_l */
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/error.h"
#include "core/mem.h"
#include "data/data.h"

#define CSV_CHUNK ((size_t)1 << 20)
#define CSV_MAX_LINE ((size_t)64 << 20)
#define CSV_FIRST_BYTES ((size_t)1 << 20)   /* the first allocation for the numbers */
#define CSV_MAX_CLASSES 65536   /* distinct words a label column may hold */
#define CSV_MAX_WORD 100        /* the longest word label, in bytes (a class name's limit) */

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* ---- fields ---- */

/* The field [s, e), trimmed, is a missing value: empty, "?", or NA, N/A, NaN, null in
 * any case. */
static int is_missing(const char *s, const char *e)
{
    static const char *const spell[] = {"?", "NA", "N/A", "NaN", "null"};
    size_t n = (size_t)(e - s);
    if (!n) return 1;
    for (size_t i = 0; i < sizeof spell / sizeof *spell; i++)
        if (strlen(spell[i]) == n && strncasecmp(s, spell[i], n) == 0) return 1;
    return 0;
}

/* Parse the field [s, e) into *out: 0, or 1 (not a number), 2 (not finite) or 3 (a
 * missing value). Numbers are read in the C locale ('.' for the decimal point)
 * whatever the program's locale. The byte at e is never part of a number (a
 * separator, a blank, a line end or the NUL after the data read), so strtof stops at
 * e or before it. */
static int parse_field(const char *s, const char *e, float *out, locale_t loc)
{
    while (s < e && is_blank(*s)) s++;
    while (e > s && is_blank(e[-1])) e--;
    if (s == e) return 3;
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
    if (is_missing(s, e)) return 3;
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

enum { SLOT_SKIP = -1, SLOT_LABEL = -2 };

/* The distinct words of a label column, ids in order of first appearance (or the
 * classes known already, ids their indices), found through an open hash table. */
typedef struct words {
    char **w;         /* w[id], malloc'd */
    int n, cap;
    int *table;       /* tcap slots (a power of 2): id + 1, 0 empty */
    size_t tcap;
    int closed;       /* 1: the known classes; another word is an error */
} words;

typedef struct csv_state {
    const char *path;
    const cf_csv_opts *o;
    size_t ncols;     /* fields per row, from the first row */
    size_t nf;        /* features per sample */
    int has_label;    /* 0: inputs alone (targets 0), for prediction */
    size_t lcol;      /* the label column, SIZE_MAX when there is none */
    int *slot;        /* per column: its place among the features, SLOT_SKIP or SLOT_LABEL; counted */
    long first_line;
    char *pending;    /* the first row, until the second says whether it is a header */
    size_t pending_len;
    size_t rows, cap; /* rows read, rows that x and y have room for */
    float *x, *y;
    char *names;      /* the header's names (see data.h), or NULL */
    locale_t loc;     /* the C locale, for strtof_l */
    int label_kind;   /* 0 none read yet, 1 numbers, 2 words */
    long kind_line;   /* the first label of that kind: its line and text */
    char kind_text[48];
    words wd;
} csv_state;

/* Column col's name from the header, or NULL. */
static const char *col_name(const csv_state *c, size_t col)
{
    if (!c->names || col >= c->ncols) return NULL;
    uint32_t off;
    memcpy(&off, c->names + col * sizeof off, sizeof off);
    return c->names + off;
}

/* "st", "nd", "rd" or "th": 1st, 2nd, 3rd, 4th, 11th, 21st. */
static const char *ordinal_suffix(size_t n)
{
    if (n % 100 >= 11 && n % 100 <= 13) return "th";
    return n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
}

/* "column 2 'b'", or "column 2" when the file has no header: counted from 0, as
 * --label-col and --features (cf_data_opts) take them. */
static const char *col_desc(const csv_state *c, size_t col, char *buf, size_t size)
{
    const char *name = col_name(c, col);
    if (name) snprintf(buf, size, "column %zu '%s'", col, name);
    else snprintf(buf, size, "column %zu", col);
    return buf;
}

static int missing(const csv_state *c, const char *s, const char *e, size_t col, long line)
{
    char f[48], d[96], what[64];
    field_str(s, e, f, sizeof f);
    if (*f) snprintf(what, sizeof what, "'%s'", f);
    else snprintf(what, sizeof what, "an empty field");
    return cf_seterr("error: %s:%ld: a missing value (%s) in %s%s; cflux does not fill in missing values: fill "
                     "them in or drop the row", c->path, line, what, c->slot[col] == SLOT_LABEL ? "the label, " : "",
                     col_desc(c, col, d, sizeof d));
}

/* A feature that is not a number (parse_field said bad): -1 with the message. */
static int bad_feature(const csv_state *c, const char *s, const char *e, size_t col, long line, int bad)
{
    if (bad == 3) return missing(c, s, e, col, line);
    char f[48], d[96];
    field_str(s, e, f, sizeof f);
    unsigned char first = (unsigned char)f[0];
    int word = bad == 1 && (first >= 0x80 || first == '"' || ((first | 0x20) >= 'a' && (first | 0x20) <= 'z'));
    return cf_seterr("error: %s:%ld: '%s' is not a %snumber (%s)%s", c->path, line, f, bad == 2 ? "finite " : "",
                     col_desc(c, col, d, sizeof d),
                     word ? "; features are numbers, and a column of words is not encoded: make it columns of 0 and 1 "
                            "(one per word) or leave it out of the features" : "");
}

/* The names in list (n of them) for a message, ", "-separated, cut short after about
 * 400 bytes. */
static void name_list(const char *const *list, int n, char *buf, size_t size)
{
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < n && k < size; i++) {
        if (k > 400) {
            snprintf(buf + k, size - k, ", ... (%d in all)", n);
            return;
        }
        k += (size_t)snprintf(buf + k, size - k, "%s%s", i ? ", " : "", list[i]);
    }
}

static uint32_t hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

/* The id of the word [s, n) in w's table, or -1. *at: the empty slot where it goes. */
static int word_find(const words *w, const char *s, size_t n, size_t *at)
{
    size_t i = hash(s, n) & (w->tcap - 1);
    for (;; i = (i + 1) & (w->tcap - 1)) {
        int v = w->table[i];
        if (!v) break;
        if (strlen(w->w[v - 1]) == n && memcmp(w->w[v - 1], s, n) == 0) return v - 1;
    }
    *at = i;
    return -1;
}

/* Append the word [s, n) as id w->n (in the table unless it is there already). 0 or
 * -1 (out of memory). */
static int word_add(words *w, const char *s, size_t n)
{
    if ((size_t)(w->n + 1) * 2 > w->tcap) {   /* the table at most half full */
        size_t tcap = w->tcap ? 2 * w->tcap : 64;
        int *t = calloc(tcap, sizeof *t);
        if (!t) return cf_oom(tcap * sizeof *t);
        free(w->table);
        w->table = t;
        w->tcap = tcap;
        for (int id = 0; id < w->n; id++) {
            size_t at = 0;
            if (word_find(w, w->w[id], strlen(w->w[id]), &at) < 0) w->table[at] = id + 1;
        }
    }
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 16;
        char **b = realloc(w->w, (size_t)cap * sizeof *b);
        if (!b) return cf_oom((size_t)cap * sizeof *b);
        w->w = b;
        w->cap = cap;
    }
    char *copy = malloc(n + 1);
    if (!copy) return cf_oom(n + 1);
    memcpy(copy, s, n);
    copy[n] = 0;
    size_t at = 0;
    if (word_find(w, s, n, &at) < 0) w->table[at] = w->n + 1;
    w->w[w->n++] = copy;
    return 0;
}

static void words_free(words *w)
{
    for (int i = 0; i < w->n; i++) free(w->w[i]);
    free(w->w);
    free(w->table);
}

/* The class index of a word label [s, e): its id (a new one for a new word, unless
 * the classes are known). -1 with the message. */
static int word_id(csv_state *c, const char *s, const char *e, size_t col, long line)
{
    while (s < e && is_blank(*s)) s++;
    while (e > s && is_blank(e[-1])) e--;
    if (e - s >= 2 && *s == '"' && e[-1] == '"') s++, e--;
    size_t n = (size_t)(e - s);
    char f[48], d[96];
    field_str(s, e, f, sizeof f);
    if (n > CSV_MAX_WORD)
        return cf_seterr("error: %s:%ld: the label '%s' is longer than %d bytes, the most a class name may be (%s)",
                         c->path, line, f, CSV_MAX_WORD, col_desc(c, col, d, sizeof d));
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return cf_seterr("error: %s:%ld: the label '%s' holds a control character (%s)", c->path, line, f,
                             col_desc(c, col, d, sizeof d));
    words *w = &c->wd;
    size_t at = 0;
    int id = w->tcap ? word_find(w, s, n, &at) : -1;
    if (id >= 0) return id;
    if (w->closed) {
        char list[600];
        name_list((const char *const *)w->w, w->n, list, sizeof list);
        return cf_seterr("error: %s:%ld: the label '%s' is not one of the %d classes of %s (%s)", c->path, line, f,
                         w->n, c->o->classes_of ? c->o->classes_of : "the model", list);
    }
    if (w->n == CSV_MAX_CLASSES)
        return cf_seterr("error: %s:%ld: more than %d distinct words in the label column (%s): is it the label?",
                         c->path, line, CSV_MAX_CLASSES, col_desc(c, col, d, sizeof d));
    return word_add(w, s, n) ? -1 : w->n - 1;
}

/* The label [s, e) in column col into *y: a number, or a word's class index. */
static int label(csv_state *c, const char *s, const char *e, size_t col, long line, float *y)
{
    int bad = parse_field(s, e, y, c->loc);
    if (bad == 3) return missing(c, s, e, col, line);
    char f[48], d[96];
    if (bad == 2) {
        field_str(s, e, f, sizeof f);
        return cf_seterr("error: %s:%ld: '%s' is not a finite number (%s)", c->path, line, f,
                         col_desc(c, col, d, sizeof d));
    }
    int kind = bad ? 2 : 1;
    if (!c->label_kind) {
        c->label_kind = kind;
        c->kind_line = line;
        field_str(s, e, c->kind_text, sizeof c->kind_text);
    } else if (kind != c->label_kind) {
        field_str(s, e, f, sizeof f);
        return cf_seterr("error: %s:%ld: the label column (%s) holds the %s '%s' here but %s before (line %ld: '%s'); "
                         "a label column is all numbers (class indices or targets) or all words (class names)",
                         c->path, line, col_desc(c, col, d, sizeof d), kind == 2 ? "word" : "number", f,
                         kind == 2 ? "numbers" : "words", c->kind_line, c->kind_text);
    }
    if (kind == 1) return 0;
    int id = word_id(c, s, e, col, line);
    if (id < 0) return -1;
    *y = (float)id;
    return 0;
}

/* Counted bytes that c holds. */
static size_t held(const csv_state *c)
{
    const void *blocks[4] = {c->x, c->y, c->slot, c->names};
    size_t n = 0;
    for (int i = 0; i < 4; i++) n += blocks[i] ? cf_mem_size(blocks[i]) : 0;
    return n;
}

/* Room for more rows: doubling while the memory limit allows, then what still fits. */
static int grow(csv_state *c, long line)
{
    size_t nf = c->nf, per_row = (nf + 1) * sizeof(float);
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

/* The row [p, q) of ncols fields: its features and label appended. 0, or -1 with the
 * message. */
static int parse_row(csv_state *c, const char *p, const char *q, long line)
{
    if (c->rows == c->cap && grow(c, line)) return -1;
    float *xr = c->x + c->rows * c->nf, *yr = c->y + c->rows;
    *yr = 0;
    size_t col = 0;
    for (const char *s = p;; col++) {
        const char *e = memchr(s, ',', (size_t)(q - s));
        if (!e) e = q;
        int k = c->slot[col];
        if (k >= 0) {
            int bad = parse_field(s, e, &xr[k], c->loc);
            if (bad) return bad_feature(c, s, e, col, line, bad);
        } else if (k == SLOT_LABEL && label(c, s, e, col, line, yr)) {
            return -1;
        }
        if (e == q) break;
        s = e + 1;
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

/* Row 1 [p1, q1) is a header when some column holds a field that is not a number
 * (nor a missing value) there and a number in row 2 [p2, q2); with no row 2 (p2
 * NULL), when any of its fields is not a number. Both rows have ncols fields. */
static int is_header(const csv_state *c, const char *p1, const char *q1, const char *p2, const char *q2)
{
    for (const char *s = p1, *t = p2;;) {
        const char *e = memchr(s, ',', (size_t)(q1 - s)), *f = p2 ? memchr(t, ',', (size_t)(q2 - t)) : NULL;
        if (!e) e = q1;
        if (!f) f = q2;
        float v;
        if (parse_field(s, e, &v, c->loc) == 1 && (!p2 || parse_field(t, f, &v, c->loc) == 0)) return 1;
        if (e == q1) return 0;
        s = e + 1;
        if (p2) t = f + 1;
    }
}

/* ---- the columns chosen ---- */

/* The edit distance of a and b (each at most 63 bytes). */
static int distance(const char *a, const char *b)
{
    size_t m = strlen(a), n = strlen(b);
    int row[64];
    for (size_t j = 0; j <= n; j++) row[j] = (int)j;
    for (size_t i = 1; i <= m; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= n; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[n];
}

/* A column of a name not in the header: -1 with the message, which suggests the
 * nearest name (the same but for case, or one or two edits away) and lists them. */
static int unknown_name(const csv_state *c, const char *name, const char *role)
{
    const char *near = NULL;
    int best = strlen(name) < 5 ? 2 : 3;
    for (size_t i = 0; i < c->ncols && strlen(name) < 64; i++) {
        const char *n = col_name(c, i);
        int d = strcasecmp(n, name) == 0 ? 0 : distance(n, name);
        if (d < best) best = d, near = n;
    }
    char list[600], mean[96] = "";
    size_t k = 0;
    list[0] = 0;
    for (size_t i = 0; i < c->ncols && k < sizeof list; i++) {
        if (k > 400) {
            snprintf(list + k, sizeof list - k, ", ... (%zu in all)", c->ncols);
            break;
        }
        k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", col_name(c, i));
    }
    if (near) snprintf(mean, sizeof mean, " (did you mean '%s'?)", near);
    return cf_seterr("error: %s: the %s column '%s' is not in the header%s; the columns are: %s", c->path, role, name,
                     mean, list);
}

/* The column that the text [s, e) names: a number (0-based, negative from the end)
 * or a header name. role says what it is for, in messages. -1 with the message. */
static long long find_column(const csv_state *c, const char *s, const char *e, const char *role)
{
    while (s < e && is_blank(*s)) s++;
    while (e > s && is_blank(e[-1])) e--;
    char tok[80];
    snprintf(tok, sizeof tok, "%.*s", (int)(e - s < 79 ? e - s : 79), s);
    if (!*tok) return cf_seterr("error: %s: an empty column name for a %s", c->path, role);
    const char *t = tok + (*tok == '-');
    if (*t && strspn(t, "0123456789") == strlen(t)) {   /* a number is always a position */
        long long v = strlen(t) > 12 ? LLONG_MAX / 2 : atoll(tok), n = (long long)c->ncols;
        long long col = v < 0 ? n + v : v;
        if (col < 0 || col >= n)
            return cf_seterr("error: %s: the %s column is %s, but the rows have %zu columns (0 to %zu, or -%zu to -1 "
                             "from the end)", c->path, role, tok, c->ncols, c->ncols - 1, c->ncols);
        return col;
    }
    if (!c->names)
        return cf_seterr("error: %s: the %s column '%s' is given by name, but the file has no header row (line %ld is "
                         "data); give its number instead (0-based, -1 the last)", c->path, role, tok, c->first_line);
    for (size_t i = 0; i < c->ncols; i++)
        if (strcmp(col_name(c, i), tok) == 0) return (long long)i;
    return unknown_name(c, tok, role);
}

/* The label column and the features, once the header is known: c->slot. 0 or -1. */
static int resolve(csv_state *c)
{
    const cf_csv_opts *o = c->o;
    char what[300], d[96], d2[96];
    snprintf(what, sizeof what, "%s: the columns", c->path);
    if (!(c->slot = cf_mem_alloc(c->ncols * sizeof *c->slot, what))) return -1;
    for (size_t i = 0; i < c->ncols; i++) c->slot[i] = SLOT_SKIP;
    if (c->has_label) {
        long long lc;
        if (o->label) {
            lc = find_column(c, o->label, o->label + strlen(o->label), "label");
        } else {
            lc = o->label_col < 0 ? (long long)c->ncols + o->label_col : o->label_col;
            if (lc < 0 || lc >= (long long)c->ncols)
                return cf_seterr("error: %s: the label column is %d, but the rows have %zu columns (0 to %zu, or -%zu "
                                 "to -1 from the end)", c->path, o->label_col, c->ncols, c->ncols - 1, c->ncols);
        }
        if (lc < 0) return -1;
        c->lcol = (size_t)lc;
        c->slot[lc] = SLOT_LABEL;
    }
    if (!o->features) {
        for (size_t i = 0; i < c->ncols; i++)
            if (c->slot[i] == SLOT_SKIP) c->slot[i] = (int)c->nf++;
        return 0;
    }
    for (const char *s = o->features;;) {
        const char *e = strchr(s, ',');
        if (!e) e = s + strlen(s);
        long long col = find_column(c, s, e, "feature");
        if (col < 0) return -1;
        if (c->slot[col] == SLOT_LABEL)
            return cf_seterr("error: %s: %s is the label, so it cannot be a feature too", c->path,
                             col_desc(c, (size_t)col, d, sizeof d));
        if (c->slot[col] >= 0)
            return cf_seterr("error: %s: %s is among the features twice (the %d%s and the %zu%s of --features)",
                             c->path, col_desc(c, (size_t)col, d2, sizeof d2), c->slot[col] + 1,
                             ordinal_suffix((size_t)c->slot[col] + 1), c->nf + 1, ordinal_suffix(c->nf + 1));
        c->slot[col] = (int)c->nf++;
        if (!*e) break;
        s = e + 1;
    }
    return 0;
}

/* The first non-blank line: it fixes the number of columns; with header 1 or 0 it
 * is a header or data, with -1 it is kept until the second row decides. 1 when it is
 * done with (a header, or kept), 0 when it is data to parse now, -1 an error. */
static int first_row(csv_state *c, const char *p, const char *q, long line)
{
    size_t n = count_fields(p, q);
    if (n < 2 && c->has_label)
        return cf_seterr("error: %s:%ld: one column; a CSV data file needs a label column and at least one feature",
                         c->path, line);
    if (n > INT_MAX) return cf_seterr("error: %s:%ld: %zu columns are too many", c->path, line, n);
    c->ncols = n;
    c->first_line = line;
    if (c->o->header == 1) return keep_names(c, p, q) || resolve(c) ? -1 : 1;
    if (c->o->header == 0) return resolve(c) ? -1 : 0;
    if (!(c->pending = malloc((size_t)(q - p) + 1))) return cf_oom((size_t)(q - p) + 1);
    memcpy(c->pending, p, (size_t)(q - p));
    c->pending[q - p] = 0;
    c->pending_len = (size_t)(q - p);
    return 1;
}

/* The second row [p, q) (NULL at the end of a file of one row) decides whether the
 * kept first row is a header; that row is then read as one or as data. */
static int decide(csv_state *c, const char *p, const char *q)
{
    const char *p1 = c->pending, *q1 = p1 + c->pending_len;
    int h = is_header(c, p1, q1, p, q);
    int rc = (h && keep_names(c, p1, q1)) || resolve(c) || (!h && parse_row(c, p1, q1, c->first_line)) ? -1 : 0;
    free(c->pending);
    c->pending = NULL;
    return rc;
}

/* ---- the file ---- */

/* Every line of r into c. 0 or -1. */
static int parse_lines(csv_state *c, lines *r)
{
    char *s = NULL, *q = NULL;
    int got;
    while ((got = next_line(r, &s, &q)) > 0) {
        if (r->line == 1 && q - s >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) s += 3;
        if (q > s && q[-1] == '\r') q--;
        while (s < q && is_blank(*s)) s++;
        if (s == q) continue; /* a blank line */
        if (!c->ncols) {
            int h = first_row(c, s, q, r->line);
            if (h < 0) return -1;
            if (h) continue;
        } else {
            size_t n = count_fields(s, q);
            if (n != c->ncols)
                return cf_seterr("error: %s:%ld: expected %zu fields (as on line %ld) but found %zu", c->path, r->line,
                                 c->ncols, c->first_line, n);
            if (c->pending && decide(c, s, q)) return -1;
        }
        if (parse_row(c, s, q, r->line)) return -1;
    }
    if (got == 0 && c->pending && decide(c, NULL, NULL)) return -1;
    return got;
}

static int by_name(const void *a, const void *b) { return strcmp(**(char *const *const *)a, **(char *const *const *)b); }

/* Word labels: the classes sorted as strcmp sorts them and the targets their
 * indices, unless the classes were known. 0 or -1. */
static int word_classes(csv_state *c, cf_dataset *d)
{
    words *w = &c->wd;
    if (w->closed) {
        d->classes = w->n;
        return cf_dataset_set_class_names(d, (const char *const *)w->w, w->n);
    }
    char ***order = malloc((size_t)w->n * sizeof *order);
    int *rank = malloc((size_t)w->n * sizeof *rank);
    const char **sorted = malloc((size_t)w->n * sizeof *sorted);
    int rc = 0;
    if (!order || !rank || !sorted) {
        rc = cf_oom((size_t)w->n * (sizeof *order + sizeof *rank + sizeof *sorted));
    } else {
        for (int i = 0; i < w->n; i++) order[i] = &w->w[i];
        qsort(order, (size_t)w->n, sizeof *order, by_name);
        for (int i = 0; i < w->n; i++) {
            rank[order[i] - w->w] = i;
            sorted[i] = *order[i];
        }
        for (size_t i = 0; i < d->n; i++) d->y[i] = (float)rank[(int)d->y[i]];
        d->classes = w->n;
        rc = cf_dataset_set_class_names(d, sorted, w->n);
    }
    free(order);
    free(rank);
    free(sorted);
    return rc;
}

/* The dataset from what was parsed: arrays cut to the rows, the columns. */
static cf_dataset *finish(csv_state *c)
{
    size_t nf = c->nf;
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
    if (c->label_kind == 2 && word_classes(c, d)) {
        cf_dataset_free(d);
        return NULL;
    }
    return d;
}

cf_dataset *cf_data_csv_read(gzFile f, const char *name, const cf_csv_opts *o)
{
    csv_state c = {.path = name, .o = o, .has_label = o->has_label, .lcol = SIZE_MAX,
                   .loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0)};
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
    int rc = 0;
    for (int i = 0; i < o->nclass_names && rc == 0; i++)   /* the classes known: their indices */
        rc = word_add(&c.wd, o->class_names[i], strlen(o->class_names[i]));
    c.wd.closed = o->nclass_names > 0;
    if (rc) {
    } else if (!(r.buf = malloc(r.cap))) {
        cf_oom(r.cap);
    } else if (parse_lines(&c, &r) == 0) {
        if (c.rows == 0) cf_seterr("error: %s: no data rows%s", name, c.ncols ? " (only a header)" : "");
        else d = finish(&c);
    }
    freelocale(c.loc);
    free(r.buf);
    free(c.pending);
    words_free(&c.wd);
    cf_mem_free(c.slot);
    cf_mem_free(c.x);
    cf_mem_free(c.y);
    cf_mem_free(c.names);
    return d;
}

cf_dataset *cf_data_csv_load(const char *path, const cf_csv_opts *o)
{
    gzFile f = cf_data_gzopen(path);
    if (!f) return NULL;
    cf_dataset *d = cf_data_csv_read(f, path, o);
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
    cf_csv_opts o = {.has_label = 1, .label_col = label_col, .header = header};
    return cf_data_csv_load(path, &o);
}

cf_dataset *cf_data_csv_inputs(gzFile f, const char *path)
{
    cf_csv_opts o = {.has_label = 0, .header = -1};
    return cf_data_csv_read(f, path, &o);
}
