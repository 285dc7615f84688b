/* idx.c - IDX files (the MNIST format), plain or gzip'd.
 *
 * An IDX file is a 4-byte magic (0, 0, element type, rank), rank big-endian u32
 * dimensions, then the elements. cflux reads unsigned bytes (type 0x08): labels are
 * 1-D (n), images (n, d1, ...) of 2 to CF_MAX_DIMS dimensions. The header is only a
 * claim: sizes are checked against the limits (values, then the memory limit) before
 * anything is allocated, and against the bytes the file really holds after. The
 * bytes become floats as they are read, into an array that grows as the data
 * arrives, so a header that claims more than the file holds costs nothing. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "data/data.h"

/* The first allocation for the values, in floats (64 MiB); it doubles from there. */
#define FIRST_FLOATS ((size_t)16 << 20)

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
static void dims_str(const cf_idx *d, char *buf, size_t size)
{
    size_t k = 0;
    buf[0] = 0;
    for (int i = 1; i < d->rank && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%zu", i > 1 ? "x" : "", d->dims[i]);
}

/* The header says n items: "60000 images of 28x28" or "60000 labels". */
static void claim_str(const cf_idx *d, int labels, char *buf, size_t size)
{
    char dims[96];
    dims_str(d, dims, sizeof dims);
    if (labels) snprintf(buf, size, "%zu label%s", d->dims[0], d->dims[0] == 1 ? "" : "s");
    else snprintf(buf, size, "%zu image%s of %s", d->dims[0], d->dims[0] == 1 ? "" : "s", dims);
}

/* The magic: 0 when it is an IDX file of bytes of the kind wanted, with *rank set. */
static int read_magic(gzFile f, const char *path, int labels, int *rank, size_t *nread)
{
    unsigned char h[4];
    long got = cf_data_read(f, path, h, 4, nread);
    if (got < 0) return -1;
    if (got == 0) return cf_seterr("error: %s: not an IDX file (it is empty)", path);
    if (got < 4) return cf_seterr("error: %s: not an IDX file (only %ld bytes)", path, got);
    unsigned magic = (unsigned)h[0] << 24 | (unsigned)h[1] << 16 | (unsigned)h[2] << 8 | h[3];
    int type = h[2];
    *rank = h[3];
    if (h[0] || h[1] || *rank == 0 || (type != 0x08 && !type_name(type)))
        return cf_seterr("error: %s: not an IDX file (magic 0x%08x)", path, magic);
    if (type != 0x08)
        return cf_seterr("error: %s: an IDX file of %s (type 0x%02X); cflux reads IDX files of unsigned bytes (0x08)",
                         path, type_name(type), type);
    if (labels && *rank != 1)
        return cf_seterr("error: %s: expected labels, a 1-D IDX file, but it has %d dimensions (images given as labels?)",
                         path, *rank);
    if (!labels && *rank == 1)
        return cf_seterr("error: %s: expected images, an IDX file of 2 or more dimensions, but it is 1-D (labels given as images?)",
                         path);
    if (*rank > CF_MAX_DIMS)
        return cf_seterr("error: %s: an IDX file of %d dimensions; cflux reads at most %d", path, *rank, CF_MAX_DIMS);
    return 0;
}

/* The dimensions, checked against the limit of values: 0 or -1. */
static int read_dims(gzFile f, const char *path, int labels, cf_idx *d, size_t *nread)
{
    unsigned char h[4 * CF_MAX_DIMS];
    long got = cf_data_read(f, path, h, 4 * (size_t)d->rank, nread);
    if (got < 0) return -1;
    if (got < 4 * d->rank)
        return cf_seterr("error: %s: truncated: the header ends after %ld of its %d bytes", path, 4 + got,
                         4 + 4 * d->rank);
    d->sample = 1;
    int too_big = 0;
    for (int i = 0; i < d->rank; i++) {
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
    char need[CF_MEM_STR];
    size_t bytes = d->dims[0] * d->sample * sizeof(float);
    if (bytes > cf_mem_room())
        return cf_mem_refuse(0, "%s: the header says %s: the data needs %s", path, claim, cf_mem_str(bytes, need));
    return 0;
}

/* The values after the header into d->v, as floats: bytes / 255 for images, the
 * bytes themselves for labels. Then the file must end. */
static int read_values(gzFile f, const char *path, int labels, cf_idx *d, size_t *nread)
{
    size_t total = d->dims[0] * d->sample, have = 0, cap = 0;
    float scale[256];
    for (int i = 0; i < 256; i++) scale[i] = labels ? (float)i : (float)i / 255.0f;
    char what[300];
    snprintf(what, sizeof what, "%s: the data", path);
    unsigned char buf[1 << 16];
    long got = 0;
    while (have < total) {
        if (have == cap) {
            size_t grow = cap ? 2 * cap : FIRST_FLOATS;
            if (grow > total) grow = total;
            float *v = cf_mem_realloc(d->v, grow * sizeof *v, what);
            if (!v) return -1;
            d->v = v;
            cap = grow;
        }
        size_t want = cap - have < sizeof buf ? cap - have : sizeof buf;
        if ((got = cf_data_read(f, path, buf, want, nread)) < 0) return -1;
        for (long i = 0; i < got; i++) d->v[have + (size_t)i] = scale[buf[i]];
        have += (size_t)got;
        if ((size_t)got < want) break;
    }
    char claim[160];
    claim_str(d, labels, claim, sizeof claim);
    if (have < total)
        return cf_seterr("error: %s: truncated: the header says %s but the file holds %zu", path, claim,
                         have / d->sample);
    if ((got = cf_data_read(f, path, buf, 1, nread)) < 0) return -1;
    if (got > 0) return cf_seterr("error: %s: the header says %s but the file holds more data", path, claim);
    return 0;
}

int cf_data_idx_read(gzFile f, const char *name, int labels, cf_idx *out)
{
    memset(out, 0, sizeof *out);
    size_t nread = 0;
    if (read_magic(f, name, labels, &out->rank, &nread) || read_dims(f, name, labels, out, &nread) ||
        read_values(f, name, labels, out, &nread)) {
        cf_mem_free(out->v);
        out->v = NULL;
        return -1;
    }
    return 0;
}

/* One image's shape: the dimensions after the first. */
static cf_shape sample_shape(const cf_idx *d)
{
    cf_shape s = {d->rank - 1, {0}};
    for (int i = 1; i < d->rank; i++) s.d[i - 1] = (int)d->dims[i];
    return s;
}

/* Read path as labels (1-D) or images (2-D or more); 0 or -1. */
static int idx_read(const char *path, int labels, cf_idx *d)
{
    memset(d, 0, sizeof *d);
    gzFile f = cf_data_gzopen(path);
    if (!f) return -1;
    int rc = cf_data_idx_read(f, path, labels, d);
    gzclose(f);
    return rc;
}

cf_dataset *cf_data_idx_inputs(gzFile f, const char *path)
{
    cf_idx im;
    memset(&im, 0, sizeof im);
    if (cf_data_idx_read(f, path, 0, &im)) return NULL;
    size_t n = im.dims[0];
    char what[300];
    snprintf(what, sizeof what, "%s: the targets", path);
    float *y = cf_mem_alloc(n * sizeof *y, what);
    if (!y) {
        cf_mem_free(im.v);
        return NULL;
    }
    memset(y, 0, n * sizeof *y);
    cf_dataset *d = cf_dataset_adopt(im.v, sample_shape(&im), y, 1, n, path);
    if (d) d->classes = 0;
    return d;
}

/* Named after the images, the file of the inputs; the labels file names the targets. */
cf_dataset *cf_dataset_load_idx(const char *images, const char *labels)
{
    if (!images || !labels) {
        cf_seterr("error: cf_dataset_load_idx: no images file or no labels file");
        return NULL;
    }
    cf_idx im, lb;
    if (idx_read(images, 0, &im)) return NULL;
    if (idx_read(labels, 1, &lb)) {
        cf_mem_free(im.v);
        return NULL;
    }
    size_t n = im.dims[0];
    if (lb.dims[0] != n) {
        cf_seterr("error: images and labels differ in length: %s has %zu images, %s has %zu labels", images, n, labels,
                  lb.dims[0]);
        cf_mem_free(im.v);
        cf_mem_free(lb.v);
        return NULL;
    }
    cf_dataset *d = cf_dataset_adopt(im.v, sample_shape(&im), lb.v, 1, n, images);
    if (d && !(d->target_name = strdup(labels))) {
        cf_dataset_free(d);
        cf_oom(strlen(labels) + 1);
        return NULL;
    }
    return d;
}
