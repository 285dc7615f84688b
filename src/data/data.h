/* data.h - what the data readers share: the dataset struct, the size limit, and a
 * reader that takes a whole file (plain or gzip'd) into memory with checks.
 *
 * A dataset is n samples in two contiguous float arrays: x (n, sample shape...) and
 * y (n, ysize). It owns both, and a name (a path, or "arrays") for messages. */
#ifndef CF_DATA_DATA_H
#define CF_DATA_DATA_H

#include <stddef.h>
#include <zlib.h>

#include "cflux.h"

/* The most floats a dataset's x (or y) may hold: 2^31, 8 GiB. Files claiming more are
 * refused before anything that size is allocated. */
#define CF_DATA_MAX_ELEMS ((size_t)1 << 31)

struct cf_dataset {
    size_t n;         /* samples, > 0 */
    cf_shape shape;   /* one sample's shape, rank 1 .. CF_MAX_DIMS - 1, no batch dim */
    size_t sample;    /* floats per sample: the product of shape */
    int ysize;        /* floats per target, >= 1 */
    int classes;      /* max label + 1 for class-index targets, else 0 */
    float *x;         /* (n, shape...) */
    float *y;         /* (n, ysize) */
    char *name;       /* for messages */
};

/* A dataset that takes ownership of x and y (malloc'd, sized n * count(shape) and
 * n * ysize) and copies name. The caller has checked the sizes. On failure (out of
 * memory) it frees x and y and returns NULL with the message set. */
cf_dataset *cf_dataset_adopt(float *x, cf_shape shape, float *y, int ysize, size_t n, const char *name);

/* Inputs alone, for prediction (targets 0, classes 0): the images of an IDX file, or
 * every column of a CSV file as a feature (header detected). */
cf_dataset *cf_data_idx_inputs(const char *path);
cf_dataset *cf_data_csv_inputs(const char *path);

/* Open a file for reading with zlib (which reads plain files as they are). NULL with
 * "error: PATH: cannot open: REASON" on failure. */
gzFile cf_data_gzopen(const char *path);

/* Read the rest of f into a new buffer: *buf (with one NUL byte after the data, not
 * counted in *len). Reading stops after max + 1 bytes, so *len > max says "more than
 * max" without reading it all; the caller words that error. hint is how many bytes
 * the caller expects (0: unknown); it sizes the first allocation, at most 64 MiB, so
 * that an honest file takes one allocation and a lying header costs nothing. A read
 * error or a gzip stream that ends early is an error naming path. 0 or -1; *buf is
 * NULL on error. */
int cf_data_gzslurp(gzFile f, const char *path, size_t hint, size_t max, unsigned char **buf, size_t *len);

#endif
