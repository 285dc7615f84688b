/* dataset.c - the dataset: n samples of x and y in memory, made from arrays or taken
 * over from a reader, its accessors (the columns of a CSV file among them), and the
 * seeded train/validation split, and the samples of some of the classes. */
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "core/rng.h"
#include "data/data.h"
#include "data/stream.h"

/* Targets are class indices when there is one per sample and each is a whole number
 * >= 0; classes is then the largest + 1. Past 2^24 floats stop holding every whole
 * number, so larger "labels" are taken for regression targets. */
static int count_classes(const float *y, int ysize, size_t n)
{
    if (ysize != 1 || !y) return 0;
    float max = 0;
    for (size_t i = 0; i < n; i++) {
        float v = y[i];
        if (!(v >= 0 && v <= 16777215.0f) || v != floorf(v)) return 0;
        if (v > max) max = v;
    }
    return (int)max + 1;
}

static size_t shape_count(cf_shape s)
{
    size_t c = 1;
    for (int i = 0; i < s.rank; i++) c *= (size_t)s.d[i];
    return c;
}

cf_dataset *cf_dataset_adopt(float *x, cf_shape shape, float *y, int ysize, size_t n, const char *name)
{
    cf_dataset *d = calloc(1, sizeof *d);
    char *nm = strdup(name ? name : "");
    if (!d || !nm) {
        free(d);
        free(nm);
        cf_mem_free(x);
        cf_mem_free(y);
        cf_oom(sizeof *d + strlen(name ? name : "") + 1);
        return NULL;
    }
    d->label_col = -1;
    d->n = n;
    d->shape = shape;
    d->sample = shape_count(shape);
    d->ysize = ysize;
    d->x = x;
    d->y = y;
    d->name = nm;
    d->classes = count_classes(y, ysize, n);
    return d;
}

/* The checks of cf_dataset_from_arrays and cf_dataset_view_arrays: 0, or -1 with the
 * error named after fn. */
static int check_arrays(const char *fn, const float *x, cf_shape xs, const float *y, int ysize, size_t n)
{
    if (!x || !y) return cf_seterr("error: %s: x or y is NULL", fn);
    if (n == 0) return cf_seterr("error: %s: no samples (n is 0)", fn);
    if (xs.rank < 1 || xs.rank > CF_MAX_DIMS - 1)
        return cf_seterr("error: %s: a sample shape has 1 to %d dimensions, not %d", fn, CF_MAX_DIMS - 1, xs.rank);
    size_t sample = 1;
    for (int i = 0; i < xs.rank; i++) {
        if (xs.d[i] <= 0)
            return cf_seterr("error: %s: dimension %d of the sample shape is %d; dimensions are positive", fn, i,
                             xs.d[i]);
        sample *= (size_t)xs.d[i];
        if (sample > CF_DATA_MAX_ELEMS) break;
    }
    if (ysize < 1) return cf_seterr("error: %s: ysize is %d; each sample needs at least one target", fn, ysize);
    if (sample > CF_DATA_MAX_ELEMS / n || (size_t)ysize > CF_DATA_MAX_ELEMS / n)
        return cf_seterr("error: %s: %zu samples are more than the limit of %zu floats", fn, n, CF_DATA_MAX_ELEMS);
    return 0;
}

cf_dataset *cf_dataset_from_arrays(const float *x, cf_shape xs, const float *y, int ysize, size_t n)
{
    if (check_arrays("cf_dataset_from_arrays", x, xs, y, ysize, n)) return NULL;
    size_t nx = n * shape_count(xs), ny = n * (size_t)ysize;
    float *cx = cf_mem_alloc(nx * sizeof *cx, "cf_dataset_from_arrays: the data");
    float *cy = cx ? cf_mem_alloc(ny * sizeof *cy, "cf_dataset_from_arrays: the targets") : NULL;
    if (!cy) {
        cf_mem_free(cx);
        return NULL;
    }
    memcpy(cx, x, nx * sizeof *cx);
    memcpy(cy, y, ny * sizeof *cy);
    return cf_dataset_adopt(cx, xs, cy, ysize, n, "arrays");
}

cf_dataset *cf_dataset_view_arrays(const float *x, cf_shape xs, const float *y, int ysize, size_t n,
                                   const char *name)
{
    if (check_arrays("cf_dataset_view_arrays", x, xs, y, ysize, n)) return NULL;
    cf_dataset *d = cf_dataset_adopt(NULL, xs, NULL, ysize, n, name ? name : "arrays");
    if (!d) return NULL;
    d->x = (float *)x;   /* never written: every user of a dataset reads it */
    d->y = (float *)y;
    d->borrowed = 1;
    d->classes = count_classes(y, ysize, n);
    return d;
}

static void free_class_names(cf_dataset *d)
{
    for (int i = 0; i < d->nclass_names; i++) free(d->class_names[i]);
    free(d->class_names);
    d->class_names = NULL;
    d->nclass_names = 0;
}

int cf_dataset_set_class_names(cf_dataset *d, const char *const *names, int n)
{
    free_class_names(d);
    if (n <= 0) return 0;
    if (!(d->class_names = calloc((size_t)n, sizeof *d->class_names))) return cf_oom((size_t)n * sizeof(char *));
    for (int i = 0; i < n; i++, d->nclass_names++)
        if (!(d->class_names[i] = strdup(names[i]))) {
            free_class_names(d);
            return cf_oom(strlen(names[i]) + 1);
        }
    return 0;
}

int cf_dataset_class_names(const cf_dataset *d, const char *const **names)
{
    if (names) *names = d ? (const char *const *)d->class_names : NULL;
    return d ? d->nclass_names : 0;
}

int cf_dataset_set_about(cf_dataset *d, const char *about)
{
    free(d->about);
    d->about = NULL;
    if (about && !(d->about = strdup(about))) return cf_oom(strlen(about) + 1);
    return 0;
}

const char *cf_dataset_about(const cf_dataset *d) { return d ? d->about : NULL; }

void cf_dataset_free(cf_dataset *d)
{
    if (!d) return;
    free_class_names(d);
    free(d->about);
    cf_source_free(d->src);
    free(d->first_bad);
    if (!d->borrowed) {
        cf_mem_free(d->x);
        cf_mem_free(d->y);
    }
    cf_mem_free(d->colnames);
    free(d->name);
    free(d->target_name);
    free(d);
}

size_t cf_dataset_count(const cf_dataset *d) { return d ? d->n : 0; }
cf_shape cf_dataset_sample_shape(const cf_dataset *d) { return d ? d->shape : (cf_shape){0, {0}}; }
int cf_dataset_target_size(const cf_dataset *d) { return d ? d->ysize : 0; }
int cf_dataset_classes(const cf_dataset *d) { return d ? d->classes : 0; }
const float *cf_dataset_x(const cf_dataset *d) { return d ? d->x : NULL; }
int cf_dataset_streamed(const cf_dataset *d) { return d && d->src; }

size_t cf_dataset_skipped(const cf_dataset *d, size_t *ignored, const char **first_bad)
{
    if (ignored) *ignored = d ? d->ignored : 0;
    if (first_bad) *first_bad = d ? d->first_bad : NULL;
    return d ? d->bad : 0;
}

int cf_dataset_fetch(const cf_dataset *d, const size_t *idx, size_t b, float *x)
{
    if (d->src) return cf_source_fetch(d->src, idx, b, x);
    for (size_t i = 0; i < b; i++) memcpy(x + i * d->sample, d->x + idx[i] * d->sample, d->sample * sizeof *x);
    return 0;
}

int cf_dataset_plan(const cf_dataset *d, const size_t *order, size_t n, size_t batch)
{
    return d->src ? cf_source_plan(d->src, order, n, batch) : 0;
}

int cf_dataset_plan_range(const cf_dataset *d, size_t first, size_t n, size_t batch)
{
    if (!d->src || n == 0) return cf_dataset_plan(d, NULL, 0, batch);
    size_t *order = malloc(n * sizeof *order);
    if (!order) return cf_oom(n * sizeof *order);
    for (size_t i = 0; i < n; i++) order[i] = first + i;
    int rc = cf_source_plan(d->src, order, n, batch);
    free(order);
    return rc;
}

int cf_dataset_read(const cf_dataset *d, size_t first, size_t count, float *out)
{
    if (!d || (!out && count)) return cf_seterr("error: cf_dataset_read: no dataset or no place for the samples");
    if (first > d->n || count > d->n - first)
        return cf_seterr("error: %s: cf_dataset_read: samples %zu to %zu of %zu", d->name, first, first + count, d->n);
    if (!d->src) {
        if (count) memcpy(out, d->x + first * d->sample, count * d->sample * sizeof *out);
        return 0;
    }
    for (size_t i = 0; i < count; i++) {
        size_t k = first + i;
        if (cf_source_fetch(d->src, &k, 1, out + i * d->sample)) return -1;
    }
    return 0;
}
const float *cf_dataset_y(const cf_dataset *d) { return d ? d->y : NULL; }
const char *cf_dataset_name(const cf_dataset *d) { return d ? d->name : ""; }
const char *cf_dataset_target_name(const cf_dataset *d)
{
    return !d ? "" : d->target_name ? d->target_name : d->name;
}

int cf_dataset_column_count(const cf_dataset *d) { return d ? d->ncols : 0; }
int cf_dataset_label_column(const cf_dataset *d) { return d ? d->label_col : -1; }

const char *cf_dataset_column_name(const cf_dataset *d, int col)
{
    if (!d || !d->colnames || col < 0 || col >= d->ncols) return NULL;
    uint32_t off;
    memcpy(&off, d->colnames + (size_t)col * sizeof off, sizeof off);
    return d->colnames + off;
}

/* Give `to` the names and columns, and the vocabulary, of `from` (a part of it). 0 or -1. */
static int copy_columns(cf_dataset *to, const cf_dataset *from)
{
    to->sequential = from->sequential;
    to->nvocab = from->nvocab;
    memcpy(to->vocab, from->vocab, sizeof to->vocab);
    to->ncols = from->ncols;
    to->label_col = from->label_col;
    if (cf_dataset_set_class_names(to, (const char *const *)from->class_names, from->nclass_names)) return -1;
    if (from->target_name && !(to->target_name = strdup(from->target_name)))
        return cf_oom(strlen(from->target_name) + 1);
    if (!from->colnames) return 0;
    size_t bytes = cf_mem_size(from->colnames);
    if (!(to->colnames = cf_mem_alloc(bytes, "the column names"))) return -1;
    memcpy(to->colnames, from->colnames, bytes);
    return 0;
}

/* The samples of d where pick[i] == want, in their original order, as a new dataset. */
static cf_dataset *gather(const cf_dataset *d, const unsigned char *pick, int want, size_t count)
{
    size_t nx = d->src ? 0 : count * d->sample, ny = count * (size_t)d->ysize;
    char what[300];
    snprintf(what, sizeof what, "%s: a part of the data", d->name);
    float *x = nx ? cf_mem_alloc(nx * sizeof *x, what) : NULL, *y = x || !nx ? cf_mem_alloc(ny * sizeof *y, what) : NULL;
    cf_source *src = y && d->src ? cf_source_pick(d->src, pick, want) : NULL;   /* the files, not pixels */
    if (!y || (d->src && !src)) {
        cf_mem_free(x);
        cf_mem_free(y);
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < d->n; i++) {
        if (pick[i] != want) continue;
        if (x) memcpy(x + k * d->sample, d->x + i * d->sample, d->sample * sizeof *x);
        memcpy(y + k * (size_t)d->ysize, d->y + i * (size_t)d->ysize, (size_t)d->ysize * sizeof *y);
        k++;
    }
    cf_dataset *part = cf_dataset_adopt(x, d->shape, y, d->ysize, count, d->name);
    if (!part) cf_source_free(src);
    else part->src = src;
    if (part && copy_columns(part, d)) {
        cf_dataset_free(part);
        return NULL;
    }
    if (part && d->src) part->classes = d->classes;
    return part;
}

/* val: round(fraction * n) samples chosen by a partial Fisher-Yates shuffle seeded
 * with seed (sequential data: the last ones, so that both parts stay streams); train:
 * the rest. Both keep the original order of their samples. When the fraction rounds
 * to no samples, *val is NULL and train is a copy. */
int cf_dataset_split(const cf_dataset *d, double fraction, uint64_t seed, cf_dataset **train, cf_dataset **val)
{
    if (train) *train = NULL;
    if (val) *val = NULL;
    if (!d || !train || !val) return cf_seterr("error: cf_dataset_split: no dataset or no place for the result");
    if (!(fraction >= 0 && fraction < 1))
        return cf_seterr("error: %s: the validation fraction is %g; it must be at least 0 and less than 1",
                         d->name, fraction);
    size_t n = d->n, k = (size_t)llround(fraction * (double)n);
    if (k >= n)
        return cf_seterr("error: %s: a validation fraction of %g takes all %zu samples and leaves none to train on",
                         d->name, fraction, n);
    if (n > UINT32_MAX) return cf_seterr("error: %s: %zu samples are too many to split", d->name, n);
    unsigned char *pick = calloc(n, 1);
    uint32_t *perm = k ? malloc(n * sizeof *perm) : NULL;
    if (!pick || (k && !perm)) {
        free(pick);
        free(perm);
        return cf_oom(n * (1 + sizeof *perm));
    }
    if (k && d->sequential) {
        memset(pick + (n - k), 1, k);
    } else if (k) {
        cf_rng r;
        cf_rng_seed(&r, seed);
        for (size_t i = 0; i < n; i++) perm[i] = (uint32_t)i;
        for (size_t i = 0; i < k; i++) {
            size_t j = i + cf_rng_below(&r, (uint32_t)(n - i));
            uint32_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
            pick[perm[i]] = 1;
        }
    }
    free(perm);
    cf_dataset *tr = gather(d, pick, 0, n - k), *va = k && tr ? gather(d, pick, 1, k) : NULL;
    free(pick);
    if (!tr || (k && !va)) {
        cf_dataset_free(tr);
        return -1;
    }
    *train = tr;
    *val = va;
    return 0;
}

/* The samples of the kept classes, in their order, relabelled by the place of their
 * class in the list (see cflux.h). */
cf_dataset *cf_dataset_keep_classes(const cf_dataset *d, const int *classes, int n)
{
    if (!d || !classes || n < 1) return cf_seterr("error: cf_dataset_keep_classes: no dataset or no classes"), NULL;
    if (!d->classes)
        return cf_seterr("error: %s: the targets are not class labels: there are no classes to keep", d->name), NULL;
    int *place = malloc((size_t)d->classes * sizeof *place);
    unsigned char *pick = calloc(d->n, 1);
    cf_dataset *part = NULL;
    if (!place || !pick) {
        cf_oom(d->n + (size_t)d->classes * sizeof *place);
        goto out;
    }
    for (int c = 0; c < d->classes; c++) place[c] = -1;
    for (int i = 0; i < n; i++) {
        if (classes[i] < 0 || classes[i] >= d->classes) {
            cf_seterr("error: %s: there is no class %d to keep; the labels are 0 to %d", d->name, classes[i],
                      d->classes - 1);
            goto out;
        }
        if (place[classes[i]] >= 0) {
            cf_seterr("error: %s: class %d is given twice among the classes to keep", d->name, classes[i]);
            goto out;
        }
        place[classes[i]] = i;
    }
    size_t count = 0;
    for (size_t i = 0; i < d->n; i++) count += pick[i] = place[(int)d->y[i]] >= 0;
    if (!count) {
        cf_seterr("error: %s: no sample is of the classes to keep", d->name);
        goto out;
    }
    if (!(part = gather(d, pick, 1, count))) goto out;
    for (size_t i = 0; i < count; i++) part->y[i] = (float)place[(int)part->y[i]];
    part->classes = n;
    if (d->nclass_names) {
        const char **names = malloc((size_t)n * sizeof *names);
        for (int i = 0; names && i < n; i++) names[i] = classes[i] < d->nclass_names ? d->class_names[classes[i]] : "";
        if (!names || cf_dataset_set_class_names(part, names, n)) {
            if (!names) cf_oom((size_t)n * sizeof *names);
            cf_dataset_free(part);
            part = NULL;
        }
        free(names);
    }
out:
    free(place);
    free(pick);
    return part;
}
