/* text.c - text for character-level models: a file's bytes as class indices, cut into
 * sequences of T characters whose targets are the same characters shifted by one.
 *
 * The vocabulary is the distinct bytes of the whole file, ascending; a byte's index is
 * its position there. Sample j of a part of the text that starts at byte a is
 *   x = idx[a + jT .. a + jT + T),   y = idx[a + jT + 1 .. a + jT + T + 1)
 * so consecutive samples continue one another, and the dataset is marked sequential:
 * cf_fit then reads it as contiguous streams and never shuffles it. The test set, when
 * asked for, is the end of the file, contiguous too; it shares the vocabulary.
 *
 * A corpus of several files (a folder, walked for its regular files, or a list of
 * files and folders) is their bytes one after another, each file's followed by
 * CF_TEXT_FILE_END, read as one text. A folder's walk reads a file once, however many
 * links reach it, and passes over files that are not text (a NUL byte). The test set
 * of a corpus is the end of each file, so that it holds every file's kind of text:
 * the training text is the files' heads one after another, the held-out text their
 * tails one after another. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/mem.h"
#include "data/data.h"

/* The text read so far: a counted block of cap bytes, n of them used. */
typedef struct text_buf {
    unsigned char *b;
    size_t n, cap;
} text_buf;

/* One more byte of room, at least; `whole` names the text for messages. 0 or -1. */
static int grow(text_buf *t, const char *whole)
{
    if (t->n < t->cap) return 0;
    if (t->cap >= CF_DATA_MAX_ELEMS)
        return cf_seterr("error: %s: the text is longer than the limit of %zu characters", whole, CF_DATA_MAX_ELEMS);
    char what[300];
    snprintf(what, sizeof what, "%s: the text", whole);
    size_t want = t->cap ? 2 * t->cap : (size_t)1 << 16;
    unsigned char *nb = cf_mem_realloc(t->b, want, what);
    if (!nb) return -1;
    t->b = nb;
    t->cap = want;
    return 0;
}

/* The whole stream appended to t. 0 or -1 (t kept, for the caller to free). */
static int read_all(gzFile f, const char *name, const char *whole, text_buf *t)
{
    size_t total = 0;
    for (;;) {
        if (grow(t, whole)) return -1;
        long got = cf_data_read(f, name, t->b + t->n, t->cap - t->n, &total);
        if (got < 0) return -1;
        if (got == 0) return 0;
        t->n += (size_t)got;
    }
}

/* The sequences of seq_len in the indices idx[0 .. len), len > seq_len, as a
 * sequential dataset with the vocabulary given. NULL with the message. */
static cf_dataset *sequences(const unsigned char *idx, size_t len, int seq_len, const unsigned char *vocab,
                             int nvocab, const char *name)
{
    size_t T = (size_t)seq_len, n = (len - 1) / T;
    char what[300];
    snprintf(what, sizeof what, "%s: the sequences", name);
    float *x = cf_mem_alloc(n * T * sizeof *x, what), *y = x ? cf_mem_alloc(n * T * sizeof *y, what) : NULL;
    if (!y) {
        cf_mem_free(x);
        return NULL;
    }
    for (size_t i = 0; i < n * T; i++) {
        x[i] = (float)idx[i];
        y[i] = (float)idx[i + 1];
    }
    cf_dataset *d = cf_dataset_adopt(x, (cf_shape){1, {seq_len}}, y, seq_len, n, name);
    if (!d) return NULL;
    d->sequential = 1;
    d->nvocab = nvocab;
    memcpy(d->vocab, vocab, (size_t)nvocab);
    return d;
}

static int check_args(const char *name, int seq_len, double held_out)
{
    if (seq_len < 1)
        return cf_seterr("error: %s: text data needs a sequence length of at least 1, not %d", name, seq_len);
    if (!(held_out >= 0 && held_out < 1))
        return cf_seterr("error: %s: the held-out fraction is %g; it must be at least 0 and less than 1", name,
                         held_out);
    return 0;
}

/* One file of a corpus: its path, the file it is (to read it once), whether a
 * folder's walk found it, and the byte where its text starts once read (its end
 * marker included, the text runs to the next one's start). */
typedef struct corpus_file {
    char *path;
    dev_t dev;
    ino_t ino;
    int walked;
    size_t start;
} corpus_file;

typedef struct corpus {
    corpus_file *f;
    size_t n, cap;
    size_t hidden, other;   /* entries of folders passed over: hidden names, not regular files */
    size_t again, binary;   /* files of folders passed over: read already (links), not text */
} corpus;

static void corpus_free(corpus *c)
{
    for (size_t i = 0; i < c->n; i++) free(c->f[i].path);
    free(c->f);
    memset(c, 0, sizeof *c);
}

/* The sequences of the text b[0 .. len) (the buffer is taken over and freed), with
 * its end held out; c (NULL: one file) says which files the parts cover. */
static int make_sets(unsigned char *b, size_t len, const char *name, const corpus *c, int seq_len, double held_out,
                     cf_dataset **train, cf_dataset **test);

int cf_data_text_read(gzFile f, const char *name, int seq_len, double held_out, cf_dataset **train,
                      cf_dataset **test)
{
    *train = *test = NULL;
    if (check_args(name, seq_len, held_out)) return -1;
    text_buf t = {0};
    if (read_all(f, name, name, &t)) {
        cf_mem_free(t.b);
        return -1;
    }
    return make_sets(t.b, t.n, name, NULL, seq_len, held_out, train, test);
}

/* The text of a corpus b[0 .. len) rearranged in place: each file's first part, then
 * each file's last held_out share (its end marker with it), the files in order.
 * Returns the length of the first parts (len when nothing is held out: tails of
 * fewer than T + 1 characters in all). 0 when out of memory, with the message. */
static size_t split_files(unsigned char *b, size_t len, const corpus *c, size_t T, double held_out)
{
    size_t tails = 0;
    for (size_t i = 0; i < c->n; i++) {
        size_t end = i + 1 < c->n ? c->f[i + 1].start : len;
        tails += (size_t)((double)(end - c->f[i].start) * held_out);
    }
    if (tails < T + 1) return len;
    unsigned char *tmp = cf_mem_alloc(tails, "the held-out ends of the files");
    if (!tmp) return 0;
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < c->n; i++) {
        size_t start = c->f[i].start, end = i + 1 < c->n ? c->f[i + 1].start : len;
        size_t t = (size_t)((double)(end - start) * held_out);
        memmove(b + head, b + start, end - start - t);   /* heads only move down */
        head += end - start - t;
        memcpy(tmp + tail, b + end - t, t);
        tail += t;
    }
    memcpy(b + head, tmp, tails);
    cf_mem_free(tmp);
    return head;
}

static int make_sets(unsigned char *b, size_t len, const char *name, const corpus *c, int seq_len, double held_out,
                     cf_dataset **train, cf_dataset **test)
{
    size_t T = (size_t)seq_len;
    if (len == 0) {
        cf_mem_free(b);
        return cf_seterr("error: %s: the file is empty; text data needs at least %zu characters (a sequence of %d "
                         "and the one after it)", name, T + 1, seq_len);
    }
    if (len < T + 1) {
        cf_mem_free(b);
        return cf_seterr("error: %s: the text has %zu characters, fewer than the %zu that one sequence of %d "
                         "takes (its targets are shifted by one)", name, len, T + 1, seq_len);
    }
    /* the vocabulary, and the bytes turned into indices in place */
    int seen[256] = {0}, nvocab = 0;
    unsigned char vocab[256], index[256];
    for (size_t i = 0; i < len; i++) seen[b[i]] = 1;
    for (int k = 0; k < 256; k++)
        if (seen[k]) {
            index[k] = (unsigned char)nvocab;
            vocab[nvocab++] = (unsigned char)k;
        }
    for (size_t i = 0; i < len; i++) b[i] = index[b[i]];
    int rc = -1;
    /* the held-out end (of each file, for a corpus), when it holds a sequence */
    size_t tail = (size_t)((double)len * held_out);
    if (tail < T + 1) tail = 0;
    if (c) {
        size_t head = split_files(b, len, c, T, held_out);
        if (head == 0) goto out;
        tail = len - head;
    }
    if (len - tail < T + 1) {
        cf_seterr("error: %s: holding out %g of the %zu characters leaves fewer than the %zu that one sequence of "
                  "%d takes", name, held_out, len, T + 1, seq_len);
        goto out;
    }
    char tname[300];
    snprintf(tname, sizeof tname, "%s (held-out end)", name);
    if (!(*train = sequences(b, len - tail, seq_len, vocab, nvocab, name))) goto out;
    if (tail && !(*test = sequences(b + len - tail, tail, seq_len, vocab, nvocab, tname))) {
        cf_dataset_free(*train);
        *train = NULL;
        goto out;
    }
    char about[300];
    if (c) {   /* what each part is, for people */
        int n = snprintf(about, sizeof about, "%zu file%s, %zu characters, each file's end marked by the byte 0x%02x",
                         c->n, c->n == 1 ? "" : "s", len, CF_TEXT_FILE_END);
        if (c->again || c->binary)
            snprintf(about + n, sizeof about - (size_t)n, "; passed over: %zu read already (links to a file before "
                     "them), %zu not text (a NUL byte)", c->again, c->binary);
        if (cf_dataset_set_about(*train, about)) goto fail;
        snprintf(about, sizeof about, "the last %g%% of each file, %zu characters in all", 100 * held_out, tail);
    } else {
        snprintf(about, sizeof about, "the last %g%% of the text, %zu characters", 100 * held_out, tail);
    }
    if (*test && cf_dataset_set_about(*test, about)) goto fail;
    rc = 0;
    goto out;
fail:
    cf_dataset_free(*train);
    cf_dataset_free(*test);
    *train = *test = NULL;
out:
    cf_mem_free(b);
    return rc;
}

/* ---- corpora: folders and lists of files ---- */

/* path, the file st, appended to c; walked: found by a folder's walk. 0 or -1. */
static int corpus_add(corpus *c, const char *path, const struct stat *st, int walked)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        corpus_file *f = realloc(c->f, cap * sizeof *f);
        if (!f) return cf_oom(cap * sizeof *f);
        c->f = f;
        c->cap = cap;
    }
    char *p = strdup(path);
    if (!p) return cf_oom(strlen(path) + 1);
    c->f[c->n++] = (corpus_file){p, st->st_dev, st->st_ino, walked, 0};
    return 0;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(((const corpus_file *)a)->path, ((const corpus_file *)b)->path);
}

/* The folders being walked, outermost first: a folder met again inside itself is a
 * loop of symbolic links. */
typedef struct walk_stack {
    dev_t dev[64];
    ino_t ino[64];
    const char *path[64];
    int n;
} walk_stack;

/* The regular files under dir (its entries whose names start with '.' passed over),
 * followed through symbolic links, appended to c. 0 or -1 naming the entry. */
static int walk(corpus *c, const char *dir, const struct stat *dst, walk_stack *ws)
{
    for (int i = 0; i < ws->n; i++)
        if (ws->dev[i] == dst->st_dev && ws->ino[i] == dst->st_ino)
            return cf_seterr("error: %s: a loop of symbolic links: it is the folder %s again", dir, ws->path[i]);
    if (ws->n == 64) return cf_seterr("error: %s: folders nested more than 64 deep", dir);
    DIR *d = opendir(dir);
    if (!d) return cf_seterr("error: %s: cannot open the folder: %s", dir, strerror(errno));
    ws->dev[ws->n] = dst->st_dev;
    ws->ino[ws->n] = dst->st_ino;
    ws->path[ws->n++] = dir;
    int rc = 0;
    size_t dl = strlen(dir);
    int slash = dl && dir[dl - 1] == '/';
    for (struct dirent *e; rc == 0 && (errno = 0, e = readdir(d));) {
        if (e->d_name[0] == '.') {
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) c->hidden++;
            continue;
        }
        size_t len = dl + 1 + strlen(e->d_name) + 1;
        char *p = malloc(len);
        if (!p) {
            rc = cf_oom(len);
            break;
        }
        snprintf(p, len, "%s%s%s", dir, slash ? "" : "/", e->d_name);
        struct stat st;
        if (stat(p, &st)) {
            struct stat lst;
            if (lstat(p, &lst) == 0 && S_ISLNK(lst.st_mode))
                rc = cf_seterr("error: %s: cannot open: %s (a symbolic link to nothing)", p, strerror(errno));
            else rc = cf_seterr("error: %s: cannot open: %s", p, strerror(errno));
        } else if (S_ISDIR(st.st_mode)) {
            rc = walk(c, p, &st, ws);
        } else if (S_ISREG(st.st_mode)) {
            rc = corpus_add(c, p, &st, 1);
        } else {
            c->other++;
        }
        free(p);
    }
    if (rc == 0 && errno) rc = cf_seterr("error: %s: cannot read the folder: %s", dir, strerror(errno));
    closedir(d);
    ws->n--;
    return rc;
}

/* A folder's files, sorted by path, appended to c; of those that are one file
 * reached by several paths (links), the first alone. 0 or -1. */
static int add_folder(corpus *c, const char *dir, const struct stat *st)
{
    size_t first = c->n, hidden = c->hidden, other = c->other;
    walk_stack ws = {.n = 0};
    if (walk(c, dir, st, &ws)) return -1;
    if (c->n == first) {
        if (c->hidden == hidden && c->other == other)
            return cf_seterr("error: %s: the folder is empty: text data needs a file of text in it", dir);
        return cf_seterr("error: %s: the folder holds no file to read (passed over: %zu hidden, %zu not regular "
                         "files)", dir, c->hidden - hidden, c->other - other);
    }
    qsort(c->f + first, c->n - first, sizeof *c->f, by_path);
    size_t kept = first;
    for (size_t i = first; i < c->n; i++) {
        size_t j = 0;
        while (j < kept && (c->f[j].dev != c->f[i].dev || c->f[j].ino != c->f[i].ino)) j++;
        if (j < kept) {
            c->again++;
            free(c->f[i].path);
        } else {
            c->f[kept++] = c->f[i];
        }
    }
    c->n = kept;
    return 0;
}

/* A file or a folder, appended to c. 0 or -1 naming it. */
static int add_path(corpus *c, const char *path)
{
    struct stat st;
    if (stat(path, &st)) return cf_seterr("error: %s: cannot open: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) return add_folder(c, path, &st);
    return corpus_add(c, path, &st, 0);
}

/* The files of spec into c: when spec names something that exists, a folder's files
 * (a file adds none: it is read alone, unmarked); else the files and folders it lists
 * separated by commas. 0 or -1. */
static int find_files(const char *spec, corpus *c)
{
    struct stat st;
    if (stat(spec, &st) == 0) return S_ISDIR(st.st_mode) ? add_folder(c, spec, &st) : 0;
    if (!strchr(spec, ',')) return cf_seterr("error: %s: cannot open: %s", spec, strerror(errno));
    char *b = strdup(spec);
    if (!b) return cf_oom(strlen(spec) + 1);
    int rc = 0;
    for (char *p = b, *e; rc == 0 && p; p = e ? e + 1 : NULL) {
        if ((e = strchr(p, ','))) *e = 0;
        if (!*p) rc = cf_seterr("error: text:%s: an empty name in the list of files (no file of the whole name "
                                "exists, so it was split at its commas)", spec);
        else rc = add_path(c, p);
    }
    free(b);
    return rc;
}

/* Each file of c read, and its end marked, into t; a file that a folder's walk found
 * and that holds a NUL byte is not text: passed over (taken out of c). 0 or -1. */
static int read_corpus(corpus *c, const char *whole, text_buf *t)
{
    size_t kept = 0;
    for (size_t i = 0; i < c->n; i++) {
        corpus_file f = c->f[i];   /* moved down to slot kept, or freed */
        c->f[i].path = NULL;
        f.start = t->n;
        gzFile g = cf_data_gzopen(f.path);
        int rc = g ? read_all(g, f.path, whole, t) : -1;
        if (g) gzclose(g);
        if (rc == 0 && f.walked && memchr(t->b + f.start, 0, t->n - f.start)) {
            t->n = f.start;
            c->binary++;
            free(f.path);
            continue;
        }
        if (rc || grow(t, whole)) {
            free(f.path);
            return -1;
        }
        t->b[t->n++] = CF_TEXT_FILE_END;
        c->f[kept++] = f;
    }
    c->n = kept;
    if (kept == 0)
        return cf_seterr("error: %s: no file of text: the %zu files read all hold NUL bytes", whole, c->binary);
    return 0;
}

int cf_dataset_load_text(const char *path, int seq_len, double held_out, cf_dataset **train, cf_dataset **test)
{
    if (train) *train = NULL;
    if (test) *test = NULL;
    if (!path || !train || !test) return cf_seterr("error: cf_dataset_load_text: no path or no place for the datasets");
    if (check_args(path, seq_len, held_out)) return -1;
    corpus c = {0};
    if (find_files(path, &c)) {
        corpus_free(&c);
        return -1;
    }
    if (c.n == 0) {   /* one file, read as it is */
        gzFile f = cf_data_gzopen(path);
        if (!f) return -1;
        int rc = cf_data_text_read(f, path, seq_len, held_out, train, test);
        gzclose(f);
        return rc;
    }
    text_buf t = {0};
    int rc = read_corpus(&c, path, &t);
    if (rc) cf_mem_free(t.b);
    else rc = make_sets(t.b, t.n, path, &c, seq_len, held_out, train, test);
    corpus_free(&c);
    return rc;
}

const unsigned char *cf_dataset_vocab(const cf_dataset *d, int *n)
{
    if (n) *n = d ? d->nvocab : 0;
    return d && d->nvocab ? d->vocab : NULL;
}

int cf_dataset_sequential(const cf_dataset *d) { return d ? d->sequential : 0; }
