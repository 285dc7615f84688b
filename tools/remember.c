/* remember.c - a checkpoint remembers how its data was read: the data spec, the label
 * column, the features, the classes kept (--only-classes) (the model's notes,
 * cf_model_set_info), beside what the library keeps itself (standardisation, class names, a text's vocabulary). eval and predict
 * read new data the same way unless told otherwise, and say when it lies far outside
 * the range of the training inputs (the note the library keeps); an option that contradicts
 * what the checkpoint says is an error naming both; and MODEL may be the checkpoint
 * itself, which holds the model's source. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

#define NOTE_DATA "data"
#define NOTE_LABEL "label"
#define NOTE_FEATURES "features"
#define NOTE_COLUMNS "columns"
#define NOTE_CLASSES "only_classes"
#define NOTE_RANGE "input_range"

/* The label column of d as given back to --label-col: its header name (a file to
 * evaluate may have its columns in another order), else its number (0-based); "" for
 * data without one. */
static const char *label_of(const cf_dataset *d, char *buf, size_t size)
{
    int col = cf_dataset_label_column(d);
    const char *name = col >= 0 ? cf_dataset_column_name(d, col) : NULL;
    if (col < 0) snprintf(buf, size, "%s", "");
    else if (name && *name) snprintf(buf, size, "%s", name);
    else snprintf(buf, size, "%d", col);
    return buf;
}

int data_remember(cf_model *m, const args *a, const cf_dataset *train)
{
    return cf_model_note_data(m, a->data ? a->data : "fashion-mnist", train, a->features, a->only_classes) ? fail()
                                                                                                         : 0;
}

void data_recall(const cf_model *m, const args *a, args *out, FILE *said)
{
    *out = *a;
    const char *data = cf_model_info(m, NOTE_DATA), *label = cf_model_info(m, NOTE_LABEL);
    const char *features = cf_model_info(m, NOTE_FEATURES);
    int told = 0;
    if (!a->data && data) {
        out->data = data;
        if (said) fprintf(said, "data: %s", data);
        told = 1;
    }
    /* the checkpoint's reading goes with its own data, or with other CSV data the user
       names */
    if (out->data && strncmp(out->data, "csv:", 4)) label = features = NULL;
    if (!a->label_col && label) {
        out->label_col = label;
        if (said) fprintf(said, "%slabel column %s", told ? ", " : "", label);
        told = 1;
    }
    if (!a->features && features) {
        out->features = features;
        if (said) fprintf(said, "%sfeatures %s", told ? ", " : "", features);
        told = 1;
    }
    const char *classes = cf_model_info(m, NOTE_CLASSES);
    if (!a->only_classes && classes && !a->data) {   /* the classes of the checkpoint's own data */
        out->only_classes = classes;
        if (said) fprintf(said, "%sonly the classes %s", told ? ", " : "", classes);
        told = 1;
    }
    if (said && told) fprintf(said, " (as the checkpoint remembers)\n");
}

/* A --features list as column numbers of d (names by its header, numbers as they are,
 * negative from the end): the count, or -1 when an item is neither. */
static int feature_columns(const cf_dataset *d, const char *list, int *cols, int max)
{
    int n = 0, ncols = cf_dataset_column_count(d);
    for (const char *p = list; *p && n < max; n++) {
        size_t len = strcspn(p, ",");
        char item[256];
        if (len >= sizeof item) return -1;
        memcpy(item, p, len);
        item[len] = 0;
        char *end;
        long v = strtol(item, &end, 10);
        cols[n] = -1;
        if (*item && !*end) cols[n] = (int)(v < 0 ? v + ncols : v);
        for (int c = 0; cols[n] < 0 && c < ncols; c++)
            if (cf_dataset_column_name(d, c) && !strcmp(cf_dataset_column_name(d, c), item)) cols[n] = c;
        if (cols[n] < 0) return -1;
        p += len + (p[len] == ',');
    }
    return n;
}

/* Do two --features lists name the same columns of d, in the same order? */
static int same_features(const cf_dataset *d, const char *a, const char *b)
{
    int ca[256], cb[256], na = feature_columns(d, a, ca, 256), nb = feature_columns(d, b, cb, 256);
    if (na < 0 || nb < 0) return !strcmp(a, b);
    return na == nb && !memcmp(ca, cb, (size_t)na * sizeof *ca);
}

int data_contradicts(const cf_model *m, const args *a, const cf_dataset *d, const char *ckpt)
{
    char have[256];
    const char *label = cf_model_info(m, NOTE_LABEL), *features = cf_model_info(m, NOTE_FEATURES);
    if (a->label_col && label && strcmp(label_of(d, have, sizeof have), label)) {
        int qh = strspn(have, "0123456789") != strlen(have), ql = strspn(label, "0123456789") != strlen(label);
        fprintf(stderr, "error: --label-col %s (column %s%s%s of %s) contradicts %s, which was trained with the label "
                        "in column %s%s%s; leave --label-col out to use the checkpoint's\n", a->label_col,
                qh ? "'" : "", *have ? have : "none", qh ? "'" : "", cf_dataset_name(d), ckpt, ql ? "'" : "", label,
                ql ? "'" : "");
        return 1;
    }
    if (a->features && features && !same_features(d, a->features, features)) {
        fprintf(stderr, "error: --features %s contradicts %s, which was trained on the features %s; leave --features "
                        "out to use the checkpoint's\n", a->features, ckpt, features);
        return 1;
    }
    if (a->features && !features && cf_model_info(m, NOTE_DATA)) {
        fprintf(stderr, "error: --features %s contradicts %s, which was trained on every column but the label; leave "
                        "--features out\n", a->features, ckpt);
        return 1;
    }
    return 0;
}

/* A note on stderr when d's inputs lie far outside the range of the training inputs
 * that m's checkpoint keeps (the note "input_range"): a model fed inputs of another
 * scale (raw 0..255 pixels for one trained on [0, 1], as cflux reads images) gives
 * confident nonsense and no error. "Far": some input more than one training span
 * (MAX - MIN) below the training MIN or above its MAX; a little outside is
 * extrapolation, not another scale. (Inputs within that reach span at most 3 training
 * spans, so a span 10 times the training's is always far.) Raw pixels, whose fix is to divide
 * by 255: training inputs within [0, 1] reaching past 0.5, inputs whole numbers within
 * [0, 255] reaching past 127. Compared as read, before the model's standardisation.
 * Nothing for a checkpoint without the note (an earlier cflux's), a training range of
 * one value, or inputs not in memory (an image folder's, [0, 1] by construction). */
void range_note(const cf_model *m, const cf_dataset *d, const char *ckpt)
{
    const char *note = cf_model_info(m, NOTE_RANGE);
    const float *x = cf_dataset_x(d);
    double a, b;
    if (!note || !x || sscanf(note, "%lf %lf", &a, &b) != 2 || !(b > a)) return;
    size_t n = cf_dataset_count(d) * cf_shape_count(cf_dataset_sample_shape(d));
    double lo = 0, hi = 0;
    int any = 0, whole = 1;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i])) continue;
        if (!any) lo = hi = x[i];
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
        whole &= x[i] == floorf(x[i]);
        any = 1;
    }
    double span = b - a;
    if (!any || (lo >= a - span && hi <= b + span)) return;
    const char *name = cf_dataset_name(d);
    if (a >= 0 && b <= 1 && b > 0.5 && whole && lo >= 0 && hi <= 255 && hi > 127)
        fprintf(stderr, "note: %s: the inputs range over [%g, %g], but %s was trained on [%g, %g]: divide them by "
                        "255, as cflux scales image pixels, or the model's outputs mean little\n", name, lo, hi, ckpt,
                a, b);
    else
        fprintf(stderr, "note: %s: the inputs range over [%g, %g], far outside [%g, %g], which %s was trained on: "
                        "scale them as its training data was, or the model's outputs mean little\n", name, lo, hi, a,
                b, ckpt);
}

int remembered_columns(const cf_model *m)
{
    const char *c = cf_model_info(m, NOTE_COLUMNS);
    return c ? atoi(c) : 0;
}

int is_weights_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char b[9];
    size_t n = f ? fread(b, 1, sizeof b, f) : 0;
    if (f) fclose(f);
    if (n != sizeof b || b[8] != '{') return 0;
    uint64_t len = 0;
    for (int i = 7; i >= 0; i--) len = len << 8 | b[i];
    return len >= 2 && len < ((uint64_t)1 << 32);   /* a safetensors header's length, then its JSON */
}

cf_model *load_model_and_weights(const args *a, const char *cmd, const char **params)
{
    const char *path = a->pos[0];
    *params = NULL;
    if (is_weights_file(path)) {
        if (a->params) {
            fprintf(stderr, "cflux %s: %s is a checkpoint (or parameter file) and holds the model: give it once, "
                            "without --params %s\n", cmd, path, a->params);
            return NULL;
        }
        cf_model *m = cf_model_load_trained(path);
        *params = path;
        if (!m) fail();
        return m;
    }
    if (!a->params) {
        fprintf(stderr, "cflux %s: needs --params CHECKPOINT (the trained weights), or the checkpoint alone in place "
                        "of MODEL\n", cmd);
        return NULL;
    }
    cf_model *m = cf_model_load(path);
    *params = a->params;
    if (!m || cf_model_load_params(m, a->params)) {
        fail();
        cf_model_free(m);
        return NULL;
    }
    return m;
}

int data_options_fit(const args *a, const char *data, const char *cmd)
{
    data = data ? data : "fashion-mnist";
    int csv = !strncmp(data, "csv:", 4), images = !strncmp(data, "images:", 7);
    const char *opt = !csv && a->label_col ? "--label-col" : !csv && a->features ? "--features"
                    : !images && a->skip_bad ? "--skip-bad" : !images && a->exact_size ? "--exact-size" : NULL;
    if (!opt) return 0;
    int columns = !strcmp(opt, "--label-col") || !strcmp(opt, "--features");
    fprintf(stderr, "cflux %s: %s is for %s, and --data %s is not\n", cmd, opt,
            columns ? "CSV data (csv:FILE)" : "image folders (images:DIR)", data);
    return 2;
}
