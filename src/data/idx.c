/* idx.c - IDX files (the MNIST format), plain or gzip'd, and the whole-file reader
 * that the data readers share.
 *
 * An IDX file is a 4-byte magic (0, 0, element type, rank), rank big-endian u32
 * dimensions, then the elements. cflux reads unsigned bytes (type 0x08): labels are
 * 1-D (n), images (n, d1, ...) of 2 to CF_MAX_DIMS dimensions. The header is only a
 * claim: sizes are checked against the limit before anything is allocated, and
 * against the bytes the file really holds after. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "data/data.h"

gzFile cf_data_gzopen(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        cf_seterr("error: %s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
        cf_seterr("error: %s: cannot open: it is a directory", path);
        return NULL;
    }
    errno = 0;
    gzFile f = gzopen(path, "rb");
    if (!f) {
        cf_seterr("error: %s: cannot open: %s", path, errno ? strerror(errno) : "out of memory");
        return NULL;
    }
    gzbuffer(f, 1 << 18);
    return f;
}

/* gzread's failure, worded. */
static int read_error(gzFile f, const char *path)
{
    int code = 0;
    const char *msg = gzerror(f, &code);
    if (code == Z_ERRNO) msg = strerror(errno);
    return cf_seterr("error: %s: cannot read: %s", path, msg && *msg ? msg : "unknown error");
}

/* A gzip stream that ended before its end marker reads as a short file with
 * Z_BUF_ERROR set; anything else at the end is fine. */
static int ended_early(gzFile f)
{
    int code = 0;
    gzerror(f, &code);
    return code == Z_BUF_ERROR;
}

int cf_data_gzslurp(gzFile f, const char *path, size_t hint, size_t max, unsigned char **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    size_t limit = max + 1; /* read at most this much */
    size_t cap = hint ? hint + 1 : (size_t)1 << 16;
    if (cap > (size_t)64 << 20) cap = (size_t)64 << 20;
    if (cap > limit) cap = limit;
    unsigned char *b = malloc(cap + 1);
    if (!b) return cf_oom(cap + 1);
    size_t n = 0;
    while (n < limit) {
        if (n == cap) {
            size_t grow = cap > limit / 2 ? limit : cap * 2;
            unsigned char *nb = realloc(b, grow + 1);
            if (!nb) {
                free(b);
                return cf_oom(grow + 1);
            }
            b = nb;
            cap = grow;
        }
        size_t want = cap - n;
        if (want > (size_t)1 << 30) want = (size_t)1 << 30;
        int got = gzread(f, b + n, (unsigned)want);
        if (got < 0) {
            free(b);
            return read_error(f, path);
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    if (n < limit && ended_early(f)) {
        free(b);
        return cf_seterr("error: %s: truncated: the gzip data ends early (after %zu bytes)", path, n);
    }
    b[n] = 0;
    *buf = b;
    *len = n;
    return 0;
}

/* Read exactly n bytes (fewer only at the end of the file): the count, or -1. */
static int read_some(gzFile f, const char *path, unsigned char *b, int n)
{
    int got = gzread(f, b, (unsigned)n);
    if (got < 0) return read_error(f, path);
    return got;
}

/* One IDX file of bytes, read and checked. */
typedef struct idx_data {
    int rank;
    size_t dims[CF_MAX_DIMS];
    size_t sample;       /* bytes per item: the product of dims[1..] */
    unsigned char *data; /* dims[0] * sample bytes */
} idx_data;

static const char *type_name(int t)
{
    switch (t) {
    case 0x09: return "signed bytes";
    case 0x0B: return "16-bit integers";
    case 0x0C: return "32-bit integers";
    case 0x0D: return "floats";
    case 0x0E: return "doubles";
    default: return NULL;
    }
}

/* "28x28", or "784" */
static void dims_str(const idx_data *d, char *buf, size_t size)
{
    size_t k = 0;
    buf[0] = 0;
    for (int i = 1; i < d->rank && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%zu", i > 1 ? "x" : "", d->dims[i]);
}

/* The header says n items: "60000 images of 28x28" or "60000 labels". */
static void claim_str(const idx_data *d, int labels, char *buf, size_t size)
{
    char dims[96];
    dims_str(d, dims, sizeof dims);
    if (labels) snprintf(buf, size, "%zu label%s", d->dims[0], d->dims[0] == 1 ? "" : "s");
    else snprintf(buf, size, "%zu image%s of %s", d->dims[0], d->dims[0] == 1 ? "" : "s", dims);
}

static int idx_read_open(gzFile f, const char *path, int labels, idx_data *d)
{
    unsigned char h[4 * CF_MAX_DIMS];
    int got = read_some(f, path, h, 4);
    if (got < 0) return -1;
    if (got == 0) return cf_seterr("error: %s: not an IDX file (it is empty)", path);
    if (got < 4) return cf_seterr("error: %s: not an IDX file (only %d bytes)", path, got);
    unsigned magic = (unsigned)h[0] << 24 | (unsigned)h[1] << 16 | (unsigned)h[2] << 8 | h[3];
    int type = h[2], rank = h[3];
    if (h[0] || h[1] || rank == 0 || (type != 0x08 && !type_name(type)))
        return cf_seterr("error: %s: not an IDX file (magic 0x%08x)", path, magic);
    if (type != 0x08)
        return cf_seterr("error: %s: an IDX file of %s (type 0x%02X); cflux reads IDX files of unsigned bytes (0x08)",
                         path, type_name(type), type);
    if (labels && rank != 1)
        return cf_seterr("error: %s: expected labels, a 1-D IDX file, but it has %d dimensions (images given as labels?)",
                         path, rank);
    if (!labels && rank == 1)
        return cf_seterr("error: %s: expected images, an IDX file of 2 or more dimensions, but it is 1-D (labels given as images?)",
                         path);
    if (rank > CF_MAX_DIMS)
        return cf_seterr("error: %s: an IDX file of %d dimensions; cflux reads at most %d", path, rank, CF_MAX_DIMS);
    got = read_some(f, path, h, 4 * rank);
    if (got < 0) return -1;
    if (got < 4 * rank)
        return cf_seterr("error: %s: truncated: the header ends after %d of its %d bytes", path, 4 + got, 4 + 4 * rank);
    d->rank = rank;
    d->sample = 1;
    int too_big = 0;
    for (int i = 0; i < rank; i++) {
        size_t v = (size_t)h[4 * i] << 24 | (size_t)h[4 * i + 1] << 16 | (size_t)h[4 * i + 2] << 8 | h[4 * i + 3];
        d->dims[i] = v;
        if (v == 0) {
            if (i == 0) return cf_seterr("error: %s: the header says the file holds no %s", path, labels ? "labels" : "images");
            return cf_seterr("error: %s: dimension %d of the header is 0", path, i);
        }
        if (v > INT_MAX) too_big = 1;
        if (i > 0 && !too_big) {
            if (d->sample > CF_DATA_MAX_ELEMS / v) too_big = 1;
            else d->sample *= v;
        }
    }
    char claim[160];
    claim_str(d, labels, claim, sizeof claim);
    if (too_big || d->sample > CF_DATA_MAX_ELEMS / d->dims[0])
        return cf_seterr("error: %s: the header says %s, more than the limit of %zu values", path, claim,
                         CF_DATA_MAX_ELEMS);
    size_t total = d->dims[0] * d->sample, len;
    if (cf_data_gzslurp(f, path, total, total, &d->data, &len)) return -1;
    if (len != total) {
        free(d->data);
        d->data = NULL;
        if (len > total) return cf_seterr("error: %s: the header says %s but the file holds more data", path, claim);
        return cf_seterr("error: %s: truncated: the header says %s but the file holds %zu", path, claim, len / d->sample);
    }
    return 0;
}

/* Image bytes to floats in [0, 1]: x gets dims[0] * sample floats. */
static void to_floats(const idx_data *d, float *x)
{
    float scale[256];
    for (int i = 0; i < 256; i++) scale[i] = (float)i / 255.0f;
    size_t n = d->dims[0] * d->sample;
    for (size_t i = 0; i < n; i++) x[i] = scale[d->data[i]];
}

/* One image's shape: the dimensions after the first. */
static cf_shape sample_shape(const idx_data *d)
{
    cf_shape s = {d->rank - 1, {0}};
    for (int i = 1; i < d->rank; i++) s.d[i - 1] = (int)d->dims[i];
    return s;
}

/* Read path as labels (1-D) or images (2-D or more); 0 or -1. */
static int idx_read(const char *path, int labels, idx_data *d)
{
    memset(d, 0, sizeof *d);
    gzFile f = cf_data_gzopen(path);
    if (!f) return -1;
    int rc = idx_read_open(f, path, labels, d);
    gzclose(f);
    return rc;
}

cf_dataset *cf_data_idx_inputs(const char *path)
{
    idx_data im;
    if (idx_read(path, 0, &im)) return NULL;
    size_t n = im.dims[0], nx = n * im.sample;
    float *x = malloc(nx * sizeof *x), *y = calloc(n, sizeof *y);
    if (!x || !y) {
        free(x);
        free(y);
        free(im.data);
        cf_oom((nx + n) * sizeof(float));
        return NULL;
    }
    to_floats(&im, x);
    cf_shape s = sample_shape(&im);
    free(im.data);
    cf_dataset *d = cf_dataset_adopt(x, s, y, 1, n, path);
    if (d) d->classes = 0;
    return d;
}

cf_dataset *cf_dataset_load_idx(const char *images, const char *labels)
{
    if (!images || !labels) {
        cf_seterr("error: cf_dataset_load_idx: no images file or no labels file");
        return NULL;
    }
    idx_data im, lb;
    if (idx_read(images, 0, &im)) return NULL;
    if (idx_read(labels, 1, &lb)) {
        free(im.data);
        return NULL;
    }
    size_t n = im.dims[0];
    if (lb.dims[0] != n) {
        cf_seterr("error: images and labels differ in length: %s has %zu images, %s has %zu labels", images, n, labels,
                  lb.dims[0]);
        free(im.data);
        free(lb.data);
        return NULL;
    }
    size_t nx = n * im.sample;
    float *x = malloc(nx * sizeof *x), *y = malloc(n * sizeof *y);
    if (!x || !y) {
        free(x);
        free(y);
        free(im.data);
        free(lb.data);
        cf_oom((nx + n) * sizeof(float));
        return NULL;
    }
    to_floats(&im, x);
    for (size_t i = 0; i < n; i++) y[i] = (float)lb.data[i];
    cf_shape s = sample_shape(&im);
    free(im.data);
    free(lb.data);
    return cf_dataset_adopt(x, s, y, 1, n, labels);
}
