/* text.c - text for character-level models: a file's bytes as class indices, cut into
 * sequences of T characters whose targets are the same characters shifted by one.
 *
 * The vocabulary is the distinct bytes of the whole file, ascending; a byte's index is
 * its position there. Sample j of a part of the text that starts at byte a is
 *   x = idx[a + jT .. a + jT + T),   y = idx[a + jT + 1 .. a + jT + T + 1)
 * so consecutive samples continue one another, and the dataset is marked sequential:
 * cf_fit then reads it as contiguous streams and never shuffles it. The test set, when
 * asked for, is the end of the file, contiguous too; it shares the vocabulary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "data/data.h"

/* The whole stream into a counted block (*len bytes; NULL when empty). 0 or -1. */
static int read_all(gzFile f, const char *name, unsigned char **out, size_t *len)
{
    unsigned char *b = NULL;
    size_t cap = 0, n = 0, total = 0;
    char what[300];
    snprintf(what, sizeof what, "%s: the text", name);
    for (;;) {
        if (n == cap) {
            if (cap >= CF_DATA_MAX_ELEMS) {
                cf_mem_free(b);
                return cf_seterr("error: %s: the text is longer than the limit of %zu characters", name,
                                 CF_DATA_MAX_ELEMS);
            }
            size_t want = cap ? 2 * cap : (size_t)1 << 16;
            unsigned char *nb = cf_mem_realloc(b, want, what);
            if (!nb) {
                cf_mem_free(b);
                return -1;
            }
            b = nb;
            cap = want;
        }
        long got = cf_data_read(f, name, b + n, cap - n, &total);
        if (got < 0) {
            cf_mem_free(b);
            return -1;
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    if (n == 0) {
        cf_mem_free(b);
        b = NULL;
    }
    *out = b;
    *len = n;
    return 0;
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

int cf_data_text_read(gzFile f, const char *name, int seq_len, double held_out, cf_dataset **train,
                      cf_dataset **test)
{
    *train = *test = NULL;
    if (seq_len < 1)
        return cf_seterr("error: %s: text data needs a sequence length of at least 1, not %d", name, seq_len);
    if (!(held_out >= 0 && held_out < 1))
        return cf_seterr("error: %s: the held-out fraction is %g; it must be at least 0 and less than 1", name,
                         held_out);
    unsigned char *b = NULL;
    size_t len = 0, T = (size_t)seq_len;
    if (read_all(f, name, &b, &len)) return -1;
    if (len == 0)
        return cf_seterr("error: %s: the file is empty; text data needs at least %zu characters (a sequence of %d "
                         "and the one after it)", name, T + 1, seq_len);
    if (len < T + 1) {
        cf_mem_free(b);
        return cf_seterr("error: %s: the text has %zu characters, fewer than the %zu that one sequence of %d "
                         "takes (its targets are shifted by one)", name, len, T + 1, seq_len);
    }
    /* the vocabulary, and the bytes turned into indices in place */
    int seen[256] = {0}, nvocab = 0;
    unsigned char vocab[256], index[256];
    for (size_t i = 0; i < len; i++) seen[b[i]] = 1;
    for (int c = 0; c < 256; c++)
        if (seen[c]) {
            index[c] = (unsigned char)nvocab;
            vocab[nvocab++] = (unsigned char)c;
        }
    for (size_t i = 0; i < len; i++) b[i] = index[b[i]];
    /* the held-out end, when it holds a sequence */
    size_t tail = (size_t)((double)len * held_out);
    if (tail < T + 1) tail = 0;
    int rc = -1;
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
    rc = 0;
out:
    cf_mem_free(b);
    return rc;
}

int cf_dataset_load_text(const char *path, int seq_len, double held_out, cf_dataset **train, cf_dataset **test)
{
    if (train) *train = NULL;
    if (test) *test = NULL;
    if (!path || !train || !test) return cf_seterr("error: cf_dataset_load_text: no path or no place for the datasets");
    gzFile f = cf_data_gzopen(path);
    if (!f) return -1;
    int rc = cf_data_text_read(f, path, seq_len, held_out, train, test);
    gzclose(f);
    return rc;
}

const unsigned char *cf_dataset_vocab(const cf_dataset *d, int *n)
{
    if (n) *n = d ? d->nvocab : 0;
    return d && d->nvocab ? d->vocab : NULL;
}

int cf_dataset_sequential(const cf_dataset *d) { return d ? d->sequential : 0; }
