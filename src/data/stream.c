/* stream.c - a streamed dataset's source (see stream.h): the file list, decoding one
 * file, and the reader thread that decodes ahead into a ring of samples.
 *
 * The ring: the plan is order[0 .. n); the thread decodes position p into slot p % cap
 * once the consumer has taken position p - cap, so it never holds more than cap
 * samples. A file that fails stops the thread there: its message waits for the
 * consumer to reach that position, so an error comes when, and only when, the
 * sample is asked for, as it would without the thread. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "data/data.h"
#include "data/image.h"
#include "data/stream.h"

struct cf_prefetch {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t more, room;   /* a sample made; a slot given back */
    cf_source *s;
    size_t *order, n;            /* the plan */
    size_t made, taken;          /* positions decoded, and handed out */
    size_t cap, sample;          /* slots, floats per slot */
    float *ring;                 /* cap * sample floats, counted */
    int stop;                    /* asked to end */
    size_t bad_at;               /* the position whose file failed, or SIZE_MAX */
    char *msg;                   /* its message */
};

cf_source *cf_source_new(int c, int h, int w, int exact, size_t root_len)
{
    cf_source *s = calloc(1, sizeof *s);
    if (!s) return cf_oom(sizeof *s), NULL;
    s->c = c;
    s->h = h;
    s->w = w;
    s->exact = exact;
    s->root_len = root_len;
    for (int b = 0; b < 256; b++) s->lut[b] = (float)b / 255.0f;
    return s;
}

int cf_source_add(cf_source *s, const char *path, int64_t bytes)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        char **p = realloc(s->path, cap * sizeof *p);
        if (!p) return cf_oom(cap * sizeof *p);
        s->path = p;
        int64_t *b = realloc(s->bytes, cap * sizeof *b);
        if (!b) return cf_oom(cap * sizeof *b);
        s->bytes = b;
        s->cap = cap;
    }
    if (!(s->path[s->n] = strdup(path))) return cf_oom(strlen(path) + 1);
    s->bytes[s->n++] = bytes;
    return 0;
}

cf_source *cf_source_pick(const cf_source *s, const unsigned char *pick, int want)
{
    cf_source *t = cf_source_new(s->c, s->h, s->w, s->exact, s->root_len);
    for (size_t i = 0; t && i < s->n; i++)
        if (pick[i] == want && cf_source_add(t, s->path[i], s->bytes[i])) {
            cf_source_free(t);
            return NULL;
        }
    return t;
}

static void prefetch_stop(cf_source *s);

void cf_source_free(cf_source *s)
{
    if (!s) return;
    prefetch_stop(s);
    cf_mem_free(s->cache);
    free(s->held);
    for (size_t i = 0; i < s->n; i++) free(s->path[i]);
    free(s->path);
    free(s->bytes);
    free(s);
}

/* ---- one file ---- */

static unsigned be16(const unsigned char *b) { return (unsigned)b[0] << 8 | b[1]; }
static unsigned long be32(const unsigned char *b)
{
    return (unsigned long)b[0] << 24 | (unsigned long)b[1] << 16 | (unsigned long)b[2] << 8 | b[3];
}

/* JPEG: the markers after SOI, segment by segment, to the first start of frame (SOF0 to
 * SOF15 but DHT C4, JPG C8 and DAC CC), whose height and width follow its precision. */
static int jpeg_size(FILE *f, const char *path, int *w, int *h)
{
    unsigned char b[8];
    for (int seg = 0; seg < 4096; seg++) {
        int c = fgetc(f);
        if (c != 0xFF) break;
        while ((c = fgetc(f)) == 0xFF) {}   /* fill bytes */
        if (c == EOF) break;
        if (c == 0xD8 || (c >= 0xD0 && c <= 0xD7) || c == 0x01) continue;   /* no length */
        if (c == 0xD9 || c == 0xDA) break;   /* the end, or the scan, before a frame */
        if (fread(b, 1, 2, f) != 2) break;
        unsigned len = be16(b);
        if (len < 2) break;
        if (c >= 0xC0 && c <= 0xCF && c != 0xC4 && c != 0xC8 && c != 0xCC) {
            if (len < 7 || fread(b, 1, 5, f) != 5) break;
            *h = (int)be16(b + 1);
            *w = (int)be16(b + 3);
            if (*w < 1 || *h < 1) return cf_seterr("error: %s: corrupt JPEG: an image of %dx%d", path, *w, *h);
            return 0;
        }
        if (fseek(f, (long)len - 2, SEEK_CUR)) break;
    }
    return cf_seterr("error: %s: truncated or corrupt JPEG: no frame header", path);
}

int cf_image_probe(const char *path, int *w, int *h)
{
    FILE *f = fopen(path, "rb");
    if (!f) return cf_seterr("error: %s: cannot open: %s", path, strerror(errno));
    unsigned char b[24];
    size_t got = fread(b, 1, sizeof b, f);
    int rc;
    if (got >= 2 && b[0] == 0xFF && b[1] == 0xD8) {
        rc = fseek(f, 2, SEEK_SET) ? cf_seterr("error: %s: cannot read it", path) : jpeg_size(f, path, w, h);
    } else if (got >= 8 && memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0) {
        if (got < 24) rc = cf_seterr("error: %s: truncated PNG: %zu bytes, before the image's size", path, got);
        else if (memcmp(b + 12, "IHDR", 4) != 0) rc = cf_seterr("error: %s: corrupt PNG: no IHDR chunk first", path);
        else {
            unsigned long W = be32(b + 16), H = be32(b + 20);
            rc = W < 1 || H < 1 || W > 0x7fffffffUL || H > 0x7fffffffUL
                     ? cf_seterr("error: %s: corrupt PNG: an image of %lux%lu", path, W, H) : 0;
            *w = (int)W;
            *h = (int)H;
        }
    } else if (got == 0) {
        rc = ferror(f) ? cf_seterr("error: %s: cannot read it: %s", path, strerror(errno))
                       : cf_seterr("error: %s: an empty file, not an image", path);
    } else {
        const char *like = cf_image_looks_like(b, (long)(got < 8 ? got : 8));
        rc = cf_seterr("error: %s: not a PNG or JPEG image%s%s%s", path, like ? " (it looks like " : "", like ? like : "",
                       like ? ")" : "");
    }
    fclose(f);
    return rc;
}

/* Keep image i's floats as bytes when each is an 8-bit value's, b / 255. */
static void keep(cf_source *s, size_t i, const float *x, size_t sample)
{
    unsigned char *row = s->cache + i * sample;
    for (size_t j = 0; j < sample; j++) {
        float v = x[j] * 255.0f + 0.5f;
        int b = v >= 0 && v < 256 ? (int)v : 0;
        if (s->lut[b] != x[j]) return;
        row[j] = (unsigned char)b;
    }
    s->held[i] = 1;
}

/* The one place a file becomes pixels. */
int cf_source_decode(cf_source *s, size_t i, float *out)
{
    size_t sample = (size_t)s->c * (size_t)s->h * (size_t)s->w;
    if (s->held && s->held[i]) {   /* kept: the same floats as decoding gives */
        const unsigned char *row = s->cache + i * sample;
        for (size_t j = 0; j < sample; j++) out[j] = s->lut[row[j]];
        return 0;
    }
    const char *path = s->path[i];
    gzFile f = cf_data_gzopen(path);
    if (!f) return -1;
    int rc = cf_image_read(f, path, s->c, s->h, s->w, s->exact, out);
    gzclose(f);
    if (rc == 0 && s->cache) keep(s, i, out, sample);
    return rc;
}

/* Keep decoded images when all of them fit the share of the memory left (decided once,
 * on the caller's thread, before a reader starts). */
static void decide_cache(cf_source *s)
{
    if (s->cache_decided) return;
    s->cache_decided = 1;
    size_t sample = (size_t)s->c * (size_t)s->h * (size_t)s->w;
    if (!s->n || sample > CF_STREAM_CACHE_MAX / s->n) return;
    size_t bytes = s->n * sample;
    if (bytes > cf_mem_room() / CF_STREAM_CACHE_SHARE) return;
    s->held = calloc(s->n, 1);
    s->cache = s->held ? cf_mem_alloc(bytes, "the images kept decoded") : NULL;
    if (!s->cache) {   /* not kept: streamed every time, as a larger folder is */
        free(s->held);
        s->held = NULL;
        cf_clearerr();
    }
}

/* ---- the reader ahead ---- */

static void *prefetch_run(void *arg)
{
    struct cf_prefetch *p = arg;
    pthread_mutex_lock(&p->mu);
    while (p->made < p->n && !p->stop) {
        if (p->made - p->taken >= p->cap) {
            pthread_cond_wait(&p->room, &p->mu);
            continue;
        }
        size_t at = p->made;
        pthread_mutex_unlock(&p->mu);
        int rc = cf_source_decode(p->s, p->order[at], p->ring + at % p->cap * p->sample);
        char *msg = rc ? strdup(cf_last_error()) : NULL;
        pthread_mutex_lock(&p->mu);
        if (rc) {
            p->bad_at = at;
            p->msg = msg;   /* NULL: out of memory, said when it is reached */
            break;
        }
        p->made++;
        pthread_cond_signal(&p->more);
    }
    pthread_cond_signal(&p->more);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void prefetch_stop(cf_source *s)
{
    struct cf_prefetch *p = s->pf;
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_signal(&p->room);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->more);
    pthread_cond_destroy(&p->room);
    cf_mem_free(p->ring);
    free(p->order);
    free(p->msg);
    free(p);
    s->pf = NULL;
}

int cf_source_plan(cf_source *s, const size_t *order, size_t n, size_t batch)
{
    prefetch_stop(s);
    if (n == 0) return 0;
    decide_cache(s);
    size_t sample = (size_t)s->c * (size_t)s->h * (size_t)s->w, cap = CF_STREAM_BATCHES * (batch ? batch : 1);
    if (cap > CF_STREAM_BYTES / (sample * sizeof(float))) cap = CF_STREAM_BYTES / (sample * sizeof(float));
    if (cap < 1) cap = 1;
    if (cap > n) cap = n;
    struct cf_prefetch *p = calloc(1, sizeof *p);
    if (!p) return cf_oom(sizeof *p);
    p->s = s;
    p->n = n;
    p->cap = cap;
    p->sample = sample;
    p->bad_at = SIZE_MAX;
    if (!(p->order = malloc(n * sizeof *p->order)) ||
        !(p->ring = cf_mem_alloc(cap * sample * sizeof *p->ring, "the images read ahead"))) {
        if (!p->order) cf_oom(n * sizeof *p->order);
        free(p->order);
        free(p);
        return -1;
    }
    memcpy(p->order, order, n * sizeof *order);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->more, NULL);
    pthread_cond_init(&p->room, NULL);
    if (pthread_create(&p->thread, NULL, prefetch_run, p)) {
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->more);
        pthread_cond_destroy(&p->room);
        cf_mem_free(p->ring);
        free(p->order);
        free(p);
        return cf_seterr("error: cannot start the thread that reads images ahead");
    }
    s->pf = p;
    return 0;
}

/* The sample at the plan's next position into x when it is file i: 1 taken, 0 not the
 * plan's (nothing done), -1 its file failed (the message set). */
static int take(struct cf_prefetch *p, size_t i, float *x)
{
    pthread_mutex_lock(&p->mu);
    if (p->taken >= p->n || p->order[p->taken] != i) {
        pthread_mutex_unlock(&p->mu);
        return 0;
    }
    while (p->made <= p->taken && p->bad_at != p->taken) pthread_cond_wait(&p->more, &p->mu);
    if (p->bad_at == p->taken) {
        pthread_mutex_unlock(&p->mu);
        return p->msg ? cf_seterr("%s", p->msg) : cf_oom(0);
    }
    pthread_mutex_unlock(&p->mu);
    /* slot taken % cap is not written again before taken moves on */
    memcpy(x, p->ring + p->taken % p->cap * p->sample, p->sample * sizeof *x);
    pthread_mutex_lock(&p->mu);
    p->taken++;
    pthread_cond_signal(&p->room);
    pthread_mutex_unlock(&p->mu);
    return 1;
}

int cf_source_fetch(cf_source *s, const size_t *idx, size_t b, float *x)
{
    size_t sample = (size_t)s->c * (size_t)s->h * (size_t)s->w;
    for (size_t k = 0; k < b; k++, x += sample) {
        if (s->pf) {
            int got = take(s->pf, idx[k], x);
            if (got < 0) return -1;
            if (got && s->pf->taken < s->pf->n) continue;
            prefetch_stop(s);   /* the plan is done (its queue freed at once), or not followed */
            if (got) continue;
        }
        if (cf_source_decode(s, idx[k], x)) return -1;
    }
    return 0;
}
