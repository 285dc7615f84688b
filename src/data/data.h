/* data.h - what the data readers share: the dataset struct, the size limit, opening
 * files, and the readers' stream entry points (the file readers open a path and call
 * them; the fuzzers call them on bytes).
 *
 * A dataset is n samples in two contiguous float arrays: x (n, sample shape...) and
 * y (n, ysize), counted blocks of the memory budget (core/mem.h). It owns both, and a
 * name (a path, or "arrays") for messages; a CSV dataset also remembers its columns.
 * A streamed dataset (an image folder) has no x but a source (stream.h) that decodes
 * its samples when they are read: cf_dataset_fetch reads any dataset's samples. */
#ifndef CF_DATA_DATA_H
#define CF_DATA_DATA_H

#include <stddef.h>
#include <zlib.h>

#include "cflux.h"

/* The most floats a dataset's x (or y) may hold: 2^31, 8 GiB. Files claiming more are
 * refused before anything that size is allocated. */
#define CF_DATA_MAX_ELEMS ((size_t)1 << 31)

/* The longest CSV header name kept, in bytes (longer ones are cut). */
#define CF_DATA_NAME_MAX 64

struct cf_dataset {
    size_t n;         /* samples, > 0 */
    cf_shape shape;   /* one sample's shape, rank 1 .. CF_MAX_DIMS - 1, no batch dim */
    size_t sample;    /* floats per sample: the product of shape */
    int ysize;        /* floats per target, >= 1 */
    int classes;      /* max label + 1 for class-index targets, else 0 */
    float *x;         /* (n, shape...), counted */
    float *y;         /* (n, ysize), counted */
    int borrowed;     /* x and y are the caller's (cf_dataset_view_arrays): never freed here */
    char *name;       /* for messages: the file of the inputs */
    char *target_name;  /* the file of the targets when it is another (IDX labels), else NULL */
    int ncols;        /* CSV: columns in the file; else 0 */
    int label_col;    /* CSV with labels: the label's column (0-based); else -1 */
    char *colnames;   /* CSV with a header: ncols uint32 offsets, then the names; counted; else NULL */
    int sequential;   /* 1: sample j + 1 goes on where sample j ends (text): cf_fit keeps the order */
    int nvocab;       /* text: distinct bytes of the file, 1 .. 256; else 0 */
    unsigned char vocab[256];   /* text: those bytes, ascending; class index = position */
    int nclass_names; /* the data's own class names (word labels, image folders); else 0 */
    char **class_names;   /* nclass_names strings, malloc'd, as the array */
    char *about;      /* cf_dataset_about: what part of what it is, for people; malloc'd, or NULL */
    struct cf_source *src;    /* streamed (an image folder): the files x is read from, and x is NULL */
    size_t ignored;           /* an image folder: files passed over that are not images (hidden, other names) */
    size_t bad;               /* an image folder with skip_bad: images skipped that could not be read */
    char *first_bad;          /* the first of those's message, or NULL */
};

/* Give d a copy of a phrase saying what it is (NULL: none). 0 or -1 (out of memory). */
int cf_dataset_set_about(cf_dataset *d, const char *about);

/* Give d copies of n class names (n 0: none). 0 or -1 (out of memory). */
int cf_dataset_set_class_names(cf_dataset *d, const char *const *names, int n);

/* A dataset that takes ownership of x and y (counted blocks, sized n * count(shape)
 * and n * ysize) and copies name. The caller has checked the sizes. It has no columns
 * (ncols 0, label_col -1). On failure (out of memory) it frees x and y and returns
 * NULL with the message set. */
cf_dataset *cf_dataset_adopt(float *x, cf_shape shape, float *y, int ysize, size_t n, const char *name);

/* Samples idx[0 .. b) of d into x, one after another (sample floats each): copied, or
 * decoded from a streamed dataset's files. 0, or -1 with the error naming the file. */
int cf_dataset_fetch(const cf_dataset *d, const size_t *idx, size_t b, float *x);

/* The samples the next fetches of d will ask for, in order, in batches of batch: a
 * streamed dataset starts reading them ahead (see stream.h); others do nothing. n 0
 * ends it. 0, or -1 with the error. */
int cf_dataset_plan(const cf_dataset *d, const size_t *order, size_t n, size_t batch);
/* The plan order[i] = first + i, for i < n (an evaluation's, in order). */
int cf_dataset_plan_range(const cf_dataset *d, size_t first, size_t n, size_t batch);

/* images:DIR[,TESTDIR] (testdir NULL: none): see cf_data_open_opts. 0, or -1 with the
 * error and nothing allocated. */
int cf_data_images_open(const char *dir, const char *testdir, const cf_data_opts *o, cf_dataset **train,
                        cf_dataset **test);

/* Inputs alone, for prediction (targets 0, classes 0): the images of an IDX file, or
 * every column of a CSV file as a feature (header detected). */
cf_dataset *cf_data_idx_inputs(gzFile f, const char *path);
cf_dataset *cf_data_csv_inputs(gzFile f, const char *path);

/* Text read from f (named name in messages) as sequences of seq_len characters; see
 * cf_dataset_load_text. 0, or -1 with the message and nothing to free. */
int cf_data_text_read(gzFile f, const char *name, int seq_len, double held_out, cf_dataset **train,
                      cf_dataset **test);

/* Open a file for reading with zlib (which reads plain files as they are). NULL with
 * "error: PATH: cannot open: REASON" on failure. */
gzFile cf_data_gzopen(const char *path);

/* Read up to n bytes (fewer only at the end): the count, or -1 with the message. A
 * gzip stream that ends before its end marker is an error ("truncated"), naming path;
 * *total counts the bytes read so far, for that message. */
long cf_data_read(gzFile f, const char *path, void *buf, size_t n, size_t *total);

/* ---- the readers on streams ---- */

/* How to read a CSV file; see cf_dataset_load_csv. chunk and max_line are for tests
 * and fuzzers, which make them small to cross every boundary; 0 takes the defaults. */
typedef struct cf_csv_opts {
    int has_label;    /* 0: every column is a feature (targets 0) */
    int label_col;    /* with a label: its column, 0-based, negative from the end (when label is NULL) */
    const char *label;      /* the label column by number or header name; NULL: label_col */
    const char *features;   /* the feature columns, numbers or names separated by commas; NULL: all others */
    int header;       /* 1 a header row, 0 none, -1 decide */
    const char *const *class_names;   /* the classes known: word labels are these indices, */
    int nclass_names;                 /* and another word is an error (0: the words found, sorted) */
    const char *classes_of;           /* whose classes those are, for that message ("the model") */
    size_t chunk;     /* bytes read at a time; 0: 1 MiB */
    size_t max_line;  /* the longest line; 0: 64 MiB */
} cf_csv_opts;

/* A CSV file from f, named name in messages. NULL with the message. */
cf_dataset *cf_data_csv_read(gzFile f, const char *name, const cf_csv_opts *o);
/* The same from the file at path. */
cf_dataset *cf_data_csv_load(const char *path, const cf_csv_opts *o);

/* An IDX file of unsigned bytes: the header's dimensions and the items as floats. */
typedef struct cf_idx {
    int rank;
    size_t dims[CF_MAX_DIMS];
    size_t sample;    /* values per item: the product of dims[1..] */
    float *v;         /* dims[0] * sample floats, counted (cf_mem_free) */
} cf_idx;

/* Read an IDX file from f (named name in messages) as labels (rank 1; values as whole
 * numbers) or images (rank 2 or more; values scaled to [0, 1]). 0, or -1 with the
 * message and nothing to free. */
int cf_data_idx_read(gzFile f, const char *name, int labels, cf_idx *out);

#endif
