/* stream.h - inputs that stay in their files (an image folder, images:DIR): a dataset
 * whose x is NULL keeps a source instead, the files' paths, and decodes a sample when
 * it is read. A background thread reads ahead, into a bounded queue, the samples in
 * the order a caller says it will ask for them (cf_source_plan): an epoch's shuffled
 * order is known before the epoch starts. What a sample decodes to does not depend on
 * which thread decodes it, so a streamed run is bit for bit the run on the same
 * images held in memory.
 *
 * The folder itself (its class subfolders, which files are images) is read by
 * folder.c; this file keeps the list and reads it. */
#ifndef CF_DATA_STREAM_H
#define CF_DATA_STREAM_H

#include <stddef.h>
#include <stdint.h>

/* The queue holds CF_STREAM_BATCHES batches of the plan's batch size, fewer when they
 * would pass CF_STREAM_BYTES (64 MiB), and at least one sample. */
#define CF_STREAM_BATCHES 4
#define CF_STREAM_BYTES ((size_t)64 << 20)

/* Images decoded once are kept, a byte a pixel, when every value is one of an 8-bit
 * image's (b / 255, as decoded: the same floats again) and all the folder's pixels fit
 * in CF_STREAM_CACHE_SHARE of the memory left under the limit when it is first read,
 * and in CF_STREAM_CACHE_MAX: a folder that fits is decoded in its first epoch only.
 * An image that is not such (resized, 16-bit, colour made grey) is decoded each time;
 * a folder too large for the share streams every epoch. */
#define CF_STREAM_CACHE_MAX ((size_t)1 << 30)
#define CF_STREAM_CACHE_SHARE 4   /* a quarter */

typedef struct cf_source cf_source;
struct cf_prefetch;

struct cf_source {
    size_t n, cap;          /* files, and room for them */
    char **path;            /* n paths, malloc'd each */
    int64_t *bytes;         /* n file sizes when listed (the data-parallel fingerprint hashes them) */
    size_t root_len;        /* bytes of path[i] that are the folder's own name and its '/' */
    int c, h, w;            /* what a file decodes to: c planes of h x w */
    int exact;              /* an image of another size is an error, not resized */
    struct cf_prefetch *pf; /* the reader ahead, or NULL */
    int cache_decided;      /* whether to keep decoded images was decided (at the first plan) */
    unsigned char *cache;   /* n * c * h * w bytes, counted, or NULL: no keeping */
    unsigned char *held;    /* n flags: image i's bytes are in cache */
    float lut[256];         /* (float)b / 255, the floats an 8-bit image decodes to */
};

/* An empty source of images decoded to c planes of h x w (exact: not resized). NULL
 * with the message when out of memory. */
cf_source *cf_source_new(int c, int h, int w, int exact, size_t root_len);
/* Add a file. 0 or -1 (out of memory). */
int cf_source_add(cf_source *s, const char *path, int64_t bytes);
/* The files i with pick[i] == want, in order, as a new source. NULL when out of memory. */
cf_source *cf_source_pick(const cf_source *s, const unsigned char *pick, int want);
/* Stop its reader and free it all. */
void cf_source_free(cf_source *s);

/* An image file's size from its header (PNG's IHDR, JPEG's start of frame), reading
 * a few bytes: 0, or -1 with "error: PATH: ..." (cannot open, not a PNG or JPEG,
 * truncated before the size). Thread-safe. */
int cf_image_probe(const char *path, int *w, int *h);

/* File i decoded into out (c * h * w floats), or its kept bytes, on one thread at a
 * time (the reader ahead, or the caller once it is stopped). 0, or -1 with the error,
 * which names the file. */
int cf_source_decode(cf_source *s, size_t i, float *out);

/* Files idx[0 .. b) into x, one sample after another: from the queue while the
 * requests follow the plan, else decoded here (the queue is then dropped). 0, or -1
 * with the error of the first file that could not be read. */
int cf_source_fetch(cf_source *s, const size_t *idx, size_t b, float *x);

/* The files the next fetches will ask for, in order (n of them, copied), read in
 * batches of `batch`: a thread starts decoding them into the queue. n 0 stops it.
 * 0, or -1 when the thread or its queue cannot be made (fetches then decode as they
 * are asked). */
int cf_source_plan(cf_source *s, const size_t *order, size_t n, size_t batch);

#endif
